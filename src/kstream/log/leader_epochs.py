"""The leader epoch cache of one replica: which epoch started at which offset.

Kafka's ``leader-epoch-checkpoint`` (same file name and text layout: a
version line, a count line, then ``epoch start_offset`` lines). It is derived
data: every frame carries its leader epoch, so a missing file is rebuilt by
scanning the frame headers. A rejoining follower uses it to find where its
log diverged from the leader's (:func:`divergence_offset`) and truncates
there: by leader epoch, never by high watermark alone.
"""

from __future__ import annotations

import bisect
import os

from kstream.log import format as fmt

FILE_NAME = "leader-epoch-checkpoint"
_VERSION = 0


class LeaderEpochCache:
    """(epoch, start offset) entries, epochs and offsets increasing. Not thread-safe."""

    def __init__(self, directory: str, entries: list[tuple[int, int]] | None = None):
        self.directory = directory
        self.path = os.path.join(directory, FILE_NAME)
        self.entries: list[tuple[int, int]] = entries if entries is not None else []

    @classmethod
    def load(cls, directory: str, rebuild: bool = True) -> LeaderEpochCache:
        """Read the file; rebuild it from the frames when it is missing or unreadable."""
        path = os.path.join(directory, FILE_NAME)
        try:
            with open(path, encoding="ascii") as f:
                lines = f.read().split("\n")
            count = int(lines[1])
            entries = [(int(a), int(b)) for a, b in (line.split() for line in lines[2:2 + count])]
            return cls(directory, entries)
        except (FileNotFoundError, ValueError, IndexError):
            if not rebuild:
                return cls(directory)
            cache = cls(directory, scan_epochs(directory))
            cache.save()
            return cache

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1][0] if self.entries else None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` begins at ``start_offset`` (no-op for a known epoch)."""
        if self.entries and epoch <= self.entries[-1][0]:
            return
        self.entries.append((epoch, start_offset))
        self.save()

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

    def save(self) -> None:
        """Write .tmp and rename it over the file (atomic). No fsync: the cache is derived
        from the frames, so after a power loss a lost or stale file is rebuilt by scanning."""
        tmp = self.path + fmt.TMP_SUFFIX
        text = f"{_VERSION}\n{len(self.entries)}\n" + "".join(f"{e} {s}\n" for e, s in self.entries)
        with open(tmp, "w", encoding="ascii") as f:
            f.write(text)
        os.rename(tmp, self.path)


def scan_epochs(directory: str) -> list[tuple[int, int]]:
    """Epoch entries rebuilt from the frame headers of a replica (header reads only)."""
    from kstream.log.retention import list_segment_bases

    entries: list[tuple[int, int]] = []
    for base in list_segment_bases(directory):
        path = os.path.join(directory, fmt.segment_file_name(base))
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            position = 0
            while position + fmt.HEADER_SIZE <= size:
                raw = os.pread(f.fileno(), fmt.HEADER_SIZE, position)
                header = fmt.unpack_header(raw)
                if fmt.header_problem(raw, header) or position + header.frame_size > size:
                    break
                if not entries or header.leader_epoch > entries[-1][0]:
                    entries.append((header.leader_epoch, header.base_offset))
                position += header.frame_size
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
