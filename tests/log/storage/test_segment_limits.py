"""Segments stay within what an index entry can hold (issue 10, defect 14, storage part):
segment.bytes and message.max.bytes have maxima, and a segment rolls before a relative
offset would overflow its 32-bit index entries."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from helpers import open_log
from kstream import Admin, ConfigError, NewTopic, Producer
from kstream.config.options import CLUSTER_OPTIONS, PRODUCER_OPTIONS
from kstream.log.storage import format as fmt
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.partition_log import EncodedBatch
from kstream.log.storage.records import PayloadCodec
from kstream.log.storage.retention import list_segment_bases


@pytest.mark.parametrize("name", ["segment.bytes", "message.max.bytes"])
def test_topic_size_options_above_the_maximum_are_refused_before_anything_is_written(cluster_path, name):
    with Admin({"cluster": cluster_path}) as admin:
        allowed = r"above the maximum 2147483647 \(allowed: 1024\.\.2147483647\)"
        with pytest.raises(ConfigError, match=rf"{name}.*{allowed}"):
            admin.create_topics([NewTopic("t", 1, 1, config={name: str(8 << 30)})])["t"].result()
        assert "t" not in admin.cluster.list_topics()
    logs = os.path.join(cluster_path, "logs")
    assert not os.path.isdir(logs) or not [n for n in os.listdir(logs) if n.startswith("t-")]


@pytest.mark.parametrize("name", ["log.segment.bytes", "message.max.bytes"])
def test_cluster_size_options_above_the_maximum_are_refused_before_a_cluster_is_made(tmp_path, name):
    path = str(tmp_path / "cluster")
    with pytest.raises(ConfigError, match=rf"{name}.*above the maximum 2147483647"):
        Admin({"cluster": path, name: 8 << 30})
    assert not os.path.exists(path)


def test_producer_message_max_bytes_has_a_maximum(cluster_path):
    with pytest.raises(ConfigError, match=r"message.max.bytes.*above the maximum 2147483647"):
        Producer({"cluster": cluster_path, "message.max.bytes": 1 << 40})


def test_the_maxima_are_what_the_index_layout_holds():
    assert CLUSTER_OPTIONS["log.segment.bytes"].maximum == fmt.MAX_SEGMENT_BYTES
    assert CLUSTER_OPTIONS["message.max.bytes"].maximum == fmt.MAX_MESSAGE_BYTES
    assert PRODUCER_OPTIONS["message.max.bytes"].maximum == fmt.MAX_MESSAGE_BYTES
    # Every frame starts below segment.bytes and is at most message.max.bytes long.
    assert fmt.MAX_SEGMENT_BYTES + fmt.MAX_MESSAGE_BYTES <= fmt.MAX_INDEX_POSITION


def _huge_batch() -> EncodedBatch:
    """A real batch of 2**31 - 1 records (a typed topic's all-null column: no data buffers)."""
    rows = 2**31 - 1
    payload = PayloadCodec().encode(pa.record_batch([pa.nulls(rows)], names=["value"]))
    now = int(time.time() * 1000)
    return EncodedBatch(payload, rows, now, now)


def test_segment_rolls_before_a_relative_offset_would_overflow_the_index(tmp_path):
    directory = str(tmp_path / "t-0")
    log = open_log(directory, index_interval_bytes=1)  # an index entry for every frame
    bases = [log.append(_huge_batch()).base_offset for _ in range(4)]
    per = 2**31 - 1
    assert bases == [0, per, 2 * per, 3 * per]
    # The third frame's last offset would be 3 * per - 1 - 0 > 2**32 - 1 from base 0.
    assert list_segment_bases(directory) == [0, 2 * per]
    log.flush()
    log.close()
    reader = LogReader(directory)
    for base in bases:
        (frame,) = reader.read(base + 5, 1)
        assert frame.header.base_offset == base
    assert reader.log_end_offset() == 4 * per
    reader.close()
    log = open_log(directory, index_interval_bytes=1)  # recovery agrees
    assert log.log_end_offset() == 4 * per
    log.close()
