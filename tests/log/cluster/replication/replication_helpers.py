"""Helpers of the replication tests (a module of its own: conftest.py is not importable by name)."""

from __future__ import annotations

import os

from helpers import consume_values
from kstream import Admin, NewTopic


def make_topic(cluster_path, name="t", partitions=1, replication_factor=3, config=None):
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic(name, partitions, replication_factor, config=config or {})])[name].result()
        return admin.cluster.topic(name)


def replica_frames(directory):
    """(base offset, header bytes, payload bytes) of every frame of a replica, in order."""
    from kstream.log.storage import format as fmt
    from kstream.log.storage.retention import list_segment_bases

    frames = []
    for base in list_segment_bases(directory):
        with open(os.path.join(directory, fmt.segment_file_name(base)), "rb") as f:
            data = f.read()
        position = 0
        while position + fmt.HEADER_SIZE <= len(data):
            header = fmt.unpack_header(data[position:position + fmt.HEADER_SIZE])
            end = position + header.frame_size
            frames.append((header.base_offset, data[position:position + fmt.HEADER_SIZE], data[position + 68:end]))
            position = end
    return frames


def consume_all(cluster_path, topic="t", partition=0):
    """Every value of one partition, read from offset 0 by a fresh consumer."""
    return consume_values(cluster_path, topic, [partition], "read_uncommitted")
