"""Partition offsets for the admin: list_offsets (OffsetSpec) and delete_records.

``list_offsets`` answers from the leader replica without a consumer:
EARLIEST is the log start offset; LATEST the high watermark (READ_UNCOMMITTED)
or the last stable offset (READ_COMMITTED: below the first open transaction);
``for_timestamp(t)`` the first offset whose record timestamp is >= t among the
records a reader at the isolation level is handed, below its end (-1 if none:
:func:`kstream.log.offset_for_timestamp`, the rule every reader shares);
MAX_TIMESTAMP the offset of the record with the largest timestamp (a scan of
the frame headers below the HW, then one batch decoded).

``delete_records`` moves the log start forward on every replica under the
partition lock, through retention's segment deletion. kstream deletes whole
segments only (as retention does): the returned ``low_watermark`` is the new
log start offset, which is at most the offset asked for (records of the segment
holding that offset stay readable until the segment is sealed and deleted).
Offset -1 means the high watermark (everything readable).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kstream._model import IsolationLevel
from kstream.client.admin._futures import check_name
from kstream.log import max_timestamp_offset, offset_for_timestamp
from kstream.log.cluster import record_deletion
from kstream.log.partition_bounds import bounds
from kstream.log.storage.log_reader import LogReader
from kstream.log.transactions.store import TransactionStore
from kstream.message import TopicPartition
from kstream.tiering.lake_reader import partition_lake

if TYPE_CHECKING:
    from kstream.log.cluster.cluster import Cluster



class OffsetSpec:
    """Which offset list_offsets looks up: :meth:`earliest`, :meth:`latest`,
    :meth:`max_timestamp` or :meth:`for_timestamp`."""

    EARLIEST = -2
    LATEST = -1
    MAX_TIMESTAMP = -3

    def __init__(self, value: int):
        self._value = value

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls(cls.EARLIEST)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls(cls.LATEST)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        return cls(cls.MAX_TIMESTAMP)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        if not isinstance(timestamp_ms, int) or timestamp_ms < 0:
            raise ValueError(f"for_timestamp needs a timestamp in ms >= 0, got {timestamp_ms!r}")
        return cls(timestamp_ms)

    def __repr__(self) -> str:
        names = {self.EARLIEST: "earliest", self.LATEST: "latest", self.MAX_TIMESTAMP: "max_timestamp"}
        return f"OffsetSpec.{names.get(self._value, f'for_timestamp({self._value})')}"


class ListOffsetsResultInfo:
    """``offset``, ``timestamp`` (-1 when not asked by time) and ``leader_epoch`` (None)."""

    def __init__(self, offset: int, timestamp: int, leader_epoch: int | None = None):
        self.offset = offset
        self.timestamp = timestamp
        self.leader_epoch = leader_epoch

    def __repr__(self) -> str:
        return f"ListOffsetsResultInfo(offset={self.offset}, timestamp={self.timestamp})"


class DeletedRecords:
    """``low_watermark``: the partition's log start offset after delete_records."""

    def __init__(self, low_watermark: int):
        self.low_watermark = low_watermark

    def __repr__(self) -> str:
        return f"DeletedRecords(low_watermark={self.low_watermark})"


# -- request checks ------------------------------------------------------------------------

def check_partition(tp: Any) -> None:
    if not isinstance(tp, TopicPartition):
        raise TypeError(f"Element of the request list must be of type 'TopicPartition' got "
                        f"'{type(tp).__name__}'")
    check_name(tp.topic, "a TopicPartition's topic")
    if not isinstance(tp.partition, int) or tp.partition < 0:
        raise ValueError(f"{tp}: the partition must be >= 0")


def check_list_offsets(requests: Any, isolation_level: Any) -> dict[TopicPartition, OffsetSpec]:
    """One key per (topic, partition): the first TopicPartition given for it (so the caller
    can look its future up with it), with the last spec given for it; checked."""
    if not isinstance(requests, dict):
        raise TypeError(f"list_offsets takes a dict of TopicPartition -> OffsetSpec, got "
                        f"{type(requests).__name__}")
    if not isinstance(isolation_level, IsolationLevel):
        raise TypeError(f"isolation_level must be an IsolationLevel, got {isolation_level!r}")
    keys: dict[tuple[str, int], TopicPartition] = {}
    checked: dict[TopicPartition, OffsetSpec] = {}
    for tp, spec in requests.items():
        check_partition(tp)
        if not isinstance(spec, OffsetSpec):
            raise TypeError(f"{tp}: the value must be an OffsetSpec, got {spec!r}")
        checked[keys.setdefault((tp.topic, tp.partition), tp)] = spec
    return checked


def check_delete_records(requests: Any) -> list[TopicPartition]:
    if not isinstance(requests, list):
        raise TypeError(f"Expected Request to be a list, got '{type(requests).__name__}'")
    seen = set()
    for tp in requests:
        check_partition(tp)
        if tp.offset < -1:
            raise ValueError(f"{tp}: the offset must be >= 0, or -1 for the high watermark")
        if (tp.topic, tp.partition) in seen:
            raise ValueError(f"{tp}: a partition may be given once")
        seen.add((tp.topic, tp.partition))
    return requests


# -- the operations ------------------------------------------------------------------------

def list_offset(cluster: Cluster, tp: TopicPartition, spec: OffsetSpec,
                isolation_level: IsolationLevel) -> ListOffsetsResultInfo:
    handle = cluster.partition(tp.topic, tp.partition)
    reader = LogReader(handle.leader_dir)  # checksums checked on the batches decoded
    try:
        # The engine's bounds (the LSO: the leader's transaction index with the outcomes
        # already fixed applied; a HW a power cut took, rebuilt; nothing written).
        found = bounds(cluster, tp.topic, tp.partition, handle=handle)
        if spec._value == OffsetSpec.LATEST:
            latest = (found.high_watermark if isolation_level is IsolationLevel.READ_UNCOMMITTED
                      else found.last_stable_offset)
            return ListOffsetsResultInfo(latest, -1)
        if spec._value == OffsetSpec.MAX_TIMESTAMP:
            newest = max_timestamp_offset(reader, found.high_watermark)
            return (ListOffsetsResultInfo(-1, -1) if newest is None
                    else ListOffsetsResultInfo(newest.offset, newest.timestamp_ms))
        # A tiered topic's lake holds the offsets below its log start: EARLIEST and a time count
        # it, as Kafka's ListOffsets counts remote segments (KIP-405).
        lake = partition_lake(cluster, cluster.topic(tp.topic), tp.partition)
        if spec._value == OffsetSpec.EARLIEST:
            start = found.log_start_offset if lake is None else lake.start_offset(found.log_start_offset)
            return ListOffsetsResultInfo(start, -1)
        in_lake = None if lake is None else lake.record_for_timestamp(spec._value)
        if in_lake is not None:
            return ListOffsetsResultInfo(*in_lake)
        store = TransactionStore.for_cluster(cluster) if isolation_level is IsolationLevel.READ_COMMITTED else None
        hit = offset_for_timestamp(handle, spec._value, isolation_level, store, reader)
        return ListOffsetsResultInfo(-1, -1) if hit is None else ListOffsetsResultInfo(hit.offset, hit.timestamp_ms)
    finally:
        reader.close()
        handle.close()


def delete_records(cluster: Cluster, tp: TopicPartition) -> DeletedRecords:
    """Delete ``tp``'s records below ``tp.offset`` (-1: the high watermark), whole segments
    only, on every online replica (:mod:`kstream.log.cluster.record_deletion`)."""
    return DeletedRecords(record_deletion.delete_records(cluster, tp.topic, tp.partition, tp.offset))
