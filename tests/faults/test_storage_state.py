"""Small state beside the frames survives a power loss: the high watermark, the recovery
point and the leader-epoch checkpoint (issue 10, defects 5 and 6).

A power loss keeps only what was fsynced. ``SyncedState`` records, at every
fsync/fdatasync, the content of the file synced (by inode) and the entries of a
directory synced; ``power_cut`` then rebuilds a replica dir as a power loss right
now would leave it, dropping everything not fsynced.
"""

from __future__ import annotations

import os

import pytest

from helpers import consume_values, encoded, open_log, produce_range
from kstream import Admin, CorruptBatchError, NewTopic
from kstream.log.storage import format as fmt
from kstream.log.storage.leader_epochs import FILE_NAME, LeaderEpochCache
from kstream.log.storage.segment import Segment


class SyncedState:
    """What a power cut would keep: files and directory entries as of their last fsync."""

    def __init__(self, monkeypatch):
        self.contents: dict[int, bytes] = {}  # inode -> content at its last fsync
        self.entries: dict[str, dict[str, int]] = {}  # directory -> {name: inode} at its last fsync
        for name in ("fsync", "fdatasync"):
            real = getattr(os, name)
            monkeypatch.setattr(os, name, self._recording(real))

    def _recording(self, real):
        def sync(fd):
            real(fd)
            st = os.fstat(fd)
            path = os.readlink(f"/proc/self/fd/{fd}")
            if os.path.isdir(path):
                self.entries[path] = {name: os.stat(os.path.join(path, name)).st_ino
                                      for name in os.listdir(path)}
            else:  # (through /proc: the fd may be write-only)
                with open(f"/proc/self/fd/{fd}", "rb") as f:
                    self.contents[st.st_ino] = f.read()
        return sync

    def power_cut(self, directory: str, target: str) -> None:
        """Make ``target`` hold what ``directory`` would after a power loss now."""
        os.makedirs(target)
        for name, inode in self.entries.get(os.path.realpath(directory), {}).items():
            with open(os.path.join(target, name), "wb") as f:
                f.write(self.contents.get(inode, b""))


def _flip_payload_byte(directory: str, frame_number: int) -> int:
    """Flip a byte in the payload of the n-th frame of segment 0; returns its position."""
    path = os.path.join(directory, fmt.segment_file_name(0))
    segment = Segment(directory, 0, 4096)
    frames = [(pos, h) for pos, h, _ in segment.scan(0, os.path.getsize(path), True)]
    segment.close()
    position, _ = frames[frame_number]
    with open(path, "r+b") as f:
        f.seek(position + fmt.HEADER_SIZE + 3)
        byte = f.read(1)[0]
        f.seek(position + fmt.HEADER_SIZE + 3)
        f.write(bytes([byte ^ 0x40]))
    return position


def _acked_frames(directory: str, count: int) -> None:
    """``count`` frames, each fsynced (flush) as an acks=all append is."""
    log = open_log(directory)
    for i in range(count):
        log.append(encoded([f"r{i}".encode() * 20]))
        log.flush()
    log.close()


# -- defect 6: the recovery point ---------------------------------------------------------

def test_power_cut_keeps_the_recovery_point_so_a_corrupt_middle_frame_does_not_cut_acked_frames(
        tmp_path, monkeypatch):
    directory = str(tmp_path / "t-0")
    synced = SyncedState(monkeypatch)
    _acked_frames(directory, 12)
    after = str(tmp_path / "after" / "t-0")
    os.makedirs(os.path.dirname(after))
    synced.power_cut(directory, after)
    monkeypatch.undo()
    path = os.path.join(after, fmt.segment_file_name(0))
    size = os.path.getsize(path)
    position = _flip_payload_byte(after, 5)  # then the disk returns a bad block
    log = open_log(after)
    with pytest.raises(CorruptBatchError, match="below the recovery point") as caught:
        log.open()
    assert caught.value.position == position
    assert os.path.getsize(path) == size  # the 6 acknowledged frames after it are still there
    log.close()


@pytest.mark.parametrize("damage", ["torn", "garbage", "zeros"])
def test_an_unreadable_recovery_point_is_detected_and_valid_frames_after_a_bad_one_are_kept(
        tmp_path, damage):
    directory = str(tmp_path / "t-0")
    _acked_frames(directory, 12)
    point = os.path.join(directory, fmt.RECOVERY_POINT_FILE)
    raw = open(point, "rb").read()
    damaged = {"torn": raw[:11], "garbage": bytes(b ^ 0x5A for b in raw), "zeros": bytes(len(raw))}[damage]
    with open(point, "wb") as f:
        f.write(damaged)
    path = os.path.join(directory, fmt.segment_file_name(0))
    size = os.path.getsize(path)
    _flip_payload_byte(directory, 4)
    log = open_log(directory)
    with pytest.raises(CorruptBatchError, match="recovery point is unreadable"):
        log.open()
    assert os.path.getsize(path) == size
    log.close()


