"""A reader that read a segment while it was active, then finds it sealed and swapped by the
cleaner, reads on from the right frame (the clean_readers chaos round caught a consumer reading
the old file's end position in the cleaned file: "bad frame (bad magic)")."""

from __future__ import annotations

import os
import time

import pyarrow as pa
from cleaner_helpers import make_compacted, replica_dirs

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
