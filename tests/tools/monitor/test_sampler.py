"""The sampler's figures on a real cluster, its rates, writing (or not) into the metrics topic."""

import os

import pytest

from kstream.client.producer import Producer
from kstream.errors import ConfigError
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster
from kstream.tools.monitor.history import series
from kstream.tools.monitor.metrics_topic import TOPIC
from kstream.tools.monitor.sampler import Sampler

T0 = 1_700_000_000_000


@pytest.fixture
def cluster(cluster_path, make_topic):
    make_topic("events", 2)
    produce(cluster_path, 10)
    commit(cluster_path, 2)
    return cluster_path


def commit(cluster_path, offset):
    """Group g commits ``offset`` on events-0."""
    opened = Cluster.open(cluster_path)
    service = ConsumerGroups(opened)
    try:
        service.commit("g", {("events", 0): offset})
    finally:
        service.close()
        opened.close()


def produce(cluster_path, per_partition):
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(per_partition):
            for partition in (0, 1):
                producer.produce("events", b"v", partition=partition, timestamp=T0 + i * 1000)


def figures(samples, **where):
    return {(s.name, s.topic, s.partition, s.group): s.value for s in samples
            if all(getattr(s, k) == v for k, v in where.items())}


def listing(path):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(path) for f in files)


def test_one_round_reads_every_figure(cluster):
    sampler = Sampler(cluster, interval_s=10, write=False)
    samples = sampler.sample(now_ms=T0 + 60_000)
    got = figures(samples, topic="events", partition=0)
    assert got[("log_end_offset", "events", 0, None)] == 10
    assert got[("high_watermark", "events", 0, None)] == 10
    assert got[("last_stable_offset", "events", 0, None)] == 10
    assert got[("log_start_offset", "events", 0, None)] == 0
    assert got[("partition_bytes", "events", 0, None)] > 0
    assert got[("isr_size", "events", 0, None)] == got[("replicas", "events", 0, None)] == 1
    assert got[("committed_offset", "events", 0, "g")] == 2
    assert got[("lag", "events", 0, "g")] == 8
    assert got[("lag_seconds", "events", 0, "g")] == pytest.approx(58.0)  # record 2 is T0 + 2 s
    dirs = [s for s in samples if s.name == "log_dir_online"]
    assert dirs and all(s.value == 1.0 and "log_dir" in s.labels for s in dirs)
    assert not [s for s in samples if s.name.endswith("_per_s")]  # no rates in the first round
    assert sampler.latest == tuple(samples)


def test_rates_come_from_successive_rounds(cluster):
    sampler = Sampler(cluster, interval_s=10, write=False)
    sampler.sample(now_ms=T0)
    produce(cluster, 5)  # 10 more records over both partitions
    commit(cluster, 6)
    samples = sampler.sample(now_ms=T0 + 2000)
    rates = {(s.name, s.topic, s.group): s.value for s in samples if s.name.endswith("_per_s")}
    assert rates == {("records_in_per_s", "events", None): 5.0, ("records_out_per_s", "events", "g"): 2.0}


def test_read_only_sampler_writes_nothing(cluster):
    before = listing(cluster)
    Sampler(cluster, interval_s=10, write=False).sample()
    assert listing(cluster) == before


def test_writing_sampler_creates_the_topic_and_history_reads_it_back(cluster):
    sampler = Sampler(cluster, interval_s=10, write=True)
    try:
        sampler.sample(now_ms=T0 + 1000)
        sampler.sample(now_ms=T0 + 2000)
    finally:
        sampler.stop()
    opened = Cluster.open(cluster)
    try:
        assert TOPIC in opened.list_topics()
    finally:
        opened.close()
    assert series(cluster, "lag", topic="events", partition=0, group="g", since_ms=T0,
                  limit=10) == [(T0 + 1000, 8.0), (T0 + 2000, 8.0)]
    assert series(cluster, "records_in_per_s", topic="events", since_ms=T0, limit=10) == [(T0 + 2000, 0.0)]


def test_background_thread_samples_until_stopped(cluster):
    reported = []
    sampler = Sampler(cluster, interval_s=1, write=False, reporters=[reported.append])
    sampler.start()
    try:
        for _ in range(200):  # the first round runs at start; wait for it, bounded
            if reported:
                break
            sampler._stop.wait(0.05)
    finally:
        sampler.stop()
    assert reported and sampler.rounds >= 1 and sampler.last_error is None


@pytest.mark.parametrize("interval", [0, 0.5, 3601])
def test_interval_is_bounded(cluster, interval):
    with pytest.raises(ConfigError, match="interval"):
        Sampler(cluster, interval_s=interval, write=False)


def test_a_lost_high_watermark_is_sampled_as_the_engine_rebuilds_it(lost_hw):
    """A power cut took the published HW: the sampler shows the HW and LSO bounds() gives
    (it used to leave both out, and build the lock file's path by hand)."""
    path, expected = lost_hw
    got = figures(Sampler(path, interval_s=10, write=False).sample(now_ms=T0), topic="t", partition=0)
    assert (got[("log_start_offset", "t", 0, None)], got[("log_end_offset", "t", 0, None)],
            got[("high_watermark", "t", 0, None)], got[("last_stable_offset", "t", 0, None)]) == (
        expected.log_start_offset, expected.log_end_offset, expected.high_watermark,
        expected.last_stable_offset)