def test_an_unreadable_recovery_point_still_lets_a_torn_tail_be_cut(tmp_path):
    directory = str(tmp_path / "t-0")
    _acked_frames(directory, 6)
    with open(os.path.join(directory, fmt.RECOVERY_POINT_FILE), "wb") as f:
        f.write(b"\x01\x02\x03")
    path = os.path.join(directory, fmt.segment_file_name(0))
    size = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(b"\x00" * 50 + os.urandom(100))  # a torn tail: nothing valid after it
    log = open_log(directory)
    assert log.log_end_offset() == 6
    assert os.path.getsize(path) == size
    log.close()


def test_recovery_point_is_created_via_tmp_fsync_rename_then_updated_in_a_synced_slot(tmp_path, monkeypatch):
    directory = str(tmp_path / "t-0")
    point = os.path.join(directory, fmt.RECOVERY_POINT_FILE)
    tmp = point + fmt.TMP_SUFFIX
    log = open_log(directory)
    calls = []
    real = {name: getattr(os, name) for name in ("fsync", "fdatasync", "rename", "pwrite")}

    def traced(name):
        def call(*args):
            where = os.readlink(f"/proc/self/fd/{args[0]}") if name != "rename" else args
            calls.append((name, where))
            return real[name](*args)
        return call

    for name in real:
        monkeypatch.setattr(os, name, traced(name))
    log.append(encoded([b"a"]))
    log.flush()  # creates the file
    created = calls.index(("rename", (tmp, point)))
    assert calls.index(("fsync", os.path.realpath(tmp))) < created
    assert ("fsync", os.path.realpath(directory)) in calls[created:]
    del calls[:]
    log.append(encoded([b"b"]))
    log.flush()  # updates a slot in place, synced before flush returns
    monkeypatch.undo()
    written = calls.index(("pwrite", os.path.realpath(point)))
    assert ("fdatasync", os.path.realpath(point)) in calls[written:]
    assert not [c for c in calls if c[0] == "rename"]
    with open(point, "rb") as f:
        assert fmt.unpack_recovery_point_file(f.read()) == (1, fmt.RecoveryPoint(0, log._active.size, 2))
    log.close()


def test_recovery_point_layout_detects_torn_and_damaged_slots():
    first, second = fmt.RecoveryPoint(100, 4096, 150), fmt.RecoveryPoint(100, 8192, 170)
    raw = bytearray(fmt.pack_recovery_point_file(first))
    assert len(raw) == fmt.RECOVERY_POINT_FILE_BYTES
    assert fmt.unpack_recovery_point_file(bytes(raw)) == (0, first)
    slot = fmt.pack_recovery_slot(1, second)
    at = fmt.RECOVERY_POINT_SLOT_BYTES
    raw[at:at + len(slot)] = slot
    assert fmt.unpack_recovery_point_file(bytes(raw)) == (1, second)
    for cut in range(len(slot)):  # the update tore: the previous point is still there
        torn = bytearray(raw)
        torn[at + cut:at + len(slot)] = bytes(len(slot) - cut)
        assert fmt.unpack_recovery_point_file(bytes(torn)) == (0, first)
    for i in range(len(slot)):
        flipped = bytearray(raw)
        flipped[at + i] ^= 0x01
        assert fmt.unpack_recovery_point_file(bytes(flipped)) == (0, first)
    assert fmt.unpack_recovery_point_file(bytes(fmt.RECOVERY_POINT_FILE_BYTES)) is None
    assert fmt.unpack_recovery_point_file(bytes(raw[:-1])) is None  # a file cut short
    assert fmt.unpack_recovery_point_file(bytes(24)) is None  # the unchecked layout of old


# -- the leader-epoch checkpoint ------------------------------------------------------------

