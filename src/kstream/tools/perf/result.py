"""What a perf run reports: :class:`PerfResult`, and the helpers every run shares.

A result is records, bytes of value payload and the seconds they took, with
latency percentiles when the run measured latency. Results of several client
processes (``--producers N``, ``--consumers N``) are combined by
:func:`combine`: records and bytes are summed, and the time is the span from
the first client's start to the last client's end (what the seeds' "summed
over clients" means when the clients start together). Clock: ``time.monotonic``
(CLOCK_MONOTONIC, one clock for every process on the machine).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from kstream.tools.perf import payload

Progress = Callable[[str], None]
PROGRESS_INTERVAL_S = 5.0
LATENCY_SAMPLES = 100_000
"""Bound on the latency samples one client keeps (the rest are skipped evenly)."""
PERCENTILES = (50, 95, 99, 99.9)


@dataclass
class PerfResult:
    """Summary of one run (one client, or several combined). Latencies in milliseconds.

    ``record_size`` is the value size in bytes; MB/s counts value bytes only
    (no keys, framing or indexes), as Kafka's perf tools do, so it compares
    with a raw write of the same bytes. ``started_at``/``ended_at`` are
    ``time.monotonic()`` stamps; ``latency_samples`` (not serialized) lets
    :func:`combine` take percentiles over every client's samples.
    """

    name: str
    records: int
    seconds: float
    record_size: int
    records_per_s: float = 0.0
    mb_per_s: float = 0.0
    clients: int = 1
    latency_ms: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    started_at: float = 0.0
    ended_at: float = 0.0
    latency_samples: np.ndarray | None = field(default=None, repr=False, compare=False)

    def finish(self, latencies_ms: Sequence[float] | np.ndarray) -> PerfResult:
        """Fill in the rates and the latency percentiles of ``latencies_ms``."""
        self.records_per_s = self.records / self.seconds if self.seconds else 0.0
        self.mb_per_s = self.records * self.record_size / self.seconds / 1e6 if self.seconds else 0.0
        values = np.asarray(latencies_ms, dtype=np.float64)
        self.latency_samples = values
        if len(values):
            self.latency_ms = {
                "avg": float(values.mean()), "max": float(values.max()),
                **{f"p{q:g}": float(np.percentile(values, q)) for q in PERCENTILES},
            }
        return self

    def summary(self) -> str:
        """One line, worded like kafka-producer-perf-test's last line."""
        clients = f" by {self.clients} clients" if self.clients > 1 else ""
        text = (f"{self.records} records {self.name}{clients}, {self.records_per_s:,.1f} records/sec "
                f"({self.mb_per_s:.2f} MB/sec)")
        if self.latency_ms:
            lat = self.latency_ms
            text += (f", {lat['avg']:.2f} ms avg latency, {lat['max']:.2f} ms max latency, "
                     f"{lat['p50']:.2f} ms 50th, {lat['p95']:.2f} ms 95th, {lat['p99']:.2f} ms 99th, "
                     f"{lat['p99.9']:.2f} ms 99.9th")
        return text

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: everything but the raw latency samples."""
        out = asdict(self)
        out.pop("latency_samples")
        return out


def timed_result(name: str, records: int, record_size: int, started_at: float,
                 latencies_ms: Sequence[float] | np.ndarray, config: dict[str, Any],
                 cpu_started: float | None = None) -> PerfResult:
    """A result for a run that began at ``started_at`` (monotonic) and ends now.

    With ``cpu_started`` (``time.process_time()`` at the start), the process's
    CPU seconds over the run go into ``config["cpu_s"]``: CPU per record tells
    whether several clients can scale on the cores there are.
    """
    ended_at = time.monotonic()
    if cpu_started is not None:
        config = dict(config, cpu_s=round(time.process_time() - cpu_started, 3))
    result = PerfResult(name, records, ended_at - started_at, record_size, config=config,
                        started_at=started_at, ended_at=ended_at)
    return result.finish(latencies_ms)


def combine(results: Sequence[PerfResult]) -> PerfResult:
    """Several clients' results as one: summed records over the span of all of them."""
    assert results, "combine() needs at least one result"
    if len(results) == 1:
        return results[0]
    records = sum(r.records for r in results)
    value_bytes = sum(r.records * r.record_size for r in results)
    started_at = min(r.started_at for r in results)
    ended_at = max(r.ended_at for r in results)
    samples = [r.latency_samples for r in results if r.latency_samples is not None and len(r.latency_samples)]
    combined = PerfResult(results[0].name, records, ended_at - started_at,
                          value_bytes // records if records else results[0].record_size,
                          clients=len(results), config=dict(results[0].config),
                          started_at=started_at, ended_at=ended_at)
    combined.config["per_client_records_per_s"] = [round(r.records_per_s, 1) for r in results]
    cpu = [r.config["cpu_s"] for r in results if "cpu_s" in r.config]
    if len(cpu) == len(results):
        combined.config["cpu_s"] = round(sum(cpu), 3)
    return combined.finish(np.concatenate(samples) if samples else [])


class Reporter:
    """Prints a Kafka-style progress line every few seconds."""

    def __init__(self, progress: Progress | None, record_size: int):
        self.progress = progress
        self.record_size = record_size
        self.window_start = time.monotonic()
        self.window_records = 0

    def add(self, records: int, window_latencies: list[float]) -> None:
        self.window_records += records
        if self.progress is None:
            return
        now = time.monotonic()
        elapsed = now - self.window_start
        if elapsed < PROGRESS_INTERVAL_S:
            return
        rate = self.window_records / elapsed
        line = f"{self.window_records} records, {rate:,.1f} records/sec ({rate * self.record_size / 1e6:.2f} MB/sec)"
        if window_latencies:
            line += f", {np.mean(window_latencies):.1f} ms avg latency, {max(window_latencies):.1f} ms max latency"
            window_latencies.clear()
        self.progress(line)
        self.window_start, self.window_records = now, 0


class Throttle:
    """Keeps a loop at or under ``records_per_s`` (-1: unlimited)."""

    def __init__(self, records_per_s: float):
        self.rate = records_per_s
        self.start = time.monotonic()

    def wait(self, done: int) -> None:
        if self.rate <= 0:
            return
        ahead = done / self.rate - (time.monotonic() - self.start)
        if ahead > 0:
            time.sleep(ahead)


STAMP = struct.Struct("<q")
"""The send time (ns since the epoch) an end-to-end run puts at the start of every value."""


def produce_stamped(producer: Any, topic: str, num_records: int, record_size: int, throughput: float) -> None:
    """The end-to-end runs' producer loop (kstream's or confluent-kafka's Producer): each value
    the send time then padding to ``record_size``, ``poll(0)`` after each, ``throughput`` records/s."""
    padding = payload.values("random", max(0, record_size - STAMP.size))[0]
    throttle = Throttle(throughput)
    for i in range(num_records):
        producer.produce(topic, STAMP.pack(time.time_ns()) + padding)
        producer.poll(0)
        throttle.wait(i + 1)

