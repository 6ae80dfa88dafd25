"""A Consumer's ``group.id`` side: subscribe() and rebalances, commit(), committed(), auto commit.

:class:`GroupSession` is owned by one :class:`~kstream.client.consumer.Consumer`
and runs in its thread, from poll(): it applies the rebalance steps of
:mod:`kstream.groups.membership` (revoke → rejoin → assign, with the
``on_revoke``/``on_assign``/``on_lost`` callbacks as confluent-kafka calls
them), commits positions every ``auto.commit.interval.ms`` and before giving
partitions up, and serves ``on_commit(err, partitions)`` for asynchronous
commits, which run on one background thread.

It touches its consumer only through the :class:`GroupMember` it is given
at construction (the assignment, to take and give up partitions, and the
offsets to commit), never through the consumer's own methods, and does not
import the consumer's module.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kstream.errors import ConfigError, FencedError, KStreamError
from kstream.groups.coordinator import MemberSpec
from kstream.groups.membership import ASSIGN, LOST, REVOKE, Membership
from kstream.groups.service import ConsumerGroups, OffsetCommit
from kstream.groups.transactional_offsets import ConsumerGroupMetadata
from kstream.log.cluster.cluster import Cluster
from kstream.message import OFFSET_INVALID, TopicPartition

log = logging.getLogger(__name__)

RebalanceCallback = Callable[[Any, list[TopicPartition]], None]
MIN_SESSION_TIMEOUT_MS = 100
"""The shortest session a member may join with (librdkafka accepts 1 ms at construction; the
group coordinator refuses it at join, as a broker's group.min.session.timeout.ms does)."""
CommitCallback = Callable[[KStreamError | None, list[TopicPartition]], None]


@dataclass(frozen=True)
class GroupMember:
    """What a :class:`GroupSession` may do with the consumer it serves.

    ``owner``: the object the rebalance callbacks get as their first argument (the
    Consumer, as confluent-kafka passes it). ``assignment()``: the assigned partitions.
    ``take(partitions)``: add partitions at their offsets (OFFSET_INVALID: the group's
    committed offset or auto.offset.reset). ``give_up()``: drop the whole assignment.
    ``offsets_to_commit()``: what a commit without arguments commits.
    """

    owner: Any
    assignment: Callable[[], list[TopicPartition]]
    take: Callable[[list[TopicPartition]], None]
    give_up: Callable[[], None]
    offsets_to_commit: Callable[[], list[TopicPartition]]


class GroupSession:
    """See the module docstring."""

    def __init__(self, cluster: Cluster, member: GroupMember, options: dict[str, Any],
                 on_commit: CommitCallback | None,
                 logger: logging.Logger | logging.LoggerAdapter[Any] | None = None):
        self._cluster = cluster
        self._member = member
        self._log = logger or log
        self._options = options
        self.group: str = options["group.id"]
        self._groups = ConsumerGroups(cluster)
        self._on_commit = on_commit
        self._auto_commit = bool(options["enable.auto.commit"])
        self._auto_commit_s = options["auto.commit.interval.ms"] / 1000.0
        self._next_auto_commit = time.monotonic() + self._auto_commit_s
        self._membership: Membership | None = None
        self._callbacks: dict[str, RebalanceCallback | None] = {}
        self._committer: ThreadPoolExecutor | None = None
        self._local = threading.local()
        self._commit_results: queue.SimpleQueue[tuple[KStreamError | None, list[TopicPartition]]] = \
            queue.SimpleQueue()

    # -- subscription --------------------------------------------------------------------

    def subscribe(self, topics: Sequence[str], on_assign: RebalanceCallback | None,
                  on_revoke: RebalanceCallback | None, on_lost: RebalanceCallback | None) -> None:
        if isinstance(topics, str) or not topics:
            raise ConfigError("subscribe() takes a non-empty list of topic names (a name starting "
                              "with '^' is a regular expression)")
        cluster_topics = self._cluster.list_topics()
        for topic in topics:
            if not topic.startswith("^") and topic not in cluster_topics:
                self._cluster.topic(topic)  # raises TopicNotFoundError listing topics
        options = self._options
        if options["session.timeout.ms"] < MIN_SESSION_TIMEOUT_MS:
            raise ConfigError(
                f"session.timeout.ms={options['session.timeout.ms']} is below the group's minimum "
                f"{MIN_SESSION_TIMEOUT_MS} ms (a Kafka broker refuses such a join the same way, by its "
                "group.min.session.timeout.ms); raise session.timeout.ms")
        self.unsubscribe()
        self._callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}
        spec = MemberSpec(options["client.id"], tuple(topics), options["partition.assignment.strategy"],
                          options["session.timeout.ms"], options["max.poll.interval.ms"],
                          options["group.instance.id"])
        self._membership = Membership(self._cluster, self.group, spec,
                                      options["heartbeat.interval.ms"])
        self._membership.join()

    def unsubscribe(self) -> None:
        if self._membership is not None:
            self._give_up(lost=False)
            self._membership.leave()
            self._membership = None

    @property
    def member_id(self) -> str | None:
        return self._membership.member_id if self._membership else None

    def group_metadata(self) -> ConsumerGroupMetadata:
        membership = self._membership
        return ConsumerGroupMetadata(self.group, membership.member_id if membership else None,
                                     membership.generation if membership else -1,
                                     self._options["group.instance.id"])

    # -- from poll() ---------------------------------------------------------------------

    def maintain(self) -> bool:
        """Run what is due (auto commit, commit callbacks, a rebalance step). True while the
        group is rebalancing and this consumer has nothing assigned to read."""
        if self._auto_commit and time.monotonic() >= self._next_auto_commit:
            self._next_auto_commit = time.monotonic() + self._auto_commit_s
            self._commit_positions_quietly()
        while not self._commit_results.empty():
            err, partitions = self._commit_results.get()
            if self._on_commit is not None:
                self._on_commit(err, partitions)
        membership = self._membership
        if membership is None or not membership.changed:
            return False
        step = membership.next_step()
        if step.action == REVOKE:
            self._give_up(lost=False)
            if not membership.rejoin():
                self._give_up(lost=True)
                membership.join()
        elif step.action == LOST:
            self._give_up(lost=True)
            membership.join()
        elif step.action == ASSIGN:
            self._take(step.generation, step.assignment)
        return membership.changed and not self._member.assignment()

    def _give_up(self, lost: bool) -> None:
        """Revoke the assignment (committing first unless it was lost)."""
        partitions = self._member.assignment()
        if not lost and self._auto_commit:
            lost = not self._commit_positions_quietly()
        callback = self._callbacks.get("lost" if lost else "revoke") or self._callbacks.get("revoke")
        if callback is not None and (partitions or not lost):
            callback(self._member.owner, partitions)
        self._member.give_up()

    def _take(self, generation: int, assignment: tuple[tuple[str, int], ...]) -> None:
        assert self._membership is not None
        try:
            committed = self._groups.start_offsets(self.group)
            partitions = []
            for topic, partition in assignment:
                row = committed.get((topic, partition))
                partitions.append(TopicPartition(topic, partition, row.offset if row else OFFSET_INVALID))
            self._member.take(partitions)
        except KStreamError:
            # Not taken (e.g. a lost offsets table): the next poll tries again and raises
            # again, rather than leaving the member silently without partitions.
            self._membership.rejoin_needed()
            raise
        self._membership.assigned(generation)
        callback = self._callbacks.get("assign")
        if callback is not None:
            callback(self._member.owner, [TopicPartition(t, p) for t, p in assignment])

    # -- commits ----------------------------------------------------------------------

    def _commit_positions_quietly(self) -> bool:
        """Auto commit: False (and a warning) if the commit was refused."""
        positions = self._member.offsets_to_commit()
        if not positions:
            return True
        try:
            self.commit(positions, asynchronous=False)
            return True
        except KStreamError as err:
            self._log.warning("auto commit for group %s failed: %s", self.group, err)
            return False

    def commit(self, partitions: list[TopicPartition], asynchronous: bool) -> list[TopicPartition] | None:
        membership = self._membership
        member_id = membership.member_id if membership else None
        generation = membership.generation if membership else -1
        if asynchronous:
            if self._committer is None:
                self._committer = ThreadPoolExecutor(1, thread_name_prefix=f"kstream-commit-{self.group}")
            future = self._committer.submit(self._commit_in_thread, partitions, member_id, generation)
            future.add_done_callback(lambda f: self._commit_results.put(_outcome(f, partitions)))
            return None
        return self._commit_with(self._groups, partitions, member_id, generation)

    def _commit_in_thread(self, partitions: list[TopicPartition], member_id: str | None,
                          generation: int) -> list[TopicPartition]:
        groups = getattr(self._local, "groups", None)
        if groups is None:  # this thread's own database connection
            groups = self._local.groups = ConsumerGroups(Cluster.open(self._cluster.path))
        return self._commit_with(groups, partitions, member_id, generation)

    def _commit_with(self, groups: ConsumerGroups, partitions: list[TopicPartition],
                     member_id: str | None, generation: int) -> list[TopicPartition]:
        offsets = {(tp.topic, tp.partition): OffsetCommit(tp.offset, tp.metadata, tp.leader_epoch)
                   for tp in partitions}
        try:
            groups.commit(self.group, offsets, member_id=member_id, generation=generation)
        except FencedError:
            if self._membership is not None:
                self._membership.rejoin_needed()
            raise
        return [TopicPartition(tp.topic, tp.partition, tp.offset) for tp in partitions]

    def report_commit(self, error: KStreamError | None, partitions: list[TopicPartition]) -> None:
        """Hand an asynchronous commit's outcome to on_commit from the next poll()."""
        self._commit_results.put((error, partitions))

    def committed(self, partitions: list[TopicPartition], require_stable: bool = True
                  ) -> list[TopicPartition]:
        """The group's committed offsets of ``partitions`` (OFFSET_INVALID where none); with
        ``require_stable``, after waiting for open transactions carrying offsets for the group."""
        rows = self._groups.committed(self.group, require_stable=require_stable)
        result = []
        for tp in partitions:
            row = rows.get((tp.topic, tp.partition))
            result.append(TopicPartition(tp.topic, tp.partition, row.offset if row else OFFSET_INVALID,
                                         row.metadata if row else None,
                                         row.leader_epoch if row else None))
        return result

    def close(self) -> None:
        if self._membership is not None:
            self.unsubscribe()
        elif self._auto_commit and self._member.assignment():
            self._commit_positions_quietly()
        if self._committer is not None:
            self._committer.submit(self._close_thread_groups)
            self._committer.shutdown(wait=True)
        self._groups.close()

    def _close_thread_groups(self) -> None:
        """On the commit thread: close what it opened."""
        groups = getattr(self._local, "groups", None)
        if groups is not None:
            groups.close()
            groups.cluster.close()


def _outcome(future: Future[list[TopicPartition]], partitions: list[TopicPartition]
             ) -> tuple[KStreamError | None, list[TopicPartition]]:
    error = future.exception()
    if error is None:
        return None, future.result()
    if isinstance(error, KStreamError):
        return error, partitions
    return KStreamError(f"commit failed: {error!r}"), partitions