def test_epoch_entries_past_the_log_end_are_dropped_on_load(tmp_path):
    """A power loss took the frames of epoch 1, not the checkpoint naming it: the cache must
    not claim an epoch the log does not hold (and a new epoch replaces it, as in Kafka)."""
    directory = str(tmp_path / "t-0")
    log = open_log(directory)
    for i in range(5):
        log.append(encoded([f"{i}".encode()]), leader_epoch=0)
    log.flush()
    LeaderEpochCache(directory, [(0, 0), (1, 5)]).save()
    log.close()
    log = open_log(directory)
    assert log.epochs().entries == [(0, 0)]
    log.append(encoded([b"new leader"]), leader_epoch=2)
    assert LeaderEpochCache.load(directory).entries == [(0, 0), (2, 5)]
    log.close()


def test_torn_epoch_checkpoint_is_rebuilt_from_the_frames(tmp_path):
    directory = str(tmp_path / "t-0")
    log = open_log(directory)
    for epoch, count in ((0, 12), (3, 4)):
        for i in range(count):
            log.append(encoded([f"{epoch}-{i}".encode()]), leader_epoch=epoch)
    log.flush()
    path = os.path.join(directory, FILE_NAME)
    assert open(path, "rb").read() == b"0\n2\n0 0\n3 12\n"
    with open(path, "wb") as f:
        f.write(b"0\n2\n0 0\n3 1")  # torn mid-number: epoch 3 does not start at 1
    assert LeaderEpochCache.load(directory).entries == [(0, 0), (3, 12)]
    log.close()


# -- defect 5: the high watermark -------------------------------------------------------------

def _damage_lock_file(path: str, how: str, saved: bytes | None = None) -> None:
    if how == "emptied":
        open(path, "wb").close()
    elif how == "zeroed":
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.write(bytes(size))
    else:  # "old": the file as a power loss may keep it, an earlier high watermark
        with open(path, "wb") as f:
            f.write(saved)


@pytest.mark.parametrize("how", ["emptied", "zeroed", "old"])
def test_acknowledged_records_stay_visible_when_the_lock_file_loses_the_hw_rf1(cluster_path, how):
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
        info = admin.cluster.topic("t")
        lock_path = admin.cluster.lock_path(info, 0)
    produce_range(cluster_path, "t", 0, 40, partitions=1)
    saved = open(lock_path, "rb").read()
    produce_range(cluster_path, "t", 40, 60, partitions=1)
    _damage_lock_file(lock_path, how, saved)
    assert consume_values(cluster_path, "t", [0], "read_uncommitted") == [f"v{i}".encode() for i in range(100)]


@pytest.mark.parametrize("how", ["emptied", "zeroed", "old"])
def test_acknowledged_records_stay_visible_when_the_lock_file_loses_the_hw_rf3(tmp_path, how):
    path = str(tmp_path / "cluster")
    dirs = [str(tmp_path / f"disk{i}") for i in range(3)]
    with Admin({"cluster": path, "log.dirs": ",".join(dirs), "min.insync.replicas": 2}) as admin:
        admin.create_topics([NewTopic("t", 2, 3)])["t"].result()
        info = admin.cluster.topic("t")
        lock_paths = [admin.cluster.lock_path(info, p) for p in range(2)]
    produce_range(path, "t", 0, 30, partitions=2, config={"acks": "all"})
    saved = [open(p, "rb").read() for p in lock_paths]
    produce_range(path, "t", 30, 70, partitions=2, config={"acks": "all"})
    for lock_path, old in zip(lock_paths, saved, strict=True):
        _damage_lock_file(lock_path, how, old)
    for p in range(2):
        assert consume_values(path, "t", [p], "read_uncommitted") == [
            f"v{i}".encode() for i in range(100) if i % 2 == p]


def test_a_hw_past_the_leaders_log_end_is_not_trusted(cluster_path):
    """A power loss can keep the lock file's newer page but drop unsynced (acks=1) frames:
    a HW past the log end would make readers plan offsets that do not exist yet."""
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
        info = admin.cluster.topic("t")
        lock_path = admin.cluster.lock_path(info, 0)
        handle = admin.cluster.partition("t", 0)
    produce_range(cluster_path, "t", 0, 10, partitions=1)
    with open(lock_path, "r+b") as f:
        f.seek(fmt.LOCK_HIGH_WATERMARK_POSITION)
        f.write(fmt.pack_high_watermark(25))
    assert handle.high_watermark() == 10
    handle.close()
    produce_range(cluster_path, "t", 10, 1, partitions=1)  # the next write publishes the truth
    with Admin({"cluster": cluster_path}) as admin:
        assert admin.cluster.partition("t", 0).high_watermark() == 11


