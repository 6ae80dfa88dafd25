"""A reader that read a segment while it was active, then finds it sealed and swapped by the
cleaner, reads on from the right frame (the clean_readers chaos round caught a consumer reading
the old file's end position in the cleaned file: "bad frame (bad magic)")."""

from __future__ import annotations

import os
import time

import pyarrow as pa
from cleaner_helpers import frames, make_compacted, replica_dirs

from kstream import Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.log_reader import LogReader

ROLL_MS = 300
FRAMES = 20
VALUE = b"\x01" * 16  # (not zeros: the old end position must not read as an unwritten tail)
END = FRAMES * 5 + FRAMES  # the offset after the updates: the next segment's base


def test_a_reader_past_the_end_of_a_segment_the_cleaner_swapped_reads_the_next_segment(cluster_path):
    make_compacted(cluster_path, config={"segment.bytes": "1048576", "segment.ms": str(ROLL_MS)})
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(FRAMES):  # frames of 5 records, each with a key the last frames update
            keys = [b"k%d-%d" % (i, j) for j in range(4)] + [b"u%d" % i]
            producer.produce_batch("t", pa.table({"key": keys, "value": [VALUE] * 5}), partition=0)
        updates = [b"u%d" % i for i in range(FRAMES)]
        for i in range(0, FRAMES, 5):
            producer.produce_batch("t", pa.table({"key": updates[i:i + 5], "value": [VALUE] * 5}), partition=0)
        directory = replica_dirs(cluster_path)[0]
        reader = LogReader(directory)
        first = reader.read(0, 1 << 20)  # the whole active segment: the reader's cursor is at its end
        assert [f.header.base_offset for f in first] == list(range(0, END, 5))
        time.sleep(2 * ROLL_MS / 1000)
        producer.produce_batch("t", pa.table({"key": [b"z"], "value": [b"after"]}), partition=0)  # rolls at END
    assert fmt.list_segment_bases(directory) == [0, END]
    old_size = os.path.getsize(os.path.join(directory, fmt.segment_file_name(0)))
    opened = Cluster.open(cluster_path)
    try:
        assert opened.clean_topic("t", force=True)[0].cleaned
    finally:
        opened.close()
    # FRAMES frames became sparse (one record fewer, an offset column more): the cleaned file is
    # longer, so the old end position lies inside one of its frames.
    assert os.path.getsize(os.path.join(directory, fmt.segment_file_name(0))) > old_size
    try:
        after = reader.read(END, 1 << 20)
    finally:
        reader.close()
    assert [(f.header.base_offset, f.header.record_count) for f in after] == [(END, 1)]


def _clean_with(cluster_path, during_build):
    """Clean 't' (forced), running ``during_build()`` once the first cleaned segment is built,
    before the swap."""
    from kstream.log.storage.cleaner import replica_cleaner

    real = replica_cleaner._write_segment
    calls = []

    def write_then(*args):
        real(*args)
        if not calls:
            calls.append(during_build())

    replica_cleaner._write_segment = write_then
    opened = Cluster.open(cluster_path)
    try:
        return opened.clean_topic("t", force=True)[0], calls
    finally:
        opened.close()
        replica_cleaner._write_segment = real


def _latest(cluster_path):
    from cleaner_helpers import polled

    seen = {}
    for _, key, value in polled(cluster_path):
        seen[key] = value
    return seen


def test_a_producer_appends_while_a_clean_builds_and_the_clean_still_swaps(cluster_path):
    """The cleaner holds the partition lock only to read its bounds and to swap: an acks=all
    append made while the cleaned segments are built does not wait for the clean, and both
    the append and the clean land (issue 25, the producer beside the cleaner)."""
    import threading

    from cleaner_helpers import produce

    make_compacted(cluster_path, replicas=2)
    produce(cluster_path, [(f"k{i % 4}".encode(), f"v{i}".encode()) for i in range(24)] + [(b"k1", None)])
    expected = _latest(cluster_path)

    def append():
        done = threading.Event()

        def write():
            with Producer({"cluster": cluster_path, "acks": "all", "linger.ms": 0}) as producer:
                producer.produce("t", b"during", key=b"k0")
                producer.flush()
            done.set()

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        return done.wait(10)

    cleaned, calls = _clean_with(cluster_path, append)
    assert calls == [True], "the append waited for the clean to end"
    assert cleaned.cleaned and cleaned.records_removed > 0
    assert _latest(cluster_path) == {**expected, b"k0": b"during"}
    for directory in replica_dirs(cluster_path):
        assert not os.path.exists(os.path.join(directory, fmt.CLEANER_BUILDING_DIR))
    first, second = (frames(d) for d in replica_dirs(cluster_path))
    assert [raw for _, raw in first] == [raw for _, raw in second]


def test_a_clean_whose_segments_changed_while_it_built_swaps_nothing(cluster_path):
    """A sealed segment the clean read changed before the swap (as retention or a truncation
    would change it): nothing is swapped, what was built is dropped, the next clean cleans."""
    from cleaner_helpers import produce

    make_compacted(cluster_path, replicas=1)
    produce(cluster_path, [(f"k{i % 4}".encode(), f"v{i}".encode()) for i in range(24)] + [(b"z", b"end")])
    expected = _latest(cluster_path)
    directory = replica_dirs(cluster_path)[0]
    before = frames(directory)
    first_segment = os.path.join(directory, fmt.segment_file_name(0))
    cleaned, _ = _clean_with(cluster_path, lambda: os.utime(first_segment, ns=(1, 1)))
    assert not cleaned.cleaned and "changed while the clean was built" in cleaned.reason
    assert frames(directory) == before
    assert not os.path.exists(os.path.join(directory, fmt.CLEANER_BUILDING_DIR))
    opened = Cluster.open(cluster_path)
    try:
        assert opened.clean_topic("t", force=True)[0].cleaned
    finally:
        opened.close()
    assert _latest(cluster_path) == expected
