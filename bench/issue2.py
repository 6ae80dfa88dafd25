"""Benchmarks of the embedded log (issue 2), side by side in one run.

    python -m bench.issue2 [--records 2000000] [--repeats 3] [--stored-gb 5] [--out DIR]

Every comparison alternates kstream and its baseline inside each repeat and
reports the median of the repeats, so both see the same machine load:

1. per record: kstream produce()/poll() vs confluent-kafka produce()/poll()
   against librdkafka's mock cluster and Tansu (both in-memory brokers);
   ``--only kafka``: the same against Apache Kafka 4.x (:func:`kafka_records`), at
   equal durability;
2. Arrow batches: produce_batch()/poll_batch() vs raw pyarrow IPC file
   append/read of the same batches, at the same durability;
3. produce throughput into a partition holding --stored-gb GB vs an empty one;
4. end-to-end latency at 1,000 records/s with acks=all (fsync);
5. produce_batch vs raw IPC write across record sizes (plotted).

Results go to OUT/issue2.json (one object per measurement) and a Markdown
summary on stdout; OUT/record_size.png is the record-size plot.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa

from bench import peers
from bench.harness import Row, median, medians, new_cluster, produce_batches, run_sections, timed, timed_seconds
from kstream import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from kstream.tools import perf
from kstream.tools.perf import kafka_peer


def poll_batches(cluster: str, topic: str, partitions: int, records: int, check_crcs: bool) -> None:
    consumer = Consumer({"cluster": cluster, "check.crcs": check_crcs})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen = 0
    while seen < records:
        batch = consumer.poll_batch(max_records=1 << 20, timeout=5)
        assert batch is not None, f"only {seen} of {records} records"
        seen += batch.num_rows
    consumer.close()


def raw_ipc_read_copy(path: str) -> None:
    """Read the IPC file through a regular file (copying every byte), as a reader
    that touches all data does; kstream's checksum also touches every byte."""
    with pa.OSFile(path, "rb") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            reader.get_batch(i)


def per_record(root: str, records: int, value_size: int, repeats: int) -> list[Row]:
    rows: dict[str, list[Row]] = {}
    mock_partitions = 128
    for _ in range(repeats):
        for acks in ("all", "1"):  # the acks=1 cluster stays for the consume run
            cluster = new_cluster(root, "records", {"t": 6})
            result = perf.produce("t", records, value_size, {"cluster": cluster, "acks": acks})
            rows.setdefault(f"kstream produce() acks={acks}, 6 partitions", []).append(
                {"name": f"kstream produce() acks={acks}", "records": records, "seconds": result.seconds,
                 "records_per_s": result.records_per_s, "mb_per_s": result.mb_per_s})
        result = perf.consume("t", records, {"cluster": cluster})
        rows.setdefault("kstream poll(), 6 partitions", []).append(
            {"name": "kstream poll()", "records": result.records, "seconds": result.seconds,
             "records_per_s": result.records_per_s, "mb_per_s": result.mb_per_s})
        with peers.mock_broker("bench", mock_partitions) as bootstrap:
            rows.setdefault("confluent produce() -> mock, 128 partitions", []).append(
                peers.confluent_produce(bootstrap, "bench", records, value_size, acks=1,
                                        config=peers.MOCK_PRODUCER_CONFIG))
            kept = peers.topic_record_count(bootstrap, "bench")
            rows.setdefault("confluent poll() <- mock", []).append(
                peers.confluent_consume(bootstrap, "bench", kept, config=peers.MOCK_CONSUMER_CONFIG))
            rows.setdefault("confluent consume(10000) <- mock (batched calls)", []).append(
                peers.confluent_consume(bootstrap, "bench", kept, batch_size=10_000,
                                        config=peers.MOCK_CONSUMER_CONFIG))
        if peers.tansu_available():
            with peers.tansu_broker("bench", 1) as bootstrap:
                rows.setdefault("confluent produce() -> Tansu, 1 partition", []).append(
                    peers.confluent_produce(bootstrap, "bench", records, value_size, acks=1))
                rows.setdefault("confluent poll() <- Tansu", []).append(
                    peers.confluent_consume(bootstrap, "bench", records))
        shutil.rmtree(cluster, ignore_errors=True)
    return medians(rows)