def test_zeroed_lock_file_does_not_make_readers_fail(tmp_path):
    from kstream.log.storage.lock import PartitionLock

    path = str(tmp_path / "p.lock")
    with open(path, "wb") as f:
        f.write(bytes(32))
    lock = PartitionLock(path)
    assert lock.read_high_watermark() is None
    lock.write_high_watermark(7)
    assert lock.read_high_watermark() == 7
    lock.close()


def test_hw_rebuilt_up_to_the_recovery_point_when_the_unsynced_tail_has_a_hole(cluster_path):
    """A power loss can keep later pages of an unsynced tail and lose an earlier one (a hole
    in the frames), and lose the lock file with the HW. Readers then go up to the durable
    recovery point (every acks=all acknowledgement is below it) instead of seeing nothing
    until the next write (found by chaos power_cut_rf1 seed 8)."""
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    produce_range(cluster_path, "t", 0, 10, partitions=1, config={"acks": "all", "linger.ms": 0})
    with Admin({"cluster": cluster_path}) as admin:
        info = admin.cluster.topic("t")
        lock_path = admin.cluster.lock_path(info, 0)
        handle = admin.cluster.partition("t", 0)
        tail = handle.logs[handle.info.leader].append(encoded([b"unsynced-1"]))  # no fsync
        handle.logs[handle.info.leader].append(encoded([b"unsynced-2"]))
        segment = os.path.join(handle.leader_dir, fmt.segment_file_name(tail.segment_base_offset))
        handle.close()
    with open(segment, "r+b") as f:  # the hole: a torn page leaves the first unsynced frame's
        f.seek(_frame_start_before(segment, tail.end_position) + fmt.LENGTH_SIZE)  # header half old
        f.write(b"\xff" * 8)
    os.unlink(lock_path)
    with Admin({"cluster": cluster_path}) as admin:
        assert admin.cluster.partition("t", 0).high_watermark() == 10
    assert consume_values(cluster_path, "t", [0]) == [f"v{i}".encode() for i in range(10)]


def _frame_start_before(path: str, end_position: int) -> int:
    """Where the frame that ends at ``end_position`` starts."""
    from kstream.log.storage.frames import FrameWalk

    with open(path, "rb") as f:
        data = f.read()
    for position, header in FrameWalk(lambda at, size: data[at:at + size], len(data)):
        if position + header.frame_size == end_position:
            return position
    raise AssertionError(f"no frame ends at {end_position} in {path}")


def _writer_killed_before_the_point_was_synced(cluster_path: str) -> tuple[str, int]:
    """10 acknowledged records (HW 10), then 2 more appended, fdatasynced and the recovery
    point moved to 12, but the HW not published: what a writer killed before its publish
    leaves (whether its point slot was synced is what a reader cannot tell)."""
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    produce_range(cluster_path, "t", 0, 10, partitions=1, config={"acks": "all", "linger.ms": 0})
    with Admin({"cluster": cluster_path}) as admin:
        handle = admin.cluster.partition("t", 0)
        leader = handle.logs[handle.info.leader]
        leader.append(encoded([b"a", b"b"]))
        leader.flush()
        point = os.path.join(handle.leader_dir, fmt.RECOVERY_POINT_FILE)
        handle.close()
    return point, 12


def test_a_reader_syncs_the_recovery_point_before_it_raises_the_hw_on_it(cluster_path, monkeypatch):
    """A writer killed between overwriting a recovery-point slot and fdatasyncing it leaves the
    point only in the page cache. A reader that raised the HW on it saw records a power cut
    then hid again (chaos power_cut_readers seed 1): it must make the point durable first."""
    point, end = _writer_killed_before_the_point_was_synced(cluster_path)
    from kstream.log.storage import disk

    synced = []
    real = disk.fdatasync
    monkeypatch.setattr(disk, "fdatasync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")),
                                                          real(fd))[1])
    with Admin({"cluster": cluster_path}) as admin:
        handle = admin.cluster.partition("t", 0)
        assert handle.high_watermark() == end
        handle.close()
    assert os.path.realpath(point) in [os.path.realpath(p) for p in synced]


def test_a_reader_that_cannot_sync_the_recovery_point_does_not_raise_the_hw(cluster_path, monkeypatch):
    _writer_killed_before_the_point_was_synced(cluster_path)
    from kstream.log.storage import disk

    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(disk, "fdatasync", failing)
    with Admin({"cluster": cluster_path}) as admin:
        handle = admin.cluster.partition("t", 0)
        assert handle.high_watermark() == 10  # the published HW stays; nothing raised on an unsynced point
        handle.close()
