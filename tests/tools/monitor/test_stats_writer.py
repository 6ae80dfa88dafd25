"""stats_cb → __kstream_metrics: a real consumer's statistics land as client_<field> samples."""

import json

import pytest

from kstream.client.consumer import Consumer
from kstream.client.producer import Producer
from kstream.errors import InvalidRecordError
from kstream.message import TopicPartition
from kstream.tools.monitor.history import series
from kstream.tools.monitor.stats_writer import metrics_stats_cb, stats_samples


def test_a_consumers_stats_are_written_and_read_back(cluster_path, make_topic):
    make_topic("events", 1)
    with Producer({"cluster": cluster_path}) as producer:
        for _ in range(10):
            producer.produce("events", b"v")
    documents = []
    consumer = Consumer({"cluster": cluster_path, "statistics.interval.ms": 1,
                         "stats_cb": metrics_stats_cb(cluster_path, group="g", then=documents.append)})
    try:
        consumer.assign([TopicPartition("events", 0, 0)])
        for _ in range(50):  # bounded: stats are served from poll once the interval passed
            consumer.poll(0.05)
            if documents and json.loads(documents[-1])["rxmsgs"] >= 1:
                break
    finally:
        consumer.close()
    assert documents
    written = series(cluster_path, "client_rxmsgs", group="g",
                     labels={"client_id": json.loads(documents[-1])["client_id"], "type": "consumer"},
                     since_ms=0, limit=1000)
    assert written and written[-1][1] == json.loads(documents[-1])["rxmsgs"]


def test_stats_samples_keep_known_fields_and_skip_unknown_ones():
    document = json.dumps({
        "client_id": "c1", "type": "consumer", "time": 1700, "rxmsgs": 3, "msg_cnt": 0,
        "topics": {"events": {"partitions": {
            "0": {"partition": 0, "consumer_lag": 7, "committed_offset": -1, "hi_offset": 10},
            "-1": {"partition": -1, "consumer_lag": 1}}}}})
    got = {(s.name, s.topic, s.partition): s.value for s in stats_samples(document, "g")}
    assert got == {("client_rxmsgs", None, None): 3.0, ("client_msg_cnt", None, None): 0.0,
                   ("client_consumer_lag", "events", 0): 7.0, ("client_hi_offset", "events", 0): 10.0}
    with pytest.raises(InvalidRecordError, match="statistics"):
        stats_samples("{not json")
