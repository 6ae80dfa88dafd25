"""Burrow's consumer lag evaluation: a partition's status from its recent commits.

A pure function of its inputs (no I/O, no clock): :func:`evaluate` takes the
last commits of one group on one partition, each with the log end at the
time of the commit, plus "now" and the current log end, and returns a
:class:`PartitionStatus`, the current lag and a sentence saying why.

The rules are Burrow's (linkedin/Burrow, ``core/internal/evaluator/caching.go``,
``calculatePartitionStatus``; the wiki page "Consumer Lag Evaluation Rules"),
applied in this order over the window of the last ``window`` commits, with
lag at a commit = log end at that commit - committed offset:

1. If the current lag is 0, or the lag was 0 at any commit of the window,
   the partition is **OK** (the consumer caught up at some point) and no
   other rule is checked.
2. If a committed offset is lower than the one before it: **REWIND**.
3. If the time since the last commit is greater than the time the window
   spans (last commit - first commit): **STOP** (the consumer stopped
   committing). With a single commit the span is 0, so any later "now" is
   STOP, as in Burrow.
4. If every commit of the window has the same offset: **STALL** (the
   consumer commits but does not move).
5. If the offsets move but the lag never decreases from one commit to the
   next: **WARN** (the consumer is too slow).
6. Else **OK**.

Burrow's storage keeps one commit per ``min-distance`` (default 1 s): a
commit closer than that to the previous one replaces it. ``min_distance_ms``
does the same here. A window with fewer than ``window`` commits is still
evaluated (Burrow's ``complete`` < 1 says so); :attr:`Evaluation.complete`
carries that fraction.

Burrow's status numbers order the statuses: NOTFOUND 0 < OK 1 < WARN 2 <
ERR 3 < STOP 4 < STALL 5 < REWIND 6 (``core/protocol/evaluator.go``). A
group's status is the worst partition status, except that a partition at
STOP, STALL or REWIND makes the group ERR (Burrow never gives a group those):
see :func:`group_status`.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kstream.errors import ConfigError

MAX_WINDOW = 1000
"""Largest ``window`` accepted: the evaluation is linear in it, and a chart of more
commits than that is a history read, not a status."""

DEFAULT_WINDOW = 10  # Burrow's default ``intervals``
DEFAULT_MIN_DISTANCE_MS = 1000  # Burrow's default ``min-distance`` (seconds there)


class PartitionStatus(enum.Enum):
    """Burrow's statuses; ``severity`` is Burrow's number (higher is worse)."""

    OK = "OK"
    WARN = "WARN"
    ERR = "ERR"
    STOP = "STOP"
    STALL = "STALL"
    REWIND = "REWIND"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


_SEVERITY = {PartitionStatus.OK: 1, PartitionStatus.WARN: 2, PartitionStatus.ERR: 3,
             PartitionStatus.STOP: 4, PartitionStatus.STALL: 5, PartitionStatus.REWIND: 6}


@dataclass(frozen=True)
class Commit:
    """One commit of a group on one partition, and the partition's log end at that time."""

    ts_ms: int
    offset: int
    log_end_offset: int

    @property
    def lag(self) -> int:
        """Records the group still had to read when it committed (never negative)."""
        return max(0, self.log_end_offset - self.offset)


@dataclass(frozen=True)
class Evaluation:
    """The status of one partition, the current lag, why, and how full the window was."""

    status: PartitionStatus
    lag: int | None  # None: the group never committed this partition
    reason: str
    complete: float  # commits in the window / window (Burrow's ``complete``)
    window: tuple[Commit, ...]  # the commits the rules looked at, oldest first


