"""Apache Kafka's own perf tools as a second Kafka line: run them, read their last lines.

``org.apache.kafka.tools.ProducerPerformance`` (kafka-producer-perf-test),
``ConsumerPerformance`` (kafka-consumer-perf-test) and ``EndToEndLatency``
(kafka-e2e-latency) come in the ``kafka-tools`` jar that ``make kafka``
resolves beside the broker (peers/kafka/pom.xml), so they run from the same
class path as :class:`~kstream.tools.perf.kafka_peer.KafkaPeer`'s JVMs. Each
run is one JVM; its summary line is parsed into a
:class:`~kstream.tools.perf.result.PerfResult` of the study's shape.

What each tool times, in its own words (not kstream's):

- ProducerPerformance: from its first ``send()`` to the last callback; the
  latency of every record from send to ack (whole milliseconds).
- ConsumerPerformance: ``fetch.time.ms``, the span of its fetching after the
  group join (the join itself is ``rebalance.time.ms`` and is left out).
- EndToEndLatency: one record at a time, each sent, acknowledged and read
  back before the next (so its pace is 1 / latency); percentiles in whole
  milliseconds.

The parsers are plain functions of the tool's output, so a changed output
format fails a unit test with the line it could not read.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kstream.errors import KStreamError
from kstream.tools.perf import payload
from kstream.tools.perf.kafka_peer import kafka_lib
from kstream.tools.perf.result import PerfResult

TOOLS_PACKAGE = "org.apache.kafka.tools"
TOOL_HEAP = "512m"
TOOL_TIMEOUT_S = 600.0
PAYLOAD_DELIMITER = "\n"
_PRODUCER_LINE = re.compile(
    r"(?P<records>\d+) records sent, (?P<rate>[\d.]+) records/sec \((?P<mb>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99.9th\.")
_CONSUMER_HEAD = "start.time, end.time, data.consumed.in.MB"
_E2E_AVG = re.compile(r"Avg latency: (?P<avg>[\d.]+) ms")
_E2E_PERCENTILES = re.compile(r"Percentiles: 50th = (?P<p50>\d+), 99th = (?P<p99>\d+), 99\.9th = (?P<p999>\d+)")


def tools_jar(lib: Path | None = None) -> Path | None:
    """The resolved ``kafka-tools`` jar, or None (then ``make kafka`` has not run, or its pom lacks it)."""
    jars = sorted((lib or kafka_lib()).joinpath("broker").glob("kafka-tools-[0-9]*.jar"))
    return jars[0] if jars else None


def _command(main_class: str, args: Sequence[str], lib: Path | None) -> list[str]:
    if tools_jar(lib) is None:
        raise KStreamError(f"no kafka-tools jar in {(lib or kafka_lib()) / 'broker'}: run `make kafka` "
                           "(peers/kafka/pom.xml pins kafka-tools beside the broker)")
    return ["java", f"-Xmx{TOOL_HEAP}", "-Djava.awt.headless=true",
            "-cp", str((lib or kafka_lib()) / "broker" / "*"), f"{TOOLS_PACKAGE}.{main_class}", *args]


def _run(commands: Sequence[list[str]]) -> list[str]:
    """Run the tool JVMs together; their stdouts (KStreamError with stderr's tail if one fails)."""
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for command in commands]
    outputs = []
    try:
        for process, command in zip(processes, commands, strict=True):
            out, err = process.communicate(timeout=TOOL_TIMEOUT_S)
            if process.returncode != 0:
                raise KStreamError(f"{command[command.index('-cp') + 2]} exited with {process.returncode}: "
                                   f"{err.strip()[-1500:] or out.strip()[-1500:]}")
            outputs.append(out)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    return outputs


def _properties(config: Mapping[str, Any]) -> list[str]:
    return [f"{key}={value}" for key, value in config.items()]


def producer_performance(bootstrap: str, topic: str, num_records: int, record_size: int,
                         producer_config: Mapping[str, Any], payload_kind: str = "random",
                         producers: int = 1, lib: Path | None = None) -> PerfResult:
    """``producers`` ProducerPerformance JVMs at once, each sending ``num_records``; their sum.

    ``payload_kind="text"`` hands the tool the study's text values as a payload
    file (it picks one at random per record), so compression sees the same
    bytes; otherwise the tool makes its own value (random capital letters,
    one value reused), as ``random`` does. The combined rate is the sum of
    the processes' records over the longest one's time (the tools report no
    clock to line up their starts).
    """
    with tempfile.TemporaryDirectory(prefix="kstream-kafka-tools-") as folder:
        if payload_kind == "text":
            values = payload.values("text", record_size)
            path = os.path.join(folder, "payload.txt")
            Path(path).write_bytes(PAYLOAD_DELIMITER.encode().join(values))
            source = ["--payload-file", path, "--payload-delimiter", PAYLOAD_DELIMITER]
        else:
            source = ["--record-size", str(record_size)]
        args = ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(num_records),
                "--throughput", "-1", *source, "--command-property", *_properties(producer_config)]
        outputs = _run([_command("ProducerPerformance", args, lib)] * producers)
    results = [parse_producer(out, record_size) for out in outputs]
    records = sum(r.records for r in results)
    seconds = max(r.seconds for r in results)
    combined = PerfResult("sent (Kafka's ProducerPerformance)", records, seconds, record_size,
                          clients=producers, config=dict(producer_config, payload=payload_kind,
                                                         tool="ProducerPerformance"))
    combined.finish([])
    combined.latency_ms = max((r.latency_ms for r in results), key=lambda lat: lat["p99"])
    if producers > 1:
        combined.config["per_client_records_per_s"] = [round(r.records_per_s, 1) for r in results]
    return combined


