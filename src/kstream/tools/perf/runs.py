"""One client's perf run, in the style of Kafka's producer/consumer perf tools.

``produce``, ``consume`` and ``end_to_end`` drive the public API and return a
:class:`~kstream.tools.perf.result.PerfResult` (records/s, MB/s, latency
percentiles); the CLI prints a progress line while they run and a summary at
the end, or JSON for the benchmark harness (bench/). ``start_gate`` is called
once the client is built and before the clock starts, so several client
processes (:mod:`kstream.tools.perf.parallel`) start their timed parts together.
"""

from __future__ import annotations

import functools
import multiprocessing
import time
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from kstream.client.consumer import Consumer
from kstream.client.producer import Producer
from kstream.errors import KStreamError
from kstream.message import OFFSET_BEGINNING, OFFSET_END, TopicPartition
from kstream.tools.perf import payload
from kstream.tools.perf.result import (
    LATENCY_SAMPLES,
    STAMP,
    PerfResult,
    Progress,
    Reporter,
    Throttle,
    produce_stamped,
    timed_result,
)

StartGate = Callable[[], None]
MAX_BATCH_RECORDS = 1_000_000


def _no_gate() -> None:
    pass


def produce(topic: str, num_records: int, record_size: int, producer_config: dict[str, Any],
            throughput: float = -1, api: str = "record", batch_records: int | None = None,
            progress: Progress | None = None, payload_kind: str = "random", warm_up: bool = False,
            start_gate: StartGate = _no_gate) -> PerfResult:
    """Produce ``num_records`` values of ``record_size`` bytes; latency = send to ack.

    ``warm_up``: before the clock starts, send one record to every partition
    and flush (not counted), as a producer that has run a while has every
    partition open; otherwise the run includes the first write to each
    partition in this process (opening and recovering its files).

    ``api="record"``: one ``produce()`` per record (a sample of them timed to
    their delivery callback); ``api="batch"``: ``produce_batch()`` of Arrow
    tables of ``batch_records`` rows (default: about 1 MiB of values, at most
    10,000 rows, as the ceiling's batches), each call's duration a latency sample.
    The clock runs until ``flush()`` returns: every record acknowledged.
    """
    if batch_records is None:
        batch_records = max(1, min(10_000, (1 << 20) // max(1, record_size)))
    if not 1 <= batch_records <= MAX_BATCH_RECORDS:
        raise KStreamError(f"batch records {batch_records} must be 1-{MAX_BATCH_RECORDS}")
    pool = payload.values(payload_kind, record_size)
    latencies: list[float] = []
    window: list[float] = []
    reporter = Reporter(progress, record_size)
    sample_every = max(100, num_records // LATENCY_SAMPLES)
    config = dict(producer_config, api=api, payload=payload_kind)
    with Producer(producer_config) as producer:
        if api == "batch":
            column = pa.array([pool[i % len(pool)] for i in range(batch_records)], pa.binary())
            table = pa.table({"value": column})
        if warm_up:
            for partition in range(len(producer.list_topics(topic).topics[topic].partitions)):
                producer.produce(topic, pool[0], partition=partition)
            producer.flush()
            config["warm_up"] = True
        start_gate()
        throttle = Throttle(throughput)
        cpu_started = time.process_time()
        started_at = time.monotonic()
        if api == "batch":
            sent = 0
            while sent < num_records:
                rows = min(batch_records, num_records - sent)
                t0 = time.monotonic()
                producer.produce_batch(topic, table.slice(0, rows))
                latency = (time.monotonic() - t0) * 1000
                latencies.append(latency)
                window.append(latency)
                sent += rows
                reporter.add(rows, window)
                throttle.wait(sent)
            producer.flush()
        else:
            _produce_records(producer, topic, num_records, pool, sample_every, latencies, window,
                             reporter, throttle)
        result = timed_result(f"sent ({api} API)", num_records, record_size, started_at, latencies, config,
                              cpu_started)
    return result


def _produce_records(producer: Producer, topic: str, num_records: int, pool: list[bytes],
                     sample_every: int, latencies: list[float], window: list[float],
                     reporter: Reporter, throttle: Throttle) -> None:
    failures: list[Any] = []

    def on_delivery(err: Any, msg: Any, sent_at: float = 0.0) -> None:
        if err is not None:
            failures.append(err)
            return
        latency = (time.monotonic() - sent_at) * 1000
        latencies.append(latency)
        window.append(latency)

    send = producer.produce
    mask = len(pool) - 1  # pools are 1 or payload.POOL (a power of two) long
    for i in range(num_records):
        value = pool[i & mask]
        if i % sample_every == 0:
            send(topic, value, on_delivery=functools.partial(on_delivery, sent_at=time.monotonic()))
        else:
            send(topic, value)
        if i % 1000 == 999:
            producer.poll(0)
            reporter.add(1000, window)
            throttle.wait(i + 1)
    producer.flush()
    if failures:
        raise KStreamError(f"{len(failures)} sampled records failed: {failures[0]}")


def consume(topic: str, num_records: int | None, consumer_config: dict[str, Any], api: str = "record",
            timeout_s: float = 10.0, progress: Progress | None = None,
            partitions: Sequence[int] | None = None, start_gate: StartGate = _no_gate) -> PerfResult:
    """Read from the beginning of ``partitions`` (default: all of ``topic``).

    Stops after ``num_records``, or (``None``) at the end each partition had
    when the run started, or when nothing arrives for ``timeout_s``.
    """
    received = 0
    bytes_seen = 0
    reporter = Reporter(progress, 0)
    with assigned_consumer(topic, consumer_config, OFFSET_BEGINNING, partitions) as consumer:
        if num_records is None:
            num_records = sum(high - low for low, high in
                              (consumer.get_watermark_offsets(tp) for tp in consumer.assignment()))
        start_gate()
        cpu_started = time.process_time()
        started_at = time.monotonic()
        if api == "batch":
            while received < num_records:
                batch = consumer.poll_batch(timeout=timeout_s)
                if batch is None:
                    break
                received += batch.num_rows
                bytes_seen += batch.column("value").nbytes if "value" in batch.schema.names else 0
                reporter.add(batch.num_rows, [])
        else:
            poll = consumer.poll
            while received < num_records:
                message = poll(timeout_s)
                if message is None:
                    break
                bytes_seen += len(message.value())
                received += 1
        size = bytes_seen // received if received else 0
        config = dict(consumer_config, api=api)
        return timed_result(f"consumed ({api} API)", received, size, started_at, [], config, cpu_started)


class assigned_consumer:  # noqa: N801 - used as a context manager
    def __init__(self, topic: str, config: dict[str, Any], offset: int, partitions: Sequence[int] | None = None):
        self.consumer = Consumer(config)
        if partitions is None:
            partitions = range(self.consumer.cluster.topic(topic).num_partitions)
        self.consumer.assign([TopicPartition(topic, p, offset) for p in partitions])

    def __enter__(self) -> Consumer:
        return self.consumer

    def __exit__(self, *exc: object) -> None:
        self.consumer.close()




def _latency_consumer(topic: str, config: dict[str, Any], num_records: int,
                      ready: Any, results: Any) -> None:
    latencies: list[float] = []
    with assigned_consumer(topic, config, OFFSET_END) as consumer:
        ready.set()
        while len(latencies) < num_records:
            message = consumer.poll(10.0)
            if message is None:
                break
            seen = time.time_ns()
            latencies.append((seen - STAMP.unpack_from(message.value())[0]) / 1e6)
    results.put(latencies)


def end_to_end(topic: str, num_records: int, record_size: int, producer_config: dict[str, Any],
               consumer_config: dict[str, Any], throughput: float = 1000,
               progress: Progress | None = None) -> PerfResult:
    """Latency from produce() to a polling consumer in another process seeing the record.

    Each value starts with the send time (ns since the epoch); the consumer
    subtracts it from the time it sees the record.
    """
    context = multiprocessing.get_context("spawn")
    ready, results = context.Event(), context.Queue()
    child = context.Process(target=_latency_consumer,
                            args=(topic, consumer_config, num_records, ready, results))
    child.start()
    try:
        if not ready.wait(60):
            raise KStreamError("the latency consumer did not start within 60 s")
        config = dict(producer_config)
        config.setdefault("linger.ms", 0)
        with Producer(config) as producer:
            start = time.monotonic()
            produce_stamped(producer, topic, num_records, record_size, throughput)
            producer.flush()
        latencies = results.get(timeout=120)
        seconds = time.monotonic() - start
    finally:
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
    if len(latencies) < num_records:
        raise KStreamError(f"the consumer saw {len(latencies)} of {num_records} records")
    if progress is not None:
        progress(f"{len(latencies)} records seen by the consumer")
    return PerfResult("end-to-end", num_records, seconds, record_size,
                      config=dict(config, throughput=throughput)).finish(latencies)
