"""The study's Apache Kafka lines: which points each can run, the perf tools' output read back,
the tables' durability labels and ratios, the one-line skip without Kafka, and (marker ``kafka``)
a tiny study against the session's broker."""

from __future__ import annotations

import csv
import json

import pytest

from kstream.errors import KStreamError
from kstream.tools.perf import kafka_peer, kafka_tools, plan, report, study, study_kafka, study_systems
from kstream.tools.perf.study_points import NotApplicableError

# The last lines of Kafka 4.4.0's tools, as printed here (ProducerPerformance, ConsumerPerformance, EndToEndLatency).
PRODUCER_OUT = """\
2000 records sent, 1000.0 records/sec (0.10 MB/sec), 50.0 ms avg latency, 300.0 ms max latency.
20000 records sent, 16920.473773 records/sec (1.61 MB/sec), 120.85 ms avg latency, 886.00 ms max latency, \
105 ms 50th, 199 ms 95th, 230 ms 99th, 241 ms 99.9th.
"""
CONSUMER_OUT = """\
start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, \
fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-11-27 11:19:22:685, 2026-11-27 11:19:24:840, 1.9073, 0.8851, 20000, 9280.7425, 1802, 353, 5.4033, 56657.2238
"""
E2E_OUT = """\
0\t203.968331
Avg latency: 9.8261 ms
Percentiles: 50th = 7, 99th = 29, 99.9th = 203
"""
POINT = {"records": 2000, "record_size": 100, "partitions": 2, "acks": "1"}


def test_producer_performance_last_summary_line_is_the_figure():
    result = kafka_tools.parse_producer(PRODUCER_OUT, 100)
    assert result.records == 20000 and result.records_per_s == pytest.approx(16920.47, rel=1e-4)
    assert result.latency_ms == {"avg": 120.85, "max": 886.0, "p50": 105.0, "p95": 199.0, "p99": 230.0,
                                 "p99.9": 241.0}


def test_consumer_performance_is_timed_by_its_fetch_time():
    result = kafka_tools.parse_consumer(CONSUMER_OUT)
    assert result.records == 20000 and result.seconds == pytest.approx(0.353)
    assert result.record_size == 100 and result.config["rebalance_time_ms"] == 1802


def test_end_to_end_latency_lines():
    result = kafka_tools.parse_end_to_end(E2E_OUT, 500, 100)
    assert result.latency_ms == {"avg": 9.8261, "p50": 7.0, "p99": 29.0, "p99.9": 203.0}
    assert result.seconds == pytest.approx(500 * 9.8261 / 1000)


@pytest.mark.parametrize("parse", [lambda text: kafka_tools.parse_producer(text, 100), kafka_tools.parse_consumer,
                                   lambda text: kafka_tools.parse_end_to_end(text, 1, 1)])
def test_a_tool_output_without_its_summary_is_an_error_quoting_it(parse):
    with pytest.raises(KStreamError, match="printed no .*ends: Exception in thread main"):
        parse("Exception in thread main")


@pytest.mark.parametrize(("key", "run", "change", "reason"), [
    ("kafka", "produce", {"api": "batch"}, "fastest Kafka client on the same records"),
    ("kafka_fsync", "consume", {}, "a read fsyncs nothing"),
    ("kafka_tools", "pair", {}, "no producer-and-consumer-at-once"),
    ("kafka_tools", "consume", {"consumers": 2}, "ConsumerPerformance is one reader"),
    ("kafka", "produce", {"warm_up": True}, "cold line only"),
    ("kafka", "consume", {"max_poll_records": 500}, "kstream-only setting max_poll_records"),
    ("kafka_fsync", "produce", {"kafka": False}, "turns the Kafka lines off"),
    ("kafka_tools_fsync", "produce", {"kafka_tools": False}, "turns Kafka's perf tools off"),
])
def test_what_each_kafka_line_cannot_run(key, run, change, reason):
    with pytest.raises(NotApplicableError, match=reason):
        study_kafka.applicable(key, run, dict(POINT, **change))
    study_kafka.applicable("kafka", "produce", POINT)  # (and the plain point runs)


def test_replicas_need_three_brokers_and_only_then():
    assert study_kafka.brokers_needed([POINT, dict(POINT, replication_factor=2)]) == 3
    assert study_kafka.brokers_needed([POINT]) == 1


def test_without_kafka_the_study_says_so_in_one_line_and_goes_on(tmp_path, monkeypatch):
    monkeypatch.setenv(kafka_peer.KAFKA_LIB_ENV, str(tmp_path / "no-jars"))
    chosen = plan.parse({"defaults": {"records": 500, "record_size": 20, "partitions": 1, "repeats": 1,
                                      "tansu": False},
                         "scenario": [{"name": "p", "run": "produce", "vary": "acks", "values": ["1"]}]})
    lines: list[str] = []
    document = study.run(chosen, str(tmp_path / "out"), str(tmp_path / "work"), "test", lines.append)
    (said,) = [line for line in lines if "Kafka" in line]
    assert said == f"Apache Kafka peer skipped: {kafka_peer.missing()}"
    (point,) = document["scenarios"][0]["points"]
    assert point["kstream"]["records"] == 500
    assert point["skipped"]["kafka"].startswith("Apache Kafka peer: ")
    assert document["kafka"]["missing"]
    assert "Apache Kafka not measured" in (tmp_path / "out" / "results.md").read_text()