def evaluate(commits: Sequence[Commit], now_ms: int, current_log_end: int,
             window: int = DEFAULT_WINDOW, *, min_distance_ms: int = DEFAULT_MIN_DISTANCE_MS
             ) -> Evaluation:
    """Burrow's status of one partition (see the module docstring for the rules).

    Parameters
    ----------
    commits:
        The group's commits on the partition in commit order (oldest first); only
        the last ``window`` (after ``min_distance_ms`` merging) are used.
    now_ms:
        The evaluation time (ms since the epoch); not before the last commit.
    current_log_end:
        The partition's log end now; the current lag is it minus the last committed offset.
    window:
        How many commits the rules look at, 1..:data:`MAX_WINDOW`.
    min_distance_ms:
        A commit closer than this to the one kept before it replaces it (Burrow's
        ``min-distance``); 0 keeps every commit.

    Raises
    ------
    ConfigError
        ``window`` or ``min_distance_ms`` out of range, or commits whose timestamps go
        backwards or lie after ``now_ms``.
    """
    if not isinstance(window, int) or not 1 <= window <= MAX_WINDOW:
        raise ConfigError(f"window={window!r}: the number of commits to evaluate must be an "
                          f"integer from 1 to {MAX_WINDOW}")
    if min_distance_ms < 0:
        raise ConfigError(f"min_distance_ms={min_distance_ms}: must be 0 or more")
    kept = _merge_close(commits, min_distance_ms)[-window:]
    if kept and kept[-1].ts_ms > now_ms:
        raise ConfigError(f"a commit at {kept[-1].ts_ms} ms is after now ({now_ms} ms)")
    if not kept:
        return Evaluation(PartitionStatus.OK, None, "no commits: nothing to evaluate", 0.0, ())
    lag = max(0, current_log_end - kept[-1].offset)
    status, reason = _status(kept, lag, now_ms)
    return Evaluation(status, lag, reason, len(kept) / window, tuple(kept))


def _merge_close(commits: Sequence[Commit], min_distance_ms: int) -> list[Commit]:
    kept: list[Commit] = []
    for commit in commits:
        if kept and commit.ts_ms < kept[-1].ts_ms:
            raise ConfigError(f"commits must be in commit order: one at {commit.ts_ms} ms "
                              f"follows one at {kept[-1].ts_ms} ms")
        if kept and commit.ts_ms - kept[-1].ts_ms < min_distance_ms:
            kept[-1] = commit
        else:
            kept.append(commit)
    return kept


def _status(commits: list[Commit], lag: int, now_ms: int) -> tuple[PartitionStatus, str]:
    if lag == 0:
        return PartitionStatus.OK, "caught up: the current lag is 0"
    zero = next((c for c in commits if c.lag == 0), None)
    if zero is not None:
        return PartitionStatus.OK, f"the lag was 0 at the commit of offset {zero.offset} in the window"
    for before, after in itertools.pairwise(commits):
        if after.offset < before.offset:
            return (PartitionStatus.REWIND,
                    f"the committed offset went back from {before.offset} to {after.offset}")
    first, last = commits[0], commits[-1]
    span_ms, idle_ms = last.ts_ms - first.ts_ms, now_ms - last.ts_ms
    if idle_ms > span_ms:
        return (PartitionStatus.STOP,
                f"no commit for {idle_ms} ms, longer than the window's {len(commits)} commits "
                f"span ({span_ms} ms), with lag {lag}")
    if all(c.offset == first.offset for c in commits):
        return (PartitionStatus.STALL,
                f"{len(commits)} commits all at offset {first.offset}, with lag {lag}")
    if all(after.lag >= before.lag for before, after in itertools.pairwise(commits)):
        return (PartitionStatus.WARN,
                f"the offsets move but the lag never decreased ({first.lag} -> {last.lag})")
    return PartitionStatus.OK, f"the consumer is keeping up (lag {lag})"


def group_status(statuses: Iterable[PartitionStatus]) -> PartitionStatus:
    """A group's status: its worst partition's, with STOP/STALL/REWIND reported as ERR
    (Burrow's ``evaluateConsumerStatus``); OK for a group without partitions."""
    worst = PartitionStatus.OK
    for status in statuses:
        if status.severity > worst.severity:
            worst = status
    return PartitionStatus.ERR if worst.severity > PartitionStatus.ERR.severity else worst
