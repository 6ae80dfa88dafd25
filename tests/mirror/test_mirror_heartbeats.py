"""A real mirror's heartbeats, as the console reads them (docs/MIRROR.md "Running it",
docs/CONSOLE.md "Mirrors"): running with its positions while it copies, then stopped or failed."""

from __future__ import annotations

import json
import threading
import time

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient
from tests.mirror.mirror_support import NOW_MS, create_kafka_topic, produce_kafka, sample
from tests.mirror.test_into_kafka import make_kstream_topic, produce_kstream

from kstream import Admin, NewTopic
from kstream.mirror import MirrorError, MirrorOptions, parse_endpoint
from kstream.mirror.into_kafka import IntoKafka
from kstream.mirror.into_kstream import IntoKstream
from kstream.mirror.kstream_side import KstreamSide
from kstream.mirror.status import read_statuses
from kstream.tools.web.app import create_app
from kstream.tools.web.clusters import ClusterRef, check_clusters

pytestmark = pytest.mark.kafka
WAIT_S = 30  # a condition not met by then fails the test


def wait_for(condition, what):
    deadline = time.monotonic() + WAIT_S
    while not (found := condition()):
        assert time.monotonic() < deadline, f"not within {WAIT_S}s: {what}"
        time.sleep(0.05)
    return found


def console_json(cluster):
    app = create_app(check_clusters([ClusterRef("main", cluster)]), read_only=True)
    with TestClient(app) as client:
        return client.get("/c/main/api/mirrors").json()["mirrors"]


def test_a_continuous_mirror_into_kafka_heartbeats_its_positions_then_says_stopped(
        kafka_broker, tmp_path, topic_name, mirror_name):
    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 2)
    produce_kstream(cluster, topic_name, sample(2, 20))
    options = MirrorOptions(parse_endpoint(f"cluster:{cluster}"), parse_endpoint(f"kafka:{kafka_broker}"), mirror_name,
                            topics=(topic_name,), poll_timeout_s=0.1, progress_interval_s=0.1)
    mirror, stop = IntoKafka(options), threading.Event()
    thread = threading.Thread(target=mirror.run, args=(stop,))
    thread.start()
    try:
        running = wait_for(lambda: [s for s in read_statuses(cluster, 0) if s.records == 20], "20 records reported")[0]
        [shown] = console_json(cluster)
    finally:
        stop.set()
        thread.join(WAIT_S)
    assert not thread.is_alive()
    assert (running.state, running.direction, running.mirror, running.topics) == (
        "running", "into-kafka", mirror_name, (topic_name,))
    assert [(p.partition, p.source_position, p.source_end, p.target_position, p.lag) for p in running.partitions] == [
        (0, 10, 10, 10, 0), (1, 10, 10, 10, 0)]  # a new Kafka topic: the copy's next offset is 10 there too
    assert (shown["mirror"], shown["shown_state"], shown["total_lag"]) == (mirror_name, "running", 0)
    [stopped] = read_statuses(cluster, 0)
    assert (stopped.state, stopped.records, stopped.run) == ("stopped", 20, running.run)


def test_a_mirror_into_kstream_reports_the_kstream_offsets_it_copied_to(kafka_broker, tmp_path, topic_name,
                                                                        mirror_name):
    create_kafka_topic(kafka_broker, topic_name, 2)
    produce_kafka(kafka_broker, topic_name, sample(2, 40))
    cluster = str(tmp_path / "c")
    options = MirrorOptions(parse_endpoint(f"kafka:{kafka_broker}"), parse_endpoint(f"cluster:{cluster}"), mirror_name,
                            topics=(topic_name,), until_end=True, poll_timeout_s=0.1, chunk_records=8)
    IntoKstream(options).run()

    [status] = read_statuses(cluster, 0)
    side = KstreamSide(cluster)
    try:
        committed = {tp: offset for tp, (offset, _) in side.group_offsets(options.group).items()}
    finally:
        side.close()
    assert (status.state, status.direction, status.records) == ("stopped", "into-kstream", 40)
    assert {(topic_name, p.partition): p.target_position for p in status.partitions} == committed
    assert [(p.source_position, p.source_end, p.lag) for p in status.partitions] == [(20, 20, 0), (20, 20, 0)]


def test_a_mirror_that_fails_mid_copy_is_reported_failed_with_its_error(kafka_broker, tmp_path, topic_name,
                                                                         mirror_name):
    create_kafka_topic(kafka_broker, topic_name, 1)
    produce_kafka(kafka_broker, topic_name, [(0, None, json.dumps({"x": 1}).encode(), (), NOW_MS),
                                             (0, None, b"not json", (), NOW_MS)])
    cluster = str(tmp_path / "c")
    with Admin({"cluster": cluster}) as admin:
        admin.create_topics([NewTopic(topic_name, 1, schema=pa.schema([("x", pa.int64())]))])[topic_name].result()
    options = MirrorOptions(parse_endpoint(f"kafka:{kafka_broker}"), parse_endpoint(f"cluster:{cluster}"), mirror_name,
                            topics=(topic_name,), until_end=True, poll_timeout_s=0.1)
    with pytest.raises(MirrorError, match="offset 1"):
        IntoKstream(options).run()
    [status] = read_statuses(cluster, 0)
    assert status.state == "failed" and "offset 1" in status.error and status.error.startswith("MirrorError: ")
    assert console_json(cluster)[0]["shown_state"] == "failed"