def _figure(rate, p50=1.0, p99=2.0):
    return {"records_per_s": rate, "mb_per_s": rate / 1e4, "latency_ms": {"p50": p50, "p99": p99}}


def test_tables_name_each_durability_and_compare_at_equal_durability():
    scenario = {"name": "s", "title": "S", "run": "produce", "vary": "api", "series": None, "notes": "",
                "points": []}
    record = {"x": "record", "line": None, "settings": dict(POINT, acks="all", api="record"), "skipped": {},
              "durability": {"kstream": "acks=all: fsync before ack (1 of 1 copies)"},
              "equal_durability": "kafka_fsync", "kstream": _figure(4e5), "kafka": _figure(8e5),
              "kafka_fsync": _figure(2e5), "kstream_to_kafka": 0.5, "kstream_to_kafka_fsync": 2.0}
    batch = {"x": "batch", "line": None, "settings": dict(POINT, acks="all", api="batch"),
             "skipped": {"kafka": "Arrow batches are kstream's own API"}, "durability": {},
             "equal_durability": "kafka_fsync", "kstream": _figure(4e6)}
    scenario["points"] = [batch, record]
    study._against_fastest_kafka(scenario["points"])
    assert batch["fastest_kafka"]["system"] == "kafka" and batch["kstream_to_fastest_kafka"] == 5.0
    document = {"command": "c", "started": "now", "machine": {"cpus": 2, "cpu_model": "m", "memory_gib": 1,
                                                              "python": "3", "pyarrow": "1", "kstream": "0",
                                                              "fdatasync_1mib_mb_per_s": 1},
                "kafka": {"version": "4.4.0", "heap": "512m"}, "scenarios": [scenario]}
    text = report.markdown(document)
    assert "confluent-kafka -> Kafka flush.messages=1 (fsync before ack, kstream's acks=all durability)" in text
    assert "confluent-kafka -> Kafka (default durability: acks from page cache)" in text
    assert "| record | acks=all: fsync before ack (1 of 1 copies) |" in text
    assert "2.00 (vs confluent-kafka -> Kafka flush.messages=1)" in text  # acks=all: against fsync
    assert "5.00 (vs confluent-kafka -> Kafka)" in text  # the batch row against the fastest
    assert "Apache Kafka 4.4.0" in text


def _kafka_plan(scenarios):
    return plan.parse({"defaults": {"records": 2000, "record_size": 100, "partitions": 2, "repeats": 1,
                                    "tansu": False}, "scenario": scenarios})


@pytest.mark.kafka
def test_a_tiny_study_against_kafka_at_both_durabilities(kafka_broker, tmp_path, monkeypatch):
    topic_configs = {}
    create_topic = kafka_peer.create_topic

    def recording_create_topic(bootstrap, name, partitions=1, replicas=1, config=None, timeout_s=30.0):
        topic_configs[name] = dict(config or {})
        create_topic(bootstrap, name, partitions, replicas, config, timeout_s)

    monkeypatch.setattr(kafka_peer, "create_topic", recording_create_topic)
    chosen = _kafka_plan([{"name": "acks", "run": "produce", "vary": "acks", "values": ["1", "all"]},
                          {"name": "read", "run": "consume", "vary": "consumers", "values": [1]}])
    out = tmp_path / "out"
    study.run(chosen, str(out), str(tmp_path / "work"), "test", lambda _line: None,
              kafka=study_kafka.KafkaPeers({1: kafka_broker}))
    document = json.loads((out / "study.json").read_text())
    acks, read = document["scenarios"]
    for point in acks["points"]:
        for key in ("kafka", "kafka_fsync", "kafka_tools", "kafka_tools_fsync"):
            assert point[key]["records"] == 2000, (key, point["skipped"])
    assert acks["points"][1]["equal_durability"] == "kafka_fsync"
    assert acks["points"][1]["kstream_to_kafka_fsync"] > 0
    assert read["points"][0]["kafka"]["records"] == 2000 and read["points"][0]["kafka_tools"]["records"] == 2000
    fsynced = {name for name, config in topic_configs.items() if config.get("flush.messages") == "1"}
    assert fsynced == {name for name in topic_configs if name.endswith("_fsync")} != set()
    rows = list(csv.DictReader((out / "study.csv").open()))
    assert {r["durability"] for r in rows if r["system"] == "kafka_fsync"} == {study_systems.KAFKA_FSYNC}
    assert "Kafka flush.messages=1 (fsync before ack" in (out / "results.md").read_text()
    assert (out / "acks.png").exists()


@pytest.mark.kafka
@pytest.mark.slow
def test_end_to_end_latency_against_kafka(kafka_broker, tmp_path):
    chosen = _kafka_plan([{"name": "lat", "run": "end_to_end", "vary": "acks", "values": ["all"],
                           "records": 300, "throughput": 1000}])
    document = study.run(chosen, str(tmp_path / "out"), str(tmp_path / "work"), "test", lambda _line: None,
                         kafka=study_kafka.KafkaPeers({1: kafka_broker}))
    (point,) = document["scenarios"][0]["points"]
    for key in ("kstream", "kafka", "kafka_fsync", "kafka_tools", "kafka_tools_fsync"):
        assert point[key]["latency_ms"]["p99"] >= point[key]["latency_ms"]["p50"] > 0, key
