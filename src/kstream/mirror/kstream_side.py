"""The kstream side of a mirror, through kstream's own client API (AdminClient, Consumer).

:class:`KstreamSide` answers what the mirror asks of a kstream cluster: its topics and
partition counts, a topic's config overrides and schema, each partition's last stable
offset, the mirror group's committed offsets, and creates the topics it copies into.
Not thread-safe; close it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from kstream._model import IsolationLevel
from kstream.client.admin.client import AdminClient
from kstream.client.admin.offsets import OffsetSpec
from kstream.client.admin.topics import NewTopic, TopicDetails
from kstream.client.consumer import Consumer
from kstream.errors import KStreamError, TopicExistsError
from kstream.log.storage.format import CLUSTER_PROPERTIES
from kstream.message import TopicPartition
from kstream.mirror.errors import MirrorError
from kstream.mirror.kafka_side import select_topics
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
