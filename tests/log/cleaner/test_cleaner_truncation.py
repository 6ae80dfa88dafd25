"""The cleaner's checkpoint and a truncation: below ``cleaner-offset-checkpoint`` readers trust that
the cleaner left one record per key (the JVM reader's latestPerKey first pass reads only what is
above it; a Table snapshot refuses an as_of below it). A truncation below the checkpoint must
lower it before the cut offsets are written again, and a writer that opens a replica whose
checkpoint is above its log end lowers it there; else re-appended records count as cleaned
though no clean saw them: a key read twice, or a stale value."""

from __future__ import annotations

import os

import pytest
from cleaner_helpers import batches, frames, make_compacted, produce, replica_dirs

from kstream import Producer
from kstream.client.table import Table
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.cleaner_checkpoint import read_checkpoint, write_checkpoint

KEYS = [f"k{i}".encode() for i in range(5)]
UNCLEAN = {"unclean.leader.election.enable": "true"}


def clean(cluster_path):
    return Cluster.open(cluster_path).clean_topic("t", force=True)[0]


def fold(records):
    """The dict oracle: each key's latest (offset, value) of records read in offset order."""
    latest = {}
    for offset, key, value in records:
        latest[key] = (offset, value)
    return latest


def trusting_latest(records, checkpoint):
    """Latest per key the way a reader that trusts the checkpoint finds it (the JVM reader's
    latestPerKey): the keys of the part at or above the checkpoint are reduced; a record below
    it is kept, as already the only one of its key there, unless its key has a record above."""
    checkpoint = checkpoint or 0
    dirty = fold(r for r in records if r[0] >= checkpoint)
    out = [(key, (offset, value)) for offset, key, value in records if offset < checkpoint and key not in dirty]
    return sorted(out + list(dirty.items()))


def _value(message):
    return None if message is None else message.value()


def truncate_leader(cluster_path, offset):
    """Cut the only replica back to ``offset`` (what an unclean leader election or a follower's
    catch-up does to a replica whose tail diverged)."""
    handle = Cluster.open(cluster_path).partition("t", 0)
    try:
        with handle.lock:
            handle.refresh_locked()
            handle.on_replica(handle.info.leader, lambda log: log.truncate_to_locked(offset))
            handle.lock.write_high_watermark(offset)
    finally:
        handle.close()


def cleaned_topic(cluster_path):
    """A compacted topic of one replica, 40 keyed records then a tail, cleaned; its dir and the
    cleaner's end."""
    make_compacted(cluster_path, config=UNCLEAN)
    produce(cluster_path, [(KEYS[i % 5], f"a{i}".encode()) for i in range(40)] + [(b"tail", b"x")])
    assert clean(cluster_path).cleaned
    directory = replica_dirs(cluster_path)[0]
    return directory, read_checkpoint(directory)


def test_a_truncation_below_the_cleaner_checkpoint_lowers_it_before_records_come_again(cluster_path):
    directory, cleaned_to = cleaned_topic(cluster_path)
    bases = [header.base_offset for header, _ in frames(directory)]
    cut = max(b for b in bases if b <= cleaned_to - 3)  # a frame boundary a few records below the end
    assert 0 < cut < cleaned_to
    truncate_leader(cluster_path, cut)
    assert read_checkpoint(directory) == cut  # lowered with the cut
    # New values of every key, written at the offsets the cut freed (below the old cleaner end).
    produce(cluster_path, [(key, b"new-" + key) for key in KEYS] + [(b"tail2", b"y")])
    records = batches(cluster_path)
    assert next(offset for offset, _, _ in records if offset >= cut) == cut
    oracle = sorted(fold(records).items())
    assert trusting_latest(records, read_checkpoint(directory)) == oracle
    with Table(cluster_path, "t") as table:
        assert {k: table.get(k).value() for k in KEYS} == {k: b"new-" + k for k in KEYS}
    # A snapshot between the cut and the old cleaner end reads the new values (nothing there
    # was cleaned), rather than being refused as below the cleaner's end.
    as_of = cut + 3
    with Table(cluster_path, "t", as_of={0: as_of}) as table:
        expected = fold(r for r in records if r[0] < as_of)
        assert {k: _value(table.get(k)) for k in KEYS} == {k: expected.get(k, (0, None))[1] for k in KEYS}
    # The next clean reduces what was written again; the readers still agree with the oracle.
    assert clean(cluster_path).cleaned
    records = batches(cluster_path)
    assert sorted(fold(records).items()) == oracle
    assert trusting_latest(records, read_checkpoint(directory)) == oracle