THIS_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KSTREAM_DURABILITY = {"1": "written to the page cache, not fsynced", "all": "fsynced before acknowledged"}
KAFKA_DURABILITY = {None: "Kafka's defaults: acknowledged from the page cache, fsync left to the OS",
                    1: "flush.messages=1: each append fsynced before it is acknowledged"}
KAFKA_RATIOS = (  # (label, kstream row, Kafka row, equal durability?)
    ("produce() acks=1 ÷ confluent produce() acks=1 -> Kafka (defaults)",
     "kstream produce() acks=1", "confluent produce() acks=1 -> Kafka (defaults)", True),
    ("produce() acks=1 ÷ confluent produce() acks=1 -> Kafka flush.messages=1",
     "kstream produce() acks=1", "confluent produce() acks=1 -> Kafka flush.messages=1", False),
    ("produce() acks=all ÷ confluent produce() acks=all -> Kafka flush.messages=1",
     "kstream produce() acks=all", "confluent produce() acks=all -> Kafka flush.messages=1", True),
    ("produce() acks=all ÷ confluent produce() acks=all -> Kafka (defaults)",
     "kstream produce() acks=all", "confluent produce() acks=all -> Kafka (defaults)", False),
    ("poll() ÷ confluent poll() <- Kafka", "kstream poll()", "confluent poll() <- Kafka (defaults)", True),
)


def _delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})  # (kept alive until the result is in)
    admin.delete_topics([topic])[topic].result(30)


