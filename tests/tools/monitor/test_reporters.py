"""The Prometheus registry (parsed back with prometheus_client's parser) and the CSV reporter."""

import csv

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kstream.errors import ConfigError
from kstream.tools.monitor.csv_reporter import CsvReporter
from kstream.tools.monitor.metrics_topic import Sample
from kstream.tools.monitor.prometheus import registry

SAMPLES = (
    Sample(5000, "group", "lag", 8.0, topic="events", partition=0, group="g"),
    Sample(5000, "group", "lag", 0.0, topic="events", partition=1, group="g"),
    Sample(5000, "log", "log_dir_online", 1.0, labels={"log_dir": "0"}),
    Sample(5000, "log", "records_in_per_s", 2.5, topic="events"),
)


class FakeSampler:
    def __init__(self, latest, last_error=None):
        self.latest = tuple(latest)
        self.last_error = last_error


def parsed(samplers):
    text = generate_latest(registry(samplers)).decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_registry_exposes_every_sample_as_a_gauge_per_cluster():
    families = parsed({"a": FakeSampler(SAMPLES), "b": FakeSampler(SAMPLES[:1], "OSError: disk")})
    lag = {(s.labels["cluster"], s.labels["partition"]): s.value for s in families["kstream_lag"].samples}
    assert lag == {("a", "0"): 8.0, ("a", "1"): 0.0, ("b", "0"): 8.0}
    assert families["kstream_lag"].type == "gauge"
    (online,) = families["kstream_log_dir_online"].samples
    assert online.labels == {"cluster": "a", "topic": "", "partition": "", "group": "", "log_dir": "0"}
    (rate,) = families["kstream_records_in_per_s"].samples
    assert rate.labels["topic"] == "events" and rate.value == 2.5
    errors = {s.labels["cluster"]: s.value for s in families["kstream_sampler_error"].samples}
    assert errors == {"a": 0.0, "b": 1.0}
    rounds = families["kstream_sampler_last_round_timestamp_seconds"].samples
    assert {s.value for s in rounds} == {5.0}


def test_a_sampler_without_a_round_yet_exposes_only_its_status():
    families = parsed({"a": FakeSampler(())})
    assert set(families) == {"kstream_sampler_error", "kstream_sampler_last_round_timestamp_seconds"}


def test_csv_reporter_writes_one_file_per_metric(tmp_path):
    reporter = CsvReporter(str(tmp_path))
    reporter(SAMPLES)
    reporter.write(SAMPLES[:1])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "lag.csv", "log_dir_online.csv", "records_in_per_s.csv"]
    with open(tmp_path / "lag.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [["ts_ms", "topic", "partition", "group", "labels", "value"],
                    ["5000", "events", "0", "g", "{}", "8.0"],
                    ["5000", "events", "1", "g", "{}", "0.0"],
                    ["5000", "events", "0", "g", "{}", "8.0"]]
    with open(tmp_path / "log_dir_online.csv", newline="") as f:
        assert list(csv.reader(f))[1] == ["5000", "", "", "", '{"log_dir": "0"}', "1.0"]


def test_csv_files_roll_at_the_size_limit(tmp_path):
    reporter = CsvReporter(str(tmp_path), max_file_bytes=1024)
    for _ in range(100):  # 24-byte lines
        reporter.write(SAMPLES[:1])
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["lag.csv", "lag.csv.1"]
    assert (tmp_path / "lag.csv.1").stat().st_size >= 1024
    assert open(tmp_path / "lag.csv").readline().startswith("ts_ms,")


def test_csv_reporter_needs_an_existing_directory(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        CsvReporter(str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="max_file_bytes"):
        CsvReporter(str(tmp_path), max_file_bytes=1)
