"""Leader elections for the admin (confluent's ``elect_leaders``).

PREFERRED moves leadership back to each partition's first replica where it is
in sync (one metadata transaction, :func:`kstream.log.cluster.replica_ops.elect_preferred_leaders`'s
work); UNCLEAN gives an offline partition (its last in-sync replica's log dir is
offline) a leader from an online replica, losing what that replica lacks.
Per partition the result is None (elected) or a KafkaError: ELECTION_NOT_NEEDED,
PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
UNKNOWN_TOPIC_OR_PART. With ``partitions=None`` every partition is tried and
only those elected or failed are reported, as Kafka does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kstream._model import ElectionType
from kstream.client.admin._futures import kafka_error
from kstream.client.cluster_metadata import online_log_dirs
from kstream.errors import PartitionNotFoundError, TopicNotFoundError
from kstream.message import KafkaError, TopicPartition

if TYPE_CHECKING:
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.cluster.metadata import PartitionInfo


def check_partitions(partitions: Any) -> None:
    """Request checks, raised at once with confluent-kafka's messages: TypeError for a
    non-list or a non-TopicPartition element, ValueError for an empty list, an empty topic
    name or a negative partition."""
    if not isinstance(partitions, list):
        raise TypeError(f"Expected 'partitions' to be a list, got '{type(partitions).__name__}'")
    if not partitions:
        raise ValueError("partitions must not be empty (None elects every partition)")
    for tp in partitions:
        if not isinstance(tp, TopicPartition):
            raise TypeError("Element of the 'partitions' list must be of type 'TopicPartition' "
                            f"got '{type(tp).__name__}'")
        if not tp.topic or tp.partition < 0:
            raise ValueError(f"{tp!r}: elect_leaders needs a topic name and a partition >= 0")


def _placements(cluster: Cluster, partitions: list[TopicPartition] | None
                ) -> tuple[dict[tuple[str, int], PartitionInfo], dict[TopicPartition, KafkaError | None]]:
    """The placements asked for, and an UNKNOWN_TOPIC_OR_PART result for those that do not exist."""
    found: dict[tuple[str, int], PartitionInfo] = {}
    missing: dict[TopicPartition, KafkaError | None] = {}
    if partitions is None:
        for name in cluster.list_topics():
            found.update({(name, p.partition): p for p in cluster.topic(name).partitions})
        return found, missing
    for tp in partitions:
        try:
            info = cluster.topic(tp.topic)
            if not 0 <= tp.partition < info.num_partitions:
                raise PartitionNotFoundError(f"{tp.topic} has no partition {tp.partition}")
            found[(tp.topic, tp.partition)] = info.partitions[tp.partition]
        except (TopicNotFoundError, PartitionNotFoundError) as err:
            missing[TopicPartition(tp.topic, tp.partition)] = kafka_error("UNKNOWN_TOPIC_OR_PART", str(err))
    return found, missing


def elect(cluster: Cluster, election_type: ElectionType, partitions: list[TopicPartition] | None
          ) -> dict[TopicPartition, KafkaError | None]:
    before, results = _placements(cluster, partitions)
    report_all = partitions is not None
    if election_type is ElectionType.PREFERRED:
        cluster.metadata.elect_preferred_leaders(partitions=set(before))
        online = online_log_dirs(cluster)
        for (topic, partition), old in before.items():
            new = cluster.metadata.partition_info(topic, partition)
            key = TopicPartition(topic, partition)
            if new.leader != old.leader:
                results[key] = None
            elif old.leader == old.replicas[0]:
                if report_all:
                    results[key] = kafka_error("ELECTION_NOT_NEEDED", f"{topic}-{partition} is led by "
                                               f"its preferred replica {old.leader} already")
            else:
                preferred = old.replicas[0]
                state = "offline" if not online.get(preferred, False) else "not in sync"
                results[key] = kafka_error("PREFERRED_LEADER_NOT_AVAILABLE",
                                           f"{topic}-{partition}: preferred replica {preferred} is {state}")
        return results
    for (topic, partition), old in before.items():
        key = TopicPartition(topic, partition)
        handle = cluster.partition(topic, partition)
        try:
            if handle.elect_unclean():
                results[key] = None
            elif handle.offline_locked():  # still leaderless: no replica on an online log dir
                results[key] = kafka_error("ELIGIBLE_LEADERS_NOT_AVAILABLE",
                                           f"{topic}-{partition} has no replica on an online log dir")
            elif report_all:
                results[key] = kafka_error("ELECTION_NOT_NEEDED", f"{topic}-{partition} has an "
                                           f"online leader ({old.leader})")
        finally:
            handle.close()
    return results