def parse_producer(output: str, record_size: int) -> PerfResult:
    """ProducerPerformance's last summary line (``N records sent, R records/sec (M MB/sec), ...``)."""
    found = list(_PRODUCER_LINE.finditer(output))
    if not found:
        raise KStreamError(f"ProducerPerformance printed no summary line; its output ends: {output.strip()[-500:]}")
    line = found[-1]
    records, rate = int(line["records"]), float(line["rate"])
    result = PerfResult("sent (Kafka's ProducerPerformance)", records, records / rate if rate else 0.0,
                        record_size).finish([])
    result.latency_ms = {"avg": float(line["avg"]), "max": float(line["max"]), "p50": float(line["p50"]),
                         "p95": float(line["p95"]), "p99": float(line["p99"]), "p99.9": float(line["p999"])}
    return result


def consumer_performance(bootstrap: str, topic: str, num_records: int, consumer_config: Mapping[str, Any],
                         timeout_ms: int = 15_000, lib: Path | None = None) -> PerfResult:
    """One ConsumerPerformance JVM reading ``num_records`` from the beginning of ``topic``."""
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(num_records),
            "--timeout", str(timeout_ms), "--group", f"kstream-study-{time.monotonic_ns()}"]
    if consumer_config:
        args += ["--command-property", *_properties(consumer_config)]
    (output,) = _run([_command("ConsumerPerformance", args, lib)])
    result = parse_consumer(output)
    if result.records < num_records:
        raise KStreamError(f"ConsumerPerformance read {result.records} of {num_records} records of {topic}")
    return result


def parse_consumer(output: str) -> PerfResult:
    """ConsumerPerformance's CSV-like stats line: records and bytes over ``fetch.time.ms``."""
    lines = output.strip().splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith(_CONSUMER_HEAD)]
    if not heads or heads[-1] + 1 >= len(lines):
        raise KStreamError(f"ConsumerPerformance printed no stats line; its output ends: {output.strip()[-500:]}")
    names = [name.strip() for name in lines[heads[-1]].split(",")]
    values = dict(zip(names, (v.strip() for v in lines[heads[-1] + 1].split(",")), strict=True))
    records = int(values["data.consumed.in.nMsg"])
    seconds = int(values["fetch.time.ms"]) / 1000
    megabytes = float(values["data.consumed.in.MB"])  # (the tool's MB is MiB)
    record_size = round(megabytes * 2**20 / records) if records else 0
    return PerfResult("consumed (Kafka's ConsumerPerformance)", records, seconds, record_size,
                      config={"tool": "ConsumerPerformance",
                              "rebalance_time_ms": int(values["rebalance.time.ms"])}).finish([])


def end_to_end_latency(bootstrap: str, topic: str, num_records: int, acks: str, record_size: int,
                       lib: Path | None = None) -> PerfResult:
    """One EndToEndLatency JVM: ``num_records`` round trips, one record at a time."""
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(num_records),
            "--producer-acks", acks, "--record-size", str(record_size)]
    started = time.monotonic()
    (output,) = _run([_command("EndToEndLatency", args, lib)])
    result = parse_end_to_end(output, num_records, record_size)
    result.config["jvm_seconds"] = round(time.monotonic() - started, 1)
    result.config["acks"] = acks
    return result


def parse_end_to_end(output: str, num_records: int, record_size: int) -> PerfResult:
    """EndToEndLatency's ``Avg latency`` and ``Percentiles`` lines (whole milliseconds but the average)."""
    average, percentiles = _E2E_AVG.search(output), _E2E_PERCENTILES.search(output)
    if average is None or percentiles is None:
        raise KStreamError(f"EndToEndLatency printed no latency lines; its output ends: {output.strip()[-500:]}")
    avg = float(average["avg"])
    result = PerfResult("end-to-end (Kafka's EndToEndLatency)", num_records, num_records * avg / 1000,
                        record_size, config={"tool": "EndToEndLatency", "pace": "one record at a time"}).finish([])
    result.latency_ms = {"avg": avg, "p50": float(percentiles["p50"]), "p99": float(percentiles["p99"]),
                         "p99.9": float(percentiles["p999"])}
    return result
