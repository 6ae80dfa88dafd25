"""The kstream side of a mirror, through kstream's own client API (AdminClient, Consumer).

:class:`KstreamSide` answers what the mirror asks of a kstream cluster: its topics and
partition counts, a topic's config overrides and schema, each partition's last stable
offset, the mirror group's committed offsets, and creates the topics it copies into.
Not thread-safe; close it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from kstream._model import ConsumerGroupTopicPartitions, IsolationLevel
from kstream.client.admin.client import AdminClient
from kstream.client.admin.offsets import OffsetSpec
from kstream.client.admin.topics import NewTopic, TopicDetails
from kstream.client.consumer import Consumer
from kstream.errors import GroupBusyError, GroupNotFoundError, KStreamError, TopicExistsError
from kstream.log.storage.format import CLUSTER_PROPERTIES
from kstream.message import OFFSET_BEGINNING, TopicPartition
from kstream.mirror.errors import MirrorError
from kstream.mirror.kafka_side import select_topics
from kstream.mirror.offset_syncs import OffsetSync
from kstream.mirror.options import MirrorOptions


class KstreamSide:
    """One kstream cluster (its path), as a mirror's source or target."""

    def __init__(self, path: str, target: bool = False):
        self.path = path
        self.target = target  # a target cluster that does not exist yet is made with its first topic
        self.admin = AdminClient({"cluster": path})

    def close(self) -> None:
        self.admin.close()

    def partition_counts(self) -> dict[str, int]:
        if self.target and not os.path.exists(os.path.join(self.path, CLUSTER_PROPERTIES)):
            return {}
        return {name: len(topic.partitions) for name, topic in self.admin.list_topics().topics.items()}

    def selected(self, options: MirrorOptions) -> dict[str, int]:
        return select_topics(self.partition_counts(), options, f"kstream cluster {self.path}")

    def describe(self, topic: str) -> TopicDetails:
        return self.admin.describe_topic(topic)

    def create_topic(self, topic: str, partitions: int, config: dict[str, str]) -> None:
        try:
            self.admin.create_topics([NewTopic(topic, partitions, config=config)])[topic].result()
        except TopicExistsError:
            return  # made meanwhile: the caller checks its partitions again
        except KStreamError as err:
            raise MirrorError(f"cannot create kstream topic {topic!r} ({partitions} partitions, config {config}) "
                              f"in {self.path}: {err}") from err

    def end_offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Each partition's last stable offset (where a read_committed reader stops)."""
        requests = {TopicPartition(t, p): OffsetSpec.latest() for t, p in partitions}
        if not requests:
            return {}
        futures = self.admin.list_offsets(requests, isolation_level=IsolationLevel.READ_COMMITTED)
        return {(tp.topic, tp.partition): future.result().offset for tp, future in futures.items()}

    def group_offsets(self, group: str) -> dict[tuple[str, int], tuple[int, str | None]]:
        """Every committed (offset, metadata) of ``group``; empty for a group with none."""
        request = [ConsumerGroupTopicPartitions(group)]
        result = self.admin.list_consumer_group_offsets(request)[group].result()
        return {(tp.topic, tp.partition): (tp.offset, tp.metadata)
                for tp in result.topic_partitions if tp.offset >= 0}

    def active_members(self, group: str) -> list[str]:
        """The member ids of ``group``'s active members (none for a group that does not exist)."""
        try:
            description = self.admin.describe_consumer_groups([group])[group].result()
        except GroupNotFoundError:
            return []
        return [m.member_id for m in description.members]

    def alter_group_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        """Set ``group``'s committed offsets (refused by kstream while the group has members)."""
        request = [ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])]
        try:
            self.admin.alter_consumer_group_offsets(request)[group].result()
        except GroupBusyError as err:
            raise MirrorError(f"group {group!r} in kstream cluster {self.path} has active members ({err}); "
                              "stop its consumers, then run the translation again") from err

    def read_offset_syncs(self, topic: str, max_syncs: int, timeout_s: float) -> list[OffsetSync]:
        """The offset syncs in ``topic`` (one partition), in the order written, up to its last
        stable offset at the call; none if the topic does not exist. More than ``max_syncs``
        (a limit on memory), or no progress for ``timeout_s``, is a MirrorError."""
        if topic not in self.partition_counts():
            return []
        end = self.end_offsets([(topic, 0)])[(topic, 0)]
        consumer = Consumer({"cluster": self.path, "group.id": topic, "enable.auto.commit": False,
                             "isolation.level": "read_committed"})
        syncs: list[OffsetSync] = []
        try:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            deadline = time.monotonic() + timeout_s
            while True:
                batch = consumer.poll_batch(10_000, 0.2)
                if batch is None:
                    if consumer.position([TopicPartition(topic, 0)])[0].offset >= end:
                        break
                    if time.monotonic() > deadline:
                        raise MirrorError(f"reading {topic} in {self.path} stopped below its end {end} for "
                                          f"{timeout_s:g}s; run again (or raise --timeout)")
                    continue
                deadline = time.monotonic() + timeout_s
                offsets = batch.column("offset").to_pylist()
                for offset, value in zip(offsets, batch.column("value").to_pylist(), strict=True):
                    if offset < end:
                        syncs.append(OffsetSync.from_json(value, f"{topic} offset {offset}"))
                if len(syncs) > max_syncs:
                    raise MirrorError(f"{topic} holds more than {max_syncs} offset syncs; raise --max-syncs")
                if offsets[-1] + 1 >= end:
                    break  # what a running mirror writes meanwhile is past this read's end
        finally:
            consumer.close()
        return syncs

    def group_consumer(self, group: str, **config: object) -> Consumer:
        """A consumer of the mirror's group that only assign()s (never joins it): its
        committed() reads the mirror's positions, its group metadata lets a transaction
        commit offsets for the group (allowed while the group has no active member)."""
        return Consumer({"cluster": self.path, "group.id": group, "enable.auto.commit": False,
                         "isolation.level": "read_committed", **config})


def committed_positions(consumer: Consumer, partitions: Iterable[tuple[str, int]]
                        ) -> dict[tuple[str, int], tuple[int, str | None]]:
    """The group's committed (offset, metadata) of ``partitions``; absent: none committed yet."""
    asked = [TopicPartition(t, p) for t, p in partitions]
    if not asked:
        return {}
    return {(tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in consumer.committed(asked) if tp.offset >= 0}
