"""Performance runs in the style of Kafka's producer/consumer perf tools.

``produce``, ``consume`` and ``end_to_end`` drive the public API and return a
:class:`PerfResult` (records/s, MB/s, latency percentiles); the CLI prints
a progress line while they run and a summary at the end, or JSON for the
benchmark harness (bench/).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import struct
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from kstream.consumer import Consumer
from kstream.errors import KStreamError
from kstream.message import OFFSET_BEGINNING, OFFSET_END, TopicPartition
from kstream.producer import Producer

Progress = Callable[[str], None]
_PROGRESS_INTERVAL_S = 5.0
_LATENCY_SAMPLES = 100_000  # bound on latency samples kept (reservoir)


@dataclass
class PerfResult:
    """Summary of one run. Latencies in milliseconds."""

    name: str
    records: int
    seconds: float
    record_size: int
    records_per_s: float = 0.0
    mb_per_s: float = 0.0
    latency_ms: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    def finish(self, latencies_ms: list[float] | np.ndarray) -> PerfResult:
        self.records_per_s = self.records / self.seconds if self.seconds else 0.0
        self.mb_per_s = self.records * self.record_size / self.seconds / 1e6 if self.seconds else 0.0
        if len(latencies_ms):
            values = np.asarray(latencies_ms, dtype=np.float64)
            self.latency_ms = {
                "avg": float(values.mean()), "max": float(values.max()),
                **{f"p{q:g}": float(np.percentile(values, q)) for q in (50, 95, 99, 99.9)},
            }
        return self

    def summary(self) -> str:
        text = (f"{self.records} records {self.name}, {self.records_per_s:,.1f} records/sec "
                f"({self.mb_per_s:.2f} MB/sec)")
        if self.latency_ms:
            lat = self.latency_ms
            text += (f", {lat['avg']:.2f} ms avg latency, {lat['max']:.2f} ms max latency, "
                     f"{lat['p50']:.2f} ms 50th, {lat['p95']:.2f} ms 95th, {lat['p99']:.2f} ms 99th, "
                     f"{lat['p99.9']:.2f} ms 99.9th")
        return text

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Reporter:
    """Prints a Kafka-style progress line every few seconds."""

    def __init__(self, progress: Progress | None, record_size: int):
        self.progress = progress
        self.record_size = record_size
        self.window_start = time.perf_counter()
        self.window_records = 0

    def add(self, records: int, window_latencies: list[float]) -> None:
        self.window_records += records
        if self.progress is None:
            return
        now = time.perf_counter()
        elapsed = now - self.window_start
        if elapsed < _PROGRESS_INTERVAL_S:
            return
        rate = self.window_records / elapsed
        line = f"{self.window_records} records, {rate:,.1f} records/sec ({rate * self.record_size / 1e6:.2f} MB/sec)"
        if window_latencies:
            line += f", {np.mean(window_latencies):.1f} ms avg latency, {max(window_latencies):.1f} ms max latency"
            window_latencies.clear()
        self.progress(line)
        self.window_start, self.window_records = now, 0


class _Throttle:
    """Keeps a loop at or under ``records_per_s`` (-1: unlimited)."""

    def __init__(self, records_per_s: float):
        self.rate = records_per_s
        self.start = time.perf_counter()

    def wait(self, done: int) -> None:
        if self.rate <= 0:
            return
        ahead = done / self.rate - (time.perf_counter() - self.start)
        if ahead > 0:
            time.sleep(ahead)


def produce(topic: str, num_records: int, record_size: int, producer_config: dict[str, Any],
            throughput: float = -1, api: str = "record", batch_records: int = 10_000,
            progress: Progress | None = None) -> PerfResult:
    """Produce ``num_records`` values of ``record_size`` bytes; latency = send to ack."""
    value = os.urandom(record_size)
    latencies: list[float] = []
    window: list[float] = []
    reporter = _Reporter(progress, record_size)
    throttle = _Throttle(throughput)
    sample_every = max(100, num_records // _LATENCY_SAMPLES)
    with Producer(producer_config) as producer:
        start = time.perf_counter()
        if api == "batch":
            table = pa.table({"value": pa.array([value] * batch_records, pa.binary())})
            sent = 0
            while sent < num_records:
                rows = min(batch_records, num_records - sent)
                t0 = time.perf_counter()
                producer.produce_batch(topic, table.slice(0, rows))
                latency = (time.perf_counter() - t0) * 1000
                latencies.append(latency)
                window.append(latency)
                sent += rows
                reporter.add(rows, window)
                throttle.wait(sent)
        else:
            failures: list[Any] = []

            def on_delivery(err: Any, msg: Any, sent_at: float = 0.0) -> None:
                if err is not None:
                    failures.append(err)
                    return
                latency = (time.perf_counter() - sent_at) * 1000
                latencies.append(latency)
                window.append(latency)

            for i in range(num_records):
                if i % sample_every == 0:
                    now = time.perf_counter()
                    producer.produce(topic, value,
                                     on_delivery=functools.partial(on_delivery, sent_at=now))
                else:
                    producer.produce(topic, value)
                if i % 1000 == 999:
                    producer.poll(0)
                    reporter.add(1000, window)
                    throttle.wait(i + 1)
            producer.flush()
            if failures:
                raise KStreamError(f"{len(failures)} sampled records failed: {failures[0]}")
        seconds = time.perf_counter() - start
    return PerfResult(f"sent ({api} API)", num_records, seconds, record_size,
                      config=dict(producer_config, api=api)).finish(latencies)


def consume(topic: str, num_records: int, consumer_config: dict[str, Any], api: str = "record",
            timeout_s: float = 10.0, progress: Progress | None = None) -> PerfResult:
    """Read ``num_records`` from the beginning of every partition of ``topic``."""
    received = 0
    bytes_seen = 0
    reporter = _Reporter(progress, 0)
    with _assigned_consumer(topic, consumer_config, OFFSET_BEGINNING) as consumer:
        start = time.perf_counter()
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
        seconds = time.perf_counter() - start
    size = bytes_seen // received if received else 0
    return PerfResult(f"consumed ({api} API)", received, seconds, size,
                      config=dict(consumer_config, api=api)).finish([])


class _assigned_consumer:  # noqa: N801 - used as a context manager
    def __init__(self, topic: str, config: dict[str, Any], offset: int):
        self.consumer = Consumer(config)
        info = self.consumer.cluster.topic(topic)
        self.consumer.assign([TopicPartition(topic, p, offset) for p in range(info.num_partitions)])

    def __enter__(self) -> Consumer:
        return self.consumer

    def __exit__(self, *exc: object) -> None:
        self.consumer.close()


_STAMP = struct.Struct("<q")


def _latency_consumer(topic: str, config: dict[str, Any], num_records: int,
                      ready: Any, results: Any) -> None:
    latencies: list[float] = []
    with _assigned_consumer(topic, config, OFFSET_END) as consumer:
        ready.set()
        while len(latencies) < num_records:
            message = consumer.poll(10.0)
            if message is None:
                break
            seen = time.time_ns()
            latencies.append((seen - _STAMP.unpack_from(message.value())[0]) / 1e6)
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
        padding = os.urandom(max(0, record_size - _STAMP.size))
        throttle = _Throttle(throughput)
        config = dict(producer_config)
        config.setdefault("linger.ms", 0)
        with Producer(config) as producer:
            start = time.perf_counter()
            for i in range(num_records):
                producer.produce(topic, _STAMP.pack(time.time_ns()) + padding)
                producer.poll(0)
                throttle.wait(i + 1)
            producer.flush()
        latencies = results.get(timeout=120)
        seconds = time.perf_counter() - start
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
