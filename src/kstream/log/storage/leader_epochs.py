"""The leader epoch cache of one replica: which epoch started at which offset.

Kafka's ``leader-epoch-checkpoint`` (same file name and text layout, defined
in :mod:`kstream.log.storage.format`). It is derived data: every frame carries its
leader epoch, so a missing or unreadable file is rebuilt by scanning the
frame headers. A rejoining follower uses it to find where its log diverged
from the leader's (:func:`divergence_offset`) and truncates there: by leader
epoch, never by high watermark alone.

Durability: the file is written .tmp, fsync, rename, fsync the directory, and
an epoch is recorded before its first frame is written (as Kafka does). So
after a power loss the file lists every epoch the log holds; entries that
start at or past the log end (their frames were lost) are dropped on load.
The one exception is a replica's first entry when it has no file yet: that
write is not synced, because losing it loses the whole file, and a missing
or unreadable file is rebuilt from the frames.
"""

from __future__ import annotations

import bisect
import os

from kstream.log.storage import disk
from kstream.log.storage import format as fmt
from kstream.log.storage.frames import FrameWalk, pread_from

FILE_NAME = fmt.LEADER_EPOCH_CHECKPOINT_FILE


class LeaderEpochCache:
    """(epoch, start offset) entries, epochs and offsets increasing. Not thread-safe."""

    def __init__(self, directory: str, entries: list[tuple[int, int]] | None = None):
        self.directory = directory
        self.path = os.path.join(directory, FILE_NAME)
        self.entries: list[tuple[int, int]] = entries if entries is not None else []

    @classmethod
    def load(cls, directory: str, log_end_offset: int | None = None, rebuild: bool = True
             ) -> LeaderEpochCache:
        """Read the file; rebuild it from the frames when it is missing or unreadable.

        With ``log_end_offset``, entries starting at or after it are left out:
        they name epochs whose frames a crash or power loss took (Kafka truncates
        its cache to the log end the same way when it recovers a log).
        """
        path = os.path.join(directory, FILE_NAME)
        try:
            with open(path, "rb") as f:
                entries = fmt.parse_leader_epochs(f.read())
        except FileNotFoundError:
            entries = None
        if entries is None:
            if not rebuild:
                return cls(directory)
            cache = cls(directory, scan_epochs(directory))
            if cache.entries:  # nothing to record for an empty log; the next rebuild agrees
                cache.save()
            return cache
        if log_end_offset is not None:
            entries = [(epoch, start) for epoch, start in entries if start < log_end_offset]
        return cls(directory, entries)

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1][0] if self.entries else None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` begins at ``start_offset`` (no-op for a known epoch). An
        earlier epoch that starts there too never had a frame and is replaced (as in Kafka)."""
        if self.entries and epoch <= self.entries[-1][0]:
            return
        while self.entries and self.entries[-1][1] >= start_offset:
            self.entries.pop()
        self.entries.append((epoch, start_offset))
        # The first entry of a replica that has no file yet needs no fsync: if a power loss
        # takes it, the file is missing (or empty, or torn: unreadable) and the next load
        # rebuilds it from the frames that survived. Only a file that exists can be stale.
        # This keeps two fsyncs off the first write to every new partition (Kafka took its
        # checkpoint fsync off the produce path too, KAFKA-15046).
        self.save(durable=os.path.exists(self.path))

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's OffsetsForLeaderEpoch: (the largest epoch <= ``epoch`` this replica
        has, the offset where that epoch ended here). (-1, -1) if none."""
        epochs = [e for e, _ in self.entries]
        i = bisect.bisect_right(epochs, epoch) - 1
        if i < 0:
            return -1, -1
        end = self.entries[i + 1][1] if i + 1 < len(self.entries) else log_end_offset
        return self.entries[i][0], end

    def start_of_epoch_after(self, epoch: int) -> int | None:
        """Start offset of the first epoch greater than ``epoch`` here, if any."""
        for e, start in self.entries:
            if e > epoch:
                return start
        return None

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or after ``end_offset`` (the log was cut there)."""
        kept = [(e, s) for e, s in self.entries if s < end_offset]
        if kept != self.entries:
            self.entries = kept
            self.save()

    def save(self, durable: bool = True) -> None:
        """Write .tmp, fsync, rename it over the file, fsync the directory: durable on return.
        Epochs change rarely (a new leader, a truncation), so the fsyncs cost little, and a
        stale file after a power loss could hide an epoch the log holds. ``durable=False``
        (only where no file existed, see :meth:`assign`) skips both fsyncs."""
        tmp = self.path + fmt.TMP_SUFFIX
        raw = fmt.format_leader_epochs(self.entries)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            if os.write(fd, raw) != len(raw):
                raise OSError(f"short write to {tmp}")
            if durable:
                disk.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, self.path)
        if not durable:
            return
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            disk.fsync(fd)
        finally:
            os.close(fd)


def scan_epochs(directory: str) -> list[tuple[int, int]]:
    """Epoch entries rebuilt from the frame headers of a replica (header reads only; the
    walk of each segment stops at its first bad frame)."""
    entries: list[tuple[int, int]] = []
    for base in fmt.list_segment_bases(directory):
        path = os.path.join(directory, fmt.segment_file_name(base))
        with open(path, "rb") as f:
            for _, header in FrameWalk(pread_from(f.fileno()), os.fstat(f.fileno()).st_size):
                if not entries or header.leader_epoch > entries[-1][0]:
                    entries.append((header.leader_epoch, header.base_offset))
    return entries


def divergence_offset(leader: LeaderEpochCache, leader_end: int, follower: LeaderEpochCache,
                      follower_end: int) -> int:
    """Where the follower's log stops agreeing with the leader's (truncate it there)."""
    epoch = follower.latest_epoch
    if epoch is None:
        return min(follower_end, leader_end)
    leader_epoch, end = leader.end_offset_for(epoch, leader_end)
    if leader_epoch < 0:
        return 0  # the leader has none of the follower's epochs
    target = min(end, follower_end)
    if leader_epoch != epoch:
        # The follower's epochs after leader_epoch never happened on the leader.
        after = follower.start_of_epoch_after(leader_epoch)
        if after is not None:
            target = min(target, after)
    return target