def _kstream_cli(tree: str, args: list[str]) -> Row:
    """One ``kstream perf ...`` run of another checkout's kstream (``tree``/src), in a process of its own."""
    code = ("import os, sys, kstream\n"
            "src = os.path.realpath(sys.argv[1])\n"
            "if not os.path.realpath(kstream.__file__).startswith(src + os.sep):\n"
            "    sys.exit(f'kstream from {kstream.__file__}, not from {src}')\n"
            "from kstream.tools.cli import main\n"
            "sys.argv = ['kstream', *sys.argv[2:]]\n"
            "main()\n")
    src = os.path.join(tree, "src")
    done = subprocess.run([sys.executable, "-c", code, src, *args, "--json"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": src}, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench.issue2: kstream in {tree} failed: {done.stderr.strip()[-1500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _kstream_side(tree: str | None, name: str, root: str, what: str, acks: str, records: int, value_size: int,
                  partitions: int, cluster: str | None) -> tuple[Row, str]:
    """One kstream measurement (``what``: produce or poll) of this checkout (``tree`` None: in this
    process) or of the checkout ``tree``; the row and the cluster it wrote (poll reads ``cluster``)."""
    if what == "produce":
        cluster = new_cluster(root, f"kafka-records-{name.replace(' ', '-')}", {"t": partitions})
        if tree is None:
            result = perf.produce("t", records, value_size, {"cluster": cluster, "acks": acks})
            seconds = result.seconds
        else:
            seconds = _kstream_cli(tree, ["perf", "produce", "--cluster", cluster, "--topic", "t", "--num-records",
                                          str(records), "--record-size", str(value_size), "--acks", acks])["seconds"]
        return (timed_seconds(f"produce() acks={acks}", records, value_size, seconds)
                | {"durability": KSTREAM_DURABILITY[acks], "partitions": partitions}, cluster)
    assert cluster is not None
    if tree is None:
        result = perf.consume("t", records, {"cluster": cluster})
        got, seconds = result.records, result.seconds
    else:
        run = _kstream_cli(tree, ["perf", "consume", "--cluster", cluster, "--topic", "t", "--messages", str(records)])
        got, seconds = run["records"], run["seconds"]
    if got != records:
        raise SystemExit(f"bench.issue2: kstream poll() read {got} of {records} records")
    return timed_seconds("poll()", records, value_size, seconds) | {"partitions": partitions}, cluster


def kafka_records(root: str, records: int, value_size: int, repeats: int, partitions: int = 6,
                  before: str | None = None) -> list[Row]:
    """Per record against Apache Kafka: kstream produce()/poll() vs confluent-kafka produce()/poll()
    to two brokers started once (Kafka's default durability, and flush.messages=1), with acks=1
    and acks=all, each repeat alternating the sides on fresh topics. Rows carry each side's
    durability; ratio rows (kstream ÷ Kafka, median of the per-repeat ratios) follow.
    ``before``: another checkout whose kstream runs too, alternating with this one (each in a
    ``kstream perf`` process of its own then), for before/after figures beside Kafka's.
    Run it under ``flock /tmp/kstream-spark.lock`` where other JVMs share the machine."""
    reason = kafka_peer.missing()
    if reason:
        raise SystemExit(f"bench.issue2 --only kafka: {reason}")
    rows: dict[str, list[Row]] = {}
    brokers = {flush: kafka_peer.KafkaPeer(1, flush_messages=flush, directory=Path(root) / f"kafka-{flush}")
               for flush in KAFKA_DURABILITY}
    version = kafka_peer.kafka_version()
    # (row prefix, checkout: None = this one) -- with --before, both run as `kstream perf` processes
    sides = [("kstream", None)] if before is None else [("kstream before", before), ("kstream", THIS_CHECKOUT)]
    try:
        for peer in brokers.values():
            peer.start()
        for repeat in range(repeats):
            clusters: dict[str, str] = {}
            for acks in ("1", "all"):
                for prefix, tree in sides:
                    if acks == "all":  # the acks=1 cluster was read back; write anew
                        shutil.rmtree(clusters.pop(prefix), ignore_errors=True)
                    row, clusters[prefix] = _kstream_side(tree, prefix, root, "produce", acks, records, value_size,
                                                          partitions, None)
                    rows.setdefault(f"{prefix} produce() acks={acks}", []).append(row)
                consume_from = None
                for flush, peer in brokers.items():
                    topic = f"r{repeat}-{acks}-{uuid.uuid4().hex[:6]}"
                    kafka_peer.create_topic(peer.bootstrap, topic, partitions=partitions)
                    label = "Kafka (defaults)" if flush is None else f"Kafka flush.messages={flush}"
                    rows.setdefault(f"confluent produce() acks={acks} -> {label}", []).append(
                        peers.confluent_produce(peer.bootstrap, topic, records, value_size, acks=acks)
                        | {"durability": KAFKA_DURABILITY[flush], "partitions": partitions, "kafka": version})
                    if flush is None and acks == "1":
                        consume_from = topic
                    else:
                        _delete_topic(peer.bootstrap, topic)
                if acks == "1":  # read the acks=1 topics back on every side
                    for prefix, tree in sides:
                        row, _ = _kstream_side(tree, prefix, root, "poll", acks, records, value_size, partitions,
                                               clusters[prefix])
                        rows.setdefault(f"{prefix} poll()", []).append(row)
                    assert consume_from is not None
                    bootstrap = brokers[None].bootstrap
                    rows.setdefault("confluent poll() <- Kafka (defaults)", []).append(
                        peers.confluent_consume(bootstrap, consume_from, records) | {"kafka": version})
                    _delete_topic(bootstrap, consume_from)
            for cluster in clusters.values():
                shutil.rmtree(cluster, ignore_errors=True)
            print(f"# kafka records: repeat {repeat + 1}/{repeats} done", file=sys.stderr, flush=True)
    finally:
        for peer in brokers.values():
            peer.stop()
    result_rows = medians(rows)
    by_name = {row["name"]: row for row in result_rows}

    def ratio_row(label: str, mine: str, theirs: str, equal: bool | None) -> Row:
        per_repeat = [a["records_per_s"] / b["records_per_s"] for a, b in zip(rows[mine], rows[theirs], strict=True)]
        return {"name": label, "ratio": round(statistics.median(per_repeat), 3),
                "per_repeat": [round(r, 3) for r in per_repeat], "equal_durability": equal,
                "kstream": f"{by_name[mine]['records_per_s']:,.0f} records/s "
                           f"({by_name[mine].get('durability', 'read')})",
                "kafka": f"{by_name[theirs]['records_per_s']:,.0f} records/s "
                         f"({by_name[theirs].get('durability', 'read')})"}

    for prefix, _ in sides:
        for label, mine, theirs, equal in KAFKA_RATIOS:
            result_rows.append(ratio_row(label.replace("produce() ", f"{prefix} produce() ", 1)
                                         .replace("poll() ÷", f"{prefix} poll() ÷", 1),
                                         mine.replace("kstream", prefix, 1), theirs, equal))
    if before is not None:
        for mine in ("kstream produce() acks=1", "kstream produce() acks=all", "kstream poll()"):
            result_rows.append(ratio_row(f"{mine} ÷ {mine.replace('kstream', 'kstream before', 1)}", mine,
                                         mine.replace("kstream", "kstream before", 1), None))
    print(f"\nPer record, kstream vs confluent-kafka -> Apache Kafka {version}, {records:,} x {value_size} B, "
          f"{partitions} partitions, median of {repeats}:\n\n| ratio | kstream | Kafka | equal durability | "
          "per repeat |\n|---|---|---|---|---|")
    for row in result_rows:
        if "ratio" in row:
            same = {True: "yes", False: "no", None: "(before/after)"}[row["equal_durability"]]
            print(f"| {row['name']}: **{row['ratio']}** | {row['kstream']} | {row['kafka']} | "
                  f"{same} | {', '.join(map(str, row['per_repeat']))} |")
    print(flush=True)
    return result_rows


def arrow_batches(root: str, records: int, value_size: int, repeats: int) -> list[Row]:
    """Writes: each run writes into fresh files and deletes them after, for kstream
    and raw alike (on this VM, page cache that is recycled is much cheaper than
    fresh memory, so both must recycle the same way). Reads: one copy of the data
    in each form, read back in turn."""
    batches = peers.make_batches(records, value_size)
    rows: dict[str, list[Row]] = {}
    raw = os.path.join(root, "raw.arrow")
    for _ in range(repeats):
        for fsync, acks in ((False, "1"), (True, "all")):
            label = "fsync per batch" if fsync else "no fsync"
            rows.setdefault(f"raw IPC write, {label}", []).append(peers.raw_ipc_write(raw, batches, fsync))
            os.unlink(raw)
            cluster = new_cluster(root, "batches", {"t": 6})
            rows.setdefault(f"kstream produce_batch() acks={acks} ({label})", []).append(
                timed_seconds("produce_batch", records, value_size,
                              produce_batches(cluster, "t", batches, acks)))
            shutil.rmtree(cluster, ignore_errors=True)
    cluster = new_cluster(root, "reads", {"t": 6})
    produce_batches(cluster, "t", batches, "1")
    peers.raw_ipc_write(raw, batches, False)
    for _ in range(repeats):
        rows.setdefault("raw IPC read, mmap (data not touched)", []).append(peers.raw_ipc_read(raw))
        rows.setdefault("raw IPC read, OSFile (every byte copied)", []).append(
            timed("raw copy", records, value_size, lambda: raw_ipc_read_copy(raw)))
        for crc in (False, True):
            rows.setdefault(f"kstream poll_batch() check.crcs={str(crc).lower()}", []).append(
                timed("poll_batch", records, value_size,
                      lambda crc=crc: poll_batches(cluster, "t", 6, records, crc)))
    shutil.rmtree(cluster, ignore_errors=True)
    os.unlink(raw)
    return medians(rows)


def stored_volume(root: str, records: int, value_size: int, repeats: int, stored_gb: float) -> list[Row]:
    cluster = new_cluster(root, "volume", {"full": 1, "empty": 1})
    fill = peers.make_batches(200_000, 4000)  # ~0.8 GB of 4 KB values per pass
    written = 0
    with Producer({"cluster": cluster, "acks": "1"}) as producer:
        while written < stored_gb * 1e9:
            for batch in fill:
                producer.produce_batch("full", batch)
                written += batch.nbytes
    batches = peers.make_batches(records, value_size)
    rows: dict[str, list[Row]] = {}
    for _ in range(repeats):
        for topic, label in (("empty", "empty partition"), ("full", f"{stored_gb:g} GB already stored")):
            rows.setdefault(f"produce_batch() acks=1 into {label}", []).append(
                timed_seconds(label, records, value_size, produce_batches(cluster, topic, batches, "1")))
            result = perf.produce(topic, records // 4, value_size, {"cluster": cluster, "acks": "1"})
            rows.setdefault(f"produce() acks=1 into {label}", []).append(
                timed_seconds(label, records // 4, value_size, result.seconds))
    shutil.rmtree(cluster, ignore_errors=True)
    return [dict(median(runs), name=name, stored_bytes=written) for name, runs in rows.items()]


def latency(root: str, repeats: int, num_records: int, before: str | None = None) -> list[Row]:
    """End-to-end latency at 1,000 records/s, acks=all (:func:`kstream.tools.perf.end_to_end`).
    ``before``: another checkout's kstream runs too, alternating with this one in each repeat
    (each side then in a ``kstream perf end-to-end`` process of its own), for before/after rows
    and the after ÷ before ratios of the medians."""
    sides = [("", None)] if before is None else [("before: ", before), ("", THIS_CHECKOUT)]
    runs: dict[str, list[Row]] = {prefix: [] for prefix, _ in sides}
    for _ in range(repeats):
        for prefix, tree in sides:
            cluster = new_cluster(root, "latency", {"lat": 1})
            if tree is None:
                result = perf.end_to_end("lat", num_records, 100, {"cluster": cluster, "acks": "all"},
                                         {"cluster": cluster}, throughput=1000)
                latency_ms, seconds = result.latency_ms, result.seconds
            else:
                run = _kstream_cli(tree, ["perf", "end-to-end", "--cluster", cluster, "--topic", "lat",
                                          "--num-records", str(num_records), "--acks", "all"])
                latency_ms, seconds = run["latency_ms"], run["seconds"]
            # The rate the producer kept (the records over produce() to the consumer's last record):
            # below 1,000/s the latencies are of a slower stream than the row's name says.
            runs[prefix].append({**latency_ms, "kept_records_per_s": round(num_records / seconds)})
            shutil.rmtree(cluster, ignore_errors=True)
    rows: list[Row] = []
    for prefix, _ in sides:
        summary = {key: statistics.median(r[key] for r in runs[prefix]) for key in runs[prefix][0]}
        rows.append({"name": f"{prefix}end-to-end latency ms, acks=all (fsync), 1,000 records/s", **summary,
                     "runs": runs[prefix]})
    if before is not None:
        after, earlier = rows[1], rows[0]
        rows.append({"name": "end-to-end latency, after ÷ before (medians)",
                     **{key: round(after[key] / earlier[key], 3) for key in ("p50", "p99")}})
    return rows


def record_sizes(root: str, repeats: int, out: str) -> list[Row]:
    rows: list[Row] = []
    raw = os.path.join(root, "raw-size.arrow")
    for size in (10, 100, 1000, 10_000):
        records = min(2_000_000, 400_000_000 // size)
        batches = peers.make_batches(records, size)
        kstream_runs, raw_runs = [], []
        for _ in range(repeats):
            cluster = new_cluster(root, "sizes", {"t": 6})
            raw_runs.append(peers.raw_ipc_write(raw, batches, False))
            kstream_runs.append(timed_seconds("k", records, size, produce_batches(cluster, "t", batches, "1")))
            shutil.rmtree(cluster, ignore_errors=True)
        rows.append({"name": f"record size {size} B", "record_size": size,
                     "kstream_mb_per_s": median(kstream_runs)["mb_per_s"],
                     "raw_mb_per_s": median(raw_runs)["mb_per_s"]})
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return rows
    fig, ax = plt.subplots(figsize=(6, 3.5))
    sizes = [r["record_size"] for r in rows]
    ax.plot(sizes, [r["raw_mb_per_s"] for r in rows], "o-", label="raw Arrow IPC file write")
    ax.plot(sizes, [r["kstream_mb_per_s"] for r in rows], "s-", label="kstream produce_batch() acks=1")
    ax.set_xscale("log")
    ax.set_xlabel("record (value) size, bytes")
    ax.set_ylabel("MB/s of values")
    ax.set_title("Write throughput against record size (median of runs)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "record_size.png"), dpi=110)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stored-gb", type=float, default=5.0)
    parser.add_argument("--latency-records", type=int, default=10_000)
    parser.add_argument("--only", nargs="*", default=["records", "batches", "volume", "latency", "sizes"],
                        help="sections to run; 'kafka' (not in the default set: it starts two Apache Kafka "
                             "brokers, `make kafka`) is per record against Kafka")
    parser.add_argument("--before", metavar="CHECKOUT",
                        help="--only kafka or latency: also run this older checkout's kstream (its src/), "
                             "alternating with this one, for before/after figures (e.g. `git worktree add --detach "
                             "../before main`)")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    run_sections("issue2", args.out, args.only, {
        "records": lambda root: per_record(root, args.records, args.value_size, args.repeats),
        "kafka": lambda root: kafka_records(root, args.records, args.value_size, args.repeats,
                                            before=args.before),
        "batches": lambda root: arrow_batches(root, args.records, args.value_size, args.repeats),
        "volume": lambda root: stored_volume(root, args.records, args.value_size, args.repeats, args.stored_gb),
        "latency": lambda root: latency(root, args.repeats, args.latency_records, before=args.before),
        "sizes": lambda root: record_sizes(root, args.repeats, args.out),
    })

if __name__ == "__main__":
    main()
