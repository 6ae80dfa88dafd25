"""Samples written to __kstream_metrics read back as series; the topic's retention bounds."""

import pytest

from kstream.errors import ConfigError, SchemaError
from kstream.log.cluster.cluster import Cluster
from kstream.tools.monitor.history import series, thin
from kstream.tools.monitor.metrics_topic import PARTITIONS, TOPIC, TOPIC_CONFIG, Sample, write_samples


@pytest.fixture
def cluster(cluster_path, make_topic):
    make_topic("events", 2)
    return cluster_path


def lag(ts, value, partition=0, group="g"):
    return Sample(ts, "group", "lag", value, topic="events", partition=partition, group=group)


def test_a_cluster_without_metrics_topic_has_no_history_and_reading_creates_nothing(cluster):
    assert series(cluster, "lag", topic="events", partition=0, group="g", since_ms=0, limit=10) == []
    opened = Cluster.open(cluster)
    try:
        assert TOPIC not in opened.list_topics()
    finally:
        opened.close()


def test_written_samples_read_back_per_series_and_range(cluster):
    write_samples(cluster, [lag(1000 * i, float(i)) for i in range(1, 6)]
                  + [lag(1000 * i, 100.0 + i, partition=1) for i in range(1, 6)]
                  + [lag(3000, 7.0, group="other"),
                     Sample(3000, "log", "log_end_offset", 42.0, topic="events", partition=0)])
    write_samples(cluster, [lag(6000, 6.0)])  # a second write appends
    got = series(cluster, "lag", topic="events", partition=0, group="g", since_ms=0, limit=100)
    assert got == [(1000 * i, float(i)) for i in range(1, 7)]
    assert series(cluster, "lag", topic="events", partition=1, group="g", since_ms=2000,
                  until_ms=3000, limit=100) == [(2000, 102.0), (3000, 103.0)]
    assert series(cluster, "lag", topic="events", partition=0, group="other", since_ms=0,
                  limit=100) == [(3000, 7.0)]
    assert series(cluster, "log_end_offset", topic="events", partition=0, since_ms=0,
                  limit=100) == [(3000, 42.0)]
    assert series(cluster, "lag", topic="events", partition=0, group="g", since_ms=10_000,
                  limit=100) == []
    thinned = series(cluster, "lag", topic="events", partition=0, group="g", since_ms=0, limit=3)
    assert thinned == [(1000, 1.0), (3000, 3.0), (6000, 6.0)]


def test_metrics_topic_is_typed_with_bounded_retention(cluster):
    write_samples(cluster, [lag(1, 1.0)])
    opened = Cluster.open(cluster)
    try:
        info = opened.topic(TOPIC)
        assert info.num_partitions == PARTITIONS
        config = opened.log_config(info)
        assert config.retention_ms == int(TOPIC_CONFIG["retention.ms"]) == 7 * 24 * 3600 * 1000
        assert 0 < config.retention_bytes <= 1 << 30
        assert config.segment_bytes < config.retention_bytes
        assert Cluster.topic_schema(info).names[:3] == ["ts_ms", "source", "name"]
    finally:
        opened.close()


def test_bad_samples_and_arguments_are_refused(cluster):
    with pytest.raises(ConfigError, match="metric name"):
        Sample(1, "log", "no_such_figure", 1.0)
    with pytest.raises(ConfigError, match="source"):
        Sample(1, "nowhere", "lag", 1.0)
    with pytest.raises(ConfigError, match="limit"):
        series(cluster, "lag", since_ms=0, limit=0)
    with pytest.raises(ConfigError, match="before"):
        series(cluster, "lag", since_ms=10, until_ms=5, limit=1)
    assert Sample(1, "client", "client_rxmsgs", 3.0).name == "client_rxmsgs"
    assert SchemaError  # the topic schema avoids reserved names (checked at creation above)


def test_thin_keeps_the_ends_and_the_count():
    points = [(i, float(i)) for i in range(10)]
    assert thin(points, 10) == points
    assert thin(points, 1) == [(9, 9.0)]
    assert [p[0] for p in thin(points, 4)] == [0, 3, 6, 9]


def test_a_scan_past_the_row_limit_is_refused_not_cut(cluster, monkeypatch):
    from kstream.errors import ResourceExhaustedError
    from kstream.tools.monitor import history

    write_samples(cluster, [lag(1000 + i, float(i)) for i in range(50)])
    monkeypatch.setattr(history, "MAX_SCAN_ROWS", 20)
    monkeypatch.setattr(history, "_POLL_RECORDS", 10)
    with pytest.raises(ResourceExhaustedError, match="shorter range"):
        series(cluster, "lag", topic="events", partition=0, group="g", since_ms=0, limit=100)
    assert len(series(cluster, "lag", topic="events", partition=0, group="g", since_ms=1040,
                      limit=100)) == 10  # a later start scans less
