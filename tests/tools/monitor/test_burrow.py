"""Burrow's rules, one crafted commit history per status and per edge case."""

import pytest

from kstream.errors import ConfigError
from kstream.tools.monitor.burrow import Commit, PartitionStatus, evaluate, group_status

S = PartitionStatus


def history(*points, step_ms=60_000, start_ms=1_000_000):
    """Commits every ``step_ms``: each point is (offset, log end at the commit)."""
    return [Commit(start_ms + i * step_ms, offset, end) for i, (offset, end) in enumerate(points)]


def last_ts(commits):
    return commits[-1].ts_ms


def test_no_commits_is_ok_with_unknown_lag():
    result = evaluate([], now_ms=10, current_log_end=5)
    assert (result.status, result.lag, result.complete) == (S.OK, None, 0.0)


def test_keeping_up_is_ok():
    commits = history((10, 20), (25, 33), (40, 45), (52, 56))
    result = evaluate(commits, last_ts(commits) + 1000, current_log_end=60)
    assert result.status is S.OK and result.lag == 8


def test_current_lag_zero_is_ok_even_when_commits_stopped_long_ago():
    commits = history((10, 20), (10, 20))
    result = evaluate(commits, last_ts(commits) + 10**9, current_log_end=10)
    assert result.status is S.OK and result.lag == 0 and "caught up" in result.reason


def test_lag_zero_at_any_commit_in_the_window_is_ok():
    commits = history((10, 20), (20, 20), (20, 30), (20, 40))  # would be STOP/STALL-ish otherwise
    result = evaluate(commits, last_ts(commits) + 10**9, current_log_end=50)
    assert result.status is S.OK and "was 0" in result.reason


def test_rewind_beats_every_other_rule():
    commits = history((10, 20), (30, 40), (15, 50))
    result = evaluate(commits, last_ts(commits) + 10**9, current_log_end=60)  # also stopped
    assert result.status is S.REWIND and "from 30 to 15" in result.reason


def test_stop_when_idle_longer_than_the_window_span():
    commits = history((10, 20), (20, 35), (30, 40))  # span 120 s, lag 10 15 10
    assert evaluate(commits, last_ts(commits) + 120_000, current_log_end=60).status is S.OK
    result = evaluate(commits, last_ts(commits) + 120_001, current_log_end=60)
    assert result.status is S.STOP and "120001 ms" in result.reason


def test_stall_when_commits_keep_the_same_offset_with_lag():
    commits = history((10, 20), (10, 30), (10, 40))
    result = evaluate(commits, last_ts(commits) + 1000, current_log_end=50)
    assert result.status is S.STALL and result.lag == 40


def test_warn_when_offsets_move_but_lag_never_decreases():
    commits = history((10, 20), (12, 25), (14, 30), (16, 32))
    result = evaluate(commits, last_ts(commits) + 1000, current_log_end=40)
    assert result.status is S.WARN and "never decreased (10 -> 16)" in result.reason


def test_one_decrease_anywhere_is_ok():
    commits = history((10, 20), (12, 25), (20, 29), (22, 35))
    assert evaluate(commits, last_ts(commits) + 1000, current_log_end=40).status is S.OK


def test_single_commit_with_lag_is_stop_as_in_burrow():
    commits = history((10, 20))
    result = evaluate(commits, last_ts(commits) + 1, current_log_end=20)
    assert result.status is S.STOP and result.complete == pytest.approx(0.1)


def test_single_commit_evaluated_at_its_own_time_is_stall():
    commits = history((10, 20))
    assert evaluate(commits, last_ts(commits), current_log_end=20).status is S.STALL


def test_only_the_last_window_commits_count():
    # An old rewind and an old zero-lag commit fall out of a window of 3.
    commits = history((0, 0), (30, 40), (10, 40), (12, 45), (14, 50), (16, 55))
    result = evaluate(commits, last_ts(commits) + 1000, current_log_end=60, window=3)
    assert result.status is S.WARN and [c.offset for c in result.window] == [12, 14, 16]
    assert result.complete == 1.0
    assert evaluate(commits, last_ts(commits) + 1000, 60, window=6).status is S.OK


def test_commits_closer_than_min_distance_replace_the_previous_one():
    commits = [Commit(1000, 10, 20), Commit(1500, 12, 22), Commit(5000, 14, 30)]
    result = evaluate(commits, 5000, current_log_end=30, min_distance_ms=1000)
    assert [c.offset for c in result.window] == [12, 14]
    assert len(evaluate(commits, 5000, 30, min_distance_ms=0).window) == 3


@pytest.mark.parametrize("window", [0, -1, 1001, 2.5])
def test_bad_window_is_refused(window):
    with pytest.raises(ConfigError, match="window"):
        evaluate(history((1, 2)), 10**7, 2, window=window)


def test_commits_out_of_order_or_in_the_future_are_refused():
    with pytest.raises(ConfigError, match="commit order"):
        evaluate([Commit(2000, 1, 2), Commit(1000, 2, 3)], 3000, 3)
    with pytest.raises(ConfigError, match="after now"):
        evaluate([Commit(2000, 1, 2)], 1000, 3)


def test_group_status_is_the_worst_with_stop_stall_rewind_as_err():
    assert group_status([]) is S.OK
    assert group_status([S.OK, S.WARN, S.OK]) is S.WARN
    for bad in (S.STOP, S.STALL, S.REWIND, S.ERR):
        assert group_status([S.OK, bad, S.WARN]) is S.ERR
    assert [s.severity for s in S] == [1, 2, 3, 4, 5, 6]
