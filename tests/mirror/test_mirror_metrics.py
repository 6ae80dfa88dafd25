"""The mirror's Prometheus figures: the collector over a run's Progress, and a running
`kstream mirror --metrics-port` scraped over HTTP."""

from __future__ import annotations

import re
import signal
import urllib.request

import pytest
from prometheus_client import generate_latest
from tests.mirror.mirror_support import create_kafka_topic, produce_kafka, sample
from tests.mirror.test_mirror_cli import mirror_process

from kstream.mirror import metrics
from kstream.mirror.progress import Progress


def _value(text: str, name: str, **labels: str) -> float:
    """The sample of ``name`` whose labels include ``labels``."""
    for line in text.splitlines():
        match = re.fullmatch(rf"{name}\{{(.*)\}} (\S+)", line)
        if match and all(f'{k}="{v}"' in match.group(1) for k, v in labels.items()):
            return float(match.group(2))
    raise AssertionError(f"no sample {name} {labels} in:\n{text}")


def test_the_collector_reads_the_runs_progress_at_each_scrape():
    progress = Progress("m1")
    registry = metrics.registry(progress, "into-kstream")
    progress.ends.update({("t", 0): 100, ("t", 1): 40})
    progress.copied(("t", 0), 70, 70)
    progress.transactions += 1
    text = generate_latest(registry).decode()
    run = {"mirror": "m1", "direction": "into-kstream"}
    assert _value(text, "kstream_mirror_records_total", **run) == 70
    assert _value(text, "kstream_mirror_transactions_total", **run) == 1
    assert _value(text, "kstream_mirror_position", **run, topic="t", partition="0") == 70
    assert _value(text, "kstream_mirror_lag", **run, topic="t", partition="0") == 30
    assert _value(text, "kstream_mirror_lag", **run, topic="t", partition="1") == 40
    progress.copied(("t", 1), 40, 40)  # the next scrape sees the loop's progress
    text = generate_latest(registry).decode()
    assert _value(text, "kstream_mirror_records_total", **run) == 110
    assert _value(text, "kstream_mirror_lag", **run, topic="t", partition="1") == 0


@pytest.mark.kafka
def test_a_running_mirror_serves_its_figures_until_it_stops(kafka_broker, tmp_path, topic_name, mirror_name):
    create_kafka_topic(kafka_broker, topic_name, 2)
    produce_kafka(kafka_broker, topic_name, sample(2, 300))
    process = mirror_process("--from", f"kafka:{kafka_broker}", "--to", f"cluster:{tmp_path / 'c'}", "--topics",
                             topic_name, "--name", mirror_name, "--progress-interval", "0.1", "--metrics-port", "0")
    url = None
    for line in process.stderr:
        found = re.search(r"metrics on (http://\S+)", line)
        url = url or (found and found.group(1))
        if "lag " in line and f"{topic_name}[0]=0" in line and f"{topic_name}[1]=0" in line:
            break
    assert url, "the mirror did not say where its metrics are"
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    run = {"mirror": mirror_name, "direction": "into-kstream"}
    assert _value(text, "kstream_mirror_records_total", **run) == 300
    for p in (0, 1):
        assert _value(text, "kstream_mirror_lag", **run, topic=topic_name, partition=str(p)) == 0
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    with pytest.raises(OSError):  # the server stopped with the run
        urllib.request.urlopen(url, timeout=5)
