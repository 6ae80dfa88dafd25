"""ISR shrinks: the tracker on crafted rounds, and the sampler counting a real shrink (a log
dir taken offline drops the ISR of the partitions it held)."""

from kstream.admin import Admin, NewTopic
from kstream.log.cluster.cluster import Cluster
from kstream.tools.monitor.isr_shrinks import IsrShrinkTracker
from kstream.tools.monitor.sampler import Sampler

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)


def test_shrinks_are_decreases_between_rounds():
    tracker = IsrShrinkTracker(window_ms=10_000)
    assert tracker.shrinks(0).since_ms is None
    assert tracker.observe(1000, {A0: 3, A1: 2}) == []  # the first round: nothing to compare
    assert tracker.observe(2000, {A0: 2, A1: 2, B0: 1}) == [A0]  # b is new: no shrink
    assert tracker.observe(3000, {A0: 3, A1: 2, B0: 1}) == []  # an expansion is no shrink
    assert tracker.observe(4000, {A0: 1, A1: 1, B0: 1}) == [A0, A1]
    assert tracker.observe(5000, {A0: 1}) == []  # a and b's partitions gone: no shrink
    got = tracker.shrinks(5000)
    assert got.by_partition == {A0: 2, A1: 1} and got.total == 3 and got.since_ms == 1000


def test_the_window_forgets_old_shrinks():
    tracker = IsrShrinkTracker(window_ms=10_000)
    tracker.observe(0, {A0: 2})
    tracker.observe(1000, {A0: 1})
    tracker.observe(2000, {A0: 2})
    tracker.observe(12_000, {A0: 1})
    assert tracker.shrinks(12_000).by_partition == {A0: 1}  # the shrink at 1000 is out
    assert tracker.shrinks(12_000).since_ms == 2000
    assert tracker.shrinks(30_000).by_partition == {}


def test_bounded_number_of_events():
    tracker = IsrShrinkTracker(window_ms=10**9, max_events=3)
    tracker.observe(0, {(f"t{i}", 0): 2 for i in range(5)})
    assert len(tracker.observe(1, {(f"t{i}", 0): 1 for i in range(5)})) == 5
    assert tracker.shrinks(1).total == 3


def test_sampler_counts_a_shrink_when_a_log_dir_goes_offline(tmp_path):
    path = str(tmp_path / "c")
    with Admin({"cluster": path, "log.dirs": "d1,d2"}) as admin:
        admin.create_topics([NewTopic("r", 2, 2)])["r"].result()
    sampler = Sampler(path, interval_s=10, write=False, groups=False)
    first = {s.name: s.value for s in sampler.sample(now_ms=1000) if s.topic is None and s.group is None
             and not s.labels}
    assert first["isr_shrinks"] == 0
    cluster = Cluster.open(path)
    try:
        cluster.take_log_dir_offline(2)
    finally:
        cluster.close()
    second = sampler.sample(now_ms=2000)
    assert [s.value for s in second if s.name == "isr_shrinks"] == [2.0]  # both partitions had d2
    assert sampler.isr_shrinks.shrinks(2000).by_partition == {("r", 0): 1, ("r", 1): 1}
