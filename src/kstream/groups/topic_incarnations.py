"""Which committed offsets belong to a topic as it exists now: the one rule for rows of a
deleted topic.

Committed offsets are tied to one incarnation of their topic (its topic id, see
:class:`kstream.log.cluster.metadata.TopicInfo`). A row of a topic that was deleted, or deleted
and created again, counts nowhere: not in committed offsets, lag, describe,
``startingOffsets=group``, the group list, nor the monitor's commit history, as Kafka
drops a deleted topic's offsets. A row without an id (written before kstream recorded
them) counts for the topic that existed when it was committed: its commit time is not
before the topic's creation. Every reader of offsets rows asks :class:`TopicIncarnations`
(a second copy of the rule is how a fix lands in one place and not the other).
"""

from __future__ import annotations

import datetime as dt

from kstream.errors import TopicNotFoundError
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import DataVersion, TopicInfo


class TopicIncarnations:
    """Topic metadata of one open cluster, cached until the metadata database changes, and
    the rule above. Reads only; use from one thread at a time (as its owners are)."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self._topics: dict[str, tuple[DataVersion, TopicInfo]] = {}

    def topic(self, name: str) -> TopicInfo:
        """The topic as it exists now (TopicNotFoundError when it does not)."""
        version = self.cluster.metadata.data_version()
        cached = self._topics.get(name)
        if cached is None or cached[0] != version:
            cached = self._topics[name] = (version, self.cluster.topic(name))
        return cached[1]

    def topic_id(self, name: str) -> str | None:
        """The id of the topic as it exists now; None when there is no such topic."""
        try:
            return self.topic(name).topic_id
        except TopicNotFoundError:
            return None

    def is_current(self, topic: str, topic_id: str | None, commit_time: dt.datetime | None) -> bool:
        """Is a row committed for ``topic`` (with this id, at this time) one of the topic as it
        exists now, not of a deleted incarnation of it?"""
        try:
            info = self.topic(topic)
        except TopicNotFoundError:
            return False
        if topic_id is not None:
            return topic_id == info.topic_id
        return commit_time is None or commit_time.timestamp() * 1000 >= info.created_ms
