"""One producer and one consumer at once (the seeds' "producer and consumer" test).

The producer process writes ``num_records`` into a topic while a consumer
process, assigned at the log end before either starts, reads them back. The
figure is consumer-side: records it read per second, from the moment both
started to its last record, and the latency of each record from its
timestamp (set when the producer took it; milliseconds) to the consumer
seeing it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyarrow as pa

from kstream.message import OFFSET_END
from kstream.tools.perf import runs
from kstream.tools.perf.parallel import run_clients
from kstream.tools.perf.result import LATENCY_SAMPLES, PerfResult, timed_result


def pair(topic: str, num_records: int, record_size: int, producer_config: dict[str, Any],
         consumer_config: dict[str, Any], api: str = "record", timeout_s: float = 30.0) -> PerfResult:
    """Consumer-side result of one producer and one consumer process run together."""
    produced, consumed = run_clients([
        (runs.produce, {"topic": topic, "num_records": num_records, "record_size": record_size,
                        "producer_config": producer_config, "api": api}),
        (consume_live, {"topic": topic, "num_records": num_records, "consumer_config": consumer_config,
                        "api": api, "timeout_s": timeout_s}),
    ])
    started_at = min(produced.started_at, consumed.started_at)
    result = PerfResult("consumed while produced", consumed.records, consumed.ended_at - started_at,
                        record_size, config=dict(consumed.config, producer=produced.config),
                        started_at=started_at, ended_at=consumed.ended_at)
    result.config["producer_records_per_s"] = round(produced.records_per_s, 1)
    return result.finish(consumed.latency_samples if consumed.latency_samples is not None else [])


def consume_live(topic: str, num_records: int, consumer_config: dict[str, Any], api: str,
                 timeout_s: float, start_gate: runs.StartGate) -> PerfResult:
    """Read ``num_records`` new records (from the log end at assignment); latency per record."""
    received = 0
    every = max(1, num_records // LATENCY_SAMPLES)
    latencies: list[float] = []
    with runs.assigned_consumer(topic, consumer_config, OFFSET_END) as consumer:
        start_gate()
        started_at = time.monotonic()
        while received < num_records:
            if api == "batch":
                batch = consumer.poll_batch(timeout=timeout_s)
                if batch is None:
                    break
                stamps = batch.column("timestamp").cast(pa.int64()).to_numpy()[::every]
                latencies.extend((time.time() * 1000 - stamps).tolist())
                received += batch.num_rows
            else:
                message = consumer.poll(timeout_s)
                if message is None:
                    break
                if received % every == 0:
                    latencies.append(time.time() * 1000 - message.timestamp()[1])
                received += 1
        return timed_result("consumed", received, 0, started_at, np.asarray(latencies), dict(consumer_config, api=api))