def test_a_restart_at_an_offset_below_the_checkpoint_lowers_it(cluster_path):
    directory, cleaned_to = cleaned_topic(cluster_path)
    handle = Cluster.open(cluster_path).partition("t", 0)
    try:
        with handle.lock:
            handle.on_replica(handle.info.leader, lambda log: log.restart_at_locked(cleaned_to - 1))
    finally:
        handle.close()
    assert read_checkpoint(directory) == cleaned_to - 1
    assert fmt.list_segment_bases(directory) == [cleaned_to - 1]


def test_a_truncation_above_the_checkpoint_leaves_it(cluster_path):
    directory, cleaned_to = cleaned_topic(cluster_path)
    produce(cluster_path, [(b"more", b"1"), (b"more", b"2")])
    end = cleaned_to + 2
    records = batches(cluster_path)
    assert records[-1][0] >= end
    truncate_leader(cluster_path, end)
    assert read_checkpoint(directory) == cleaned_to


def test_opening_a_replica_whose_checkpoint_is_above_its_log_end_lowers_it_to_the_log_end(cluster_path):
    directory, cleaned_to = cleaned_topic(cluster_path)
    end = cleaned_to + 1  # (the tail record's segment is the active one, after the cleaner's end)
    assert batches(cluster_path)[-1][0] == end - 1
    # As a truncation by an older version (or a crash before this rule) could leave it.
    write_checkpoint(directory, end + 10)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for key in KEYS:
            producer.produce("t", b"new-" + key, key=key)
        producer.flush()
    assert read_checkpoint(directory) == end  # lowered when the writer opened, before it appended
    records = batches(cluster_path)
    assert trusting_latest(records, read_checkpoint(directory)) == sorted(fold(records).items())


@pytest.mark.parametrize("damaged", [b"", b"garbage\n"])
def test_a_damaged_checkpoint_is_left_as_all_dirty_by_a_truncation(cluster_path, damaged):
    directory, cleaned_to = cleaned_topic(cluster_path)
    with open(os.path.join(directory, fmt.CLEANER_CHECKPOINT_FILE), "wb") as f:
        f.write(damaged)
    truncate_leader(cluster_path, max(h.base_offset for h, _ in frames(directory) if h.base_offset < cleaned_to))
    assert read_checkpoint(directory) is None


def test_a_crash_inside_the_cut_leaves_the_checkpoint_already_lowered(cluster_path, monkeypatch):
    from kstream.errors import LogDirOfflineError
    from kstream.log.storage.segment import Segment

    directory, cleaned_to = cleaned_topic(cluster_path)
    cut = max(h.base_offset for h, _ in frames(directory) if h.base_offset < cleaned_to)
    before = [(h.base_offset, raw) for h, raw in frames(directory)]

    def crash(self, *args):
        raise OSError(5, "the machine stops here, at the cut's first file")

    monkeypatch.setattr(Segment, "delete", crash)
    monkeypatch.setattr(Segment, "cut_at_offset", crash)
    with pytest.raises(LogDirOfflineError):
        truncate_leader(cluster_path, cut)
    assert read_checkpoint(directory) == cut  # lowered durably before the first file was touched
    assert [(h.base_offset, raw) for h, raw in frames(directory)] == before
