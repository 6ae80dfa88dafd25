"""log.cleaner.io.max.bytes.per.second: the cleaner's I/O throttle (issue 25)."""

from __future__ import annotations

import pytest
from cleaner_helpers import make_compacted, polled, produce

from kstream.errors import ConfigError
from kstream.log.cluster import compaction
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage.cleaner.throttle import UNLIMITED, IoThrottle
from kstream.log.storage.log_config import LogConfig


class FakeClock:
    """A clock that moves only when slept on (or when told work took time)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.mark.parametrize("chunks", [[1000] * 50, [1, 70_000, 3, 9_000, 17], [123_456]])
def test_the_throttle_holds_n_bytes_to_at_least_n_over_limit_seconds(chunks):
    clock = FakeClock()
    throttle = IoThrottle(10_000.0, clock=clock, sleep=clock.sleep)
    for n in chunks:
        throttle.spent(n)
    total = sum(chunks)
    assert throttle.bytes == total
    assert clock.now - 100.0 >= total / 10_000.0 - 1e-9
    assert clock.now - 100.0 == pytest.approx(total / 10_000.0)  # and no longer than needed


def test_the_throttle_does_not_sleep_when_the_work_itself_was_slower_than_the_limit():
    clock = FakeClock()
    throttle = IoThrottle(1000.0, clock=clock, sleep=clock.sleep)
    clock.now += 5.0  # 5 s of work for 2,000 bytes: 400 B/s, under the limit
    throttle.spent(2000)
    assert clock.sleeps == []
    throttle.spent(4000)  # 6,000 bytes are due at 6 s: sleep the 1 s missing
    assert clock.sleeps == [pytest.approx(1.0)]


def test_unlimited_never_sleeps_and_a_limit_of_zero_is_refused():
    clock = FakeClock()
    throttle = IoThrottle(UNLIMITED, clock=clock, sleep=clock.sleep)
    throttle.spent(1 << 40)
    assert clock.sleeps == []
    with pytest.raises(ValueError, match="above 0"):
        IoThrottle(0.0)


def test_the_option_is_a_cluster_option_with_kafkas_unlimited_default_and_a_minimum():
    assert LogConfig.from_options({}, {}).cleaner_io_max_bytes_per_second == UNLIMITED
    config = LogConfig.from_options({}, {"log.cleaner.io.max.bytes.per.second": "1048576"})
    assert config.cleaner_io_max_bytes_per_second == 1048576.0
    for bad in ("0", "-5", "fast"):
        with pytest.raises(ConfigError, match="log.cleaner.io.max.bytes.per.second"):
            LogConfig.from_options({}, {"log.cleaner.io.max.bytes.per.second": bad})


def test_a_throttled_clean_sleeps_only_outside_the_partition_lock_and_swaps_without_sleeping(
        cluster_path, monkeypatch):
    """A clean of two replicas under a throttle set on the cluster: it sleeps (while planning and
    building) to hold every byte it read and wrote to the limit, never while holding the
    partition lock, and the swap (under the lock) comes after the last sleep."""
    limit = 2000.0
    Cluster.open(cluster_path, {"log.cleaner.io.max.bytes.per.second": str(limit), "log.dirs": "a,b"},
                 create=True).close()
    make_compacted(cluster_path, replicas=2)
    produce(cluster_path, [(b"k%d" % (i % 5), b"v%d" % i) for i in range(60)])
    before = polled(cluster_path)

    clock = FakeClock()
    events: list[str] = []
    made: list[IoThrottle] = []
    opened = Cluster.open(cluster_path)
    handle = opened.partition("t", 0)

    def sleep(seconds: float) -> None:
        assert not handle.lock._thread_lock.locked(), "the cleaner slept holding the partition lock"
        events.append("sleep")
        clock.sleep(seconds)

    def throttle_from_config(limit_given: float) -> IoThrottle:
        made.append(IoThrottle(limit_given, clock=clock, sleep=sleep))
        return made[-1]

    real_swap = compaction.swap_built

    def swap(built) -> None:
        assert handle.lock._thread_lock.locked()
        events.append("swap")
        real_swap(built)

    monkeypatch.setattr(compaction, "IoThrottle", throttle_from_config)
    monkeypatch.setattr(compaction, "swap_built", swap)
    try:
        done = compaction.clean_partition(handle, typed=False, force=True)
    finally:
        handle.close()
        opened.close()
    assert done.cleaned and done.records_removed > 0
    [throttle] = made
    assert throttle.limit == limit  # the cluster's option
    assert throttle.bytes > 2 * done.bytes_before  # both replicas read and written, plus the plan
    assert clock.now - 100.0 >= throttle.bytes / limit - 1e-9
    assert events.count("swap") == 2 and "sleep" in events
    assert "sleep" not in events[events.index("swap"):]
    latest = {key: value for _, key, value in before}
    assert {key: value for _, key, value in polled(cluster_path)} == latest
