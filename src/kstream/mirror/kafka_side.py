"""The Apache Kafka side of a mirror, through confluent-kafka (imported here only, lazily).

:class:`KafkaSide` answers what the mirror asks of a Kafka cluster: its topics and their
partition counts, a topic's explicitly set configs, each partition's end (the last stable
offset, as a read_committed consumer sees it), and makes the consumer and producer the
mirror copies with. Every call that talks to the broker is bounded by the mirror's
``timeout_s``; a broker that does not answer is a :class:`MirrorError` naming the
address, never a hang. Not thread-safe.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from kstream.mirror.errors import MirrorError
from kstream.mirror.options import MirrorOptions

COORDINATOR_RETRY_S = 0.2
"""Pause between tries of a group request the group's coordinator is not ready to answer."""

TRANSACTION_TIMEOUT_MS = 60_000
"""The mirror's Kafka transactions (``--exactly-once``): the broker aborts one left open longer
(a mirror stopped mid-chunk that never comes back). A chunk is committed well within it
(kafka_transactions.MAX_TRANSACTION_S)."""


def confluent() -> ModuleType:
    """confluent_kafka, or a MirrorError saying how to install it."""
    try:
        module = importlib.import_module("confluent_kafka")
        importlib.import_module("confluent_kafka.admin")  # sets module.admin
        return module
    except ImportError as err:
        raise MirrorError("mirroring to or from Apache Kafka needs confluent-kafka: "
                          "pip install 'kstream[bench]' (or pip install confluent-kafka)") from err


class KafkaSide:
    """One Kafka cluster, as a mirror's source or target."""

    def __init__(self, bootstrap: str, timeout_s: float):
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.ck = confluent()
        self._admin = self.ck.admin.AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000,
                                                 "log_level": 0})

    def _coordinator_not_ready(self, err: Any) -> bool:
        """Whether ``err`` (a KafkaException) says the group's coordinator is not ready yet: a new
        cluster's first group request (while ``__consumer_offsets`` is created) or a coordinator
        moving or loading. Kafka's Java clients retry these; librdkafka's admin calls do not."""
        code = err.args[0].code() if err.args and hasattr(err.args[0], "code") else None
        errors = self.ck.KafkaError
        return code in (errors.NOT_COORDINATOR, errors.COORDINATOR_NOT_AVAILABLE, errors.COORDINATOR_LOAD_IN_PROGRESS)

    def _group_call(self, call: Callable[[], Any]) -> Any:
        """``call()`` (a group request), tried again while the coordinator is not ready, for at most
        ``timeout_s``; other errors, and the last one after ``timeout_s``, are raised."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                return call()
            except self.ck.KafkaException as err:
                if not self._coordinator_not_ready(err) or time.monotonic() + COORDINATOR_RETRY_S > deadline:
                    raise
            time.sleep(COORDINATOR_RETRY_S)

    def _unreachable(self, err: BaseException) -> MirrorError:
        return MirrorError(f"Apache Kafka at {self.bootstrap} did not answer within {self.timeout_s:g}s ({err}); "
                           "check the address and that the broker runs")

    def partition_counts(self) -> dict[str, int]:
        """Every topic's partition count (internal ``__`` topics too)."""
        try:
            metadata = self._admin.list_topics(timeout=self.timeout_s)
        except self.ck.KafkaException as err:
            raise self._unreachable(err) from err
        return {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}

    def selected(self, options: MirrorOptions) -> dict[str, int]:
        """The source topics the mirror copies, with their partition counts; a MirrorError for a
        named topic Kafka does not have, or a pattern nothing matches."""
        return select_topics(self.partition_counts(), options, f"Apache Kafka at {self.bootstrap}")

    def explicit_configs(self, topic: str) -> dict[str, str]:
        """The configs set on ``topic`` itself (not the broker's defaults)."""
        resource = self.ck.admin.ConfigResource(self.ck.admin.ResourceType.TOPIC, topic)
        try:
            entries = self._admin.describe_configs([resource], request_timeout=self.timeout_s)[resource].result(
                timeout=self.timeout_s)
        except self.ck.KafkaException as err:
            raise MirrorError(f"describe_configs of Kafka topic {topic!r} at {self.bootstrap} failed: {err}") from err
        return {name: entry.value for name, entry in entries.items()
                if not entry.is_default and entry.value is not None
                and _source_value(entry.source) == self.ck.admin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value}

    def create_topic(self, topic: str, partitions: int, config: dict[str, str]) -> None:
        new = self.ck.admin.NewTopic(topic, num_partitions=partitions, replication_factor=-1, config=config)
        future = self._admin.create_topics([new], request_timeout=self.timeout_s)[topic]
        try:
            future.result(timeout=self.timeout_s)
        except self.ck.KafkaException as err:
            if err.args and err.args[0].code() == self.ck.KafkaError.TOPIC_ALREADY_EXISTS:
                return  # another mirror made it meanwhile: the caller checks its partitions again
            raise MirrorError(f"cannot create Kafka topic {topic!r} ({partitions} partitions, config {config}) "
                              f"at {self.bootstrap}: {err}") from err

    def end_offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Each partition's last stable offset (where a read_committed reader stops)."""
        admin = self.ck.admin
        requests = {self.ck.TopicPartition(t, p): admin.OffsetSpec.latest() for t, p in partitions}
        if not requests:
            return {}
        try:
            futures = self._admin.list_offsets(requests, isolation_level=self.ck.IsolationLevel.READ_COMMITTED,
                                               request_timeout=self.timeout_s)
            return {(tp.topic, tp.partition): future.result(timeout=self.timeout_s).offset
                    for tp, future in futures.items()}
        except self.ck.KafkaException as err:
            raise self._unreachable(err) from err

    def group_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """Every committed offset of ``group`` (empty for a group with none)."""
        request = [self.ck.ConsumerGroupTopicPartitions(group)]
        try:
            result = self._group_call(lambda: self._admin.list_consumer_group_offsets(
                request, request_timeout=self.timeout_s)[group].result(timeout=self.timeout_s))
        except self.ck.KafkaException as err:
            raise MirrorError(f"listing the offsets of group {group!r} at {self.bootstrap} failed: {err}; check "
                              "the address and that the broker runs") from err
        return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions or [] if tp.offset >= 0}

    def active_members(self, group: str) -> list[str]:
        """The member ids of ``group``'s active members (none for a group Kafka does not know)."""
        try:
            description = self._group_call(lambda: self._admin.describe_consumer_groups(
                [group], request_timeout=self.timeout_s)[group].result(timeout=self.timeout_s))
        except self.ck.KafkaException as err:
            if err.args and err.args[0].code() == self.ck.KafkaError.GROUP_ID_NOT_FOUND:
                return []
            raise MirrorError(f"describing group {group!r} at {self.bootstrap} failed: {err}") from err
        return [m.member_id for m in description.members]

    def alter_group_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        """Set ``group``'s committed offsets (Kafka refuses while the group has members)."""
        ck = self.ck
        partitions = [ck.TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        request = [ck.ConsumerGroupTopicPartitions(group, partitions)]
        try:
            result = self._group_call(lambda: self._admin.alter_consumer_group_offsets(
                request, request_timeout=self.timeout_s)[group].result(timeout=self.timeout_s))
        except ck.KafkaException as err:
            raise MirrorError(f"setting the offsets of group {group!r} at {self.bootstrap} failed: {err} (a group "
                              "with active members cannot be changed: stop its consumers first)") from err
        failed = [f"{tp.topic}[{tp.partition}]: {tp.error}" for tp in result.topic_partitions or [] if tp.error]
        if failed:
            raise MirrorError(f"Kafka at {self.bootstrap} refused offsets of group {group!r}: {'; '.join(failed)}")

    def consumer(self, group: str) -> Any:
        """A read_committed consumer that only assign()s: no group join, no commits on Kafka
        (the mirror keeps its positions in kstream)."""
        return self.ck.Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False,
            "enable.auto.offset.store": False, "isolation.level": "read_committed",
            "enable.partition.eof": True, "auto.offset.reset": "earliest", "log_level": 0,
            # librdkafka's prefetch (queued.min.messages 100000) kept: 10000 made it 5x slower here
        })

    def producer(self, on_delivery: Any, linger_ms: int = 5, transactional_id: str | None = None) -> Any:
        """An idempotent acks=all producer (no reordering, no duplicates from its own retries).
        Every delivery is reported to ``on_delivery(err, message)`` unless the record has a
        callback of its own (the mirror passes a dict's ``__setitem__``: C, no Python frame per
        record; ``flush()`` returning 0 with no error reported means every record landed).
        With ``transactional_id``, a transactional producer (``transaction.timeout.ms``
        TRANSACTION_TIMEOUT_MS): the caller runs init_transactions() before anything else."""
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
            "linger.ms": linger_ms, "batch.size": 1 << 20, "queue.buffering.max.messages": 1_000_000,
            "message.timeout.ms": max(int(self.timeout_s * 1000), 5000), "log_level": 0,
            "on_delivery": on_delivery,
        }
        if transactional_id is not None:
            config["transactional.id"] = transactional_id
            config["transaction.timeout.ms"] = TRANSACTION_TIMEOUT_MS
            config["message.timeout.ms"] = min(config["message.timeout.ms"], TRANSACTION_TIMEOUT_MS)
        return self.ck.Producer(config)

    def mirror_offsets(self, group: str, partitions: Iterable[tuple[str, int]], stable: bool = True
                       ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """``group``'s committed (offset, metadata) of ``partitions`` (absent: none committed).

        ``stable`` (the mirror's start): read as a read_committed consumer reads them (librdkafka
        asks ``require_stable``): offsets an open transaction sends are not shown, and a partition
        whose transactional commit is still being completed is asked again (UNSTABLE_OFFSET_COMMIT,
        for at most ``timeout_s``), never shown with its older offset. Not ``stable`` (a reader that
        only reports): the committed offsets, pending ones left out, without waiting (a killed
        mirror's transaction stays open until the next run aborts it).
        Through a consumer's committed(), not the AdminClient: confluent-kafka 2.16.1's
        list_consumer_group_offsets crashes (SIGSEGV in librdkafka's main thread, now and then)
        for a group Kafka does not know yet, which is every mirror's group before its first commit."""
        ck = self.ck
        asked = [ck.TopicPartition(t, p) for t, p in partitions]
        if not asked:
            return {}
        consumer = ck.Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False,
                                "isolation.level": "read_committed" if stable else "read_uncommitted",
                                "log_level": 0})
        deadline = time.monotonic() + self.timeout_s
        try:
            while True:
                try:
                    result = self._group_call(lambda: consumer.committed(asked, timeout=self.timeout_s))
                except ck.KafkaException as err:
                    raise MirrorError(f"reading the offsets of group {group!r} at {self.bootstrap} failed: {err}; "
                                      "check the address and that the broker runs") from err
                unstable = [tp for tp in result if tp.error is not None
                            and tp.error.code() == ck.KafkaError.UNSTABLE_OFFSET_COMMIT]
                failed = [f"{tp.topic}[{tp.partition}]: {tp.error}" for tp in result
                          if tp.error is not None and tp.error.code() != ck.KafkaError.UNSTABLE_OFFSET_COMMIT]
                if failed:
                    raise MirrorError(f"Kafka at {self.bootstrap} could not give the offsets of group {group!r}: "
                                      f"{'; '.join(failed[:5])}")
                if not unstable:
                    return {(tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in result if tp.offset >= 0}
                if time.monotonic() + COORDINATOR_RETRY_S > deadline:
                    raise MirrorError(f"the offsets of group {group!r} at {self.bootstrap} stayed unstable (a "
                                      f"transaction's commit being completed) for {self.timeout_s:g}s; run again "
                                      "(or raise --timeout)")
                time.sleep(COORDINATOR_RETRY_S)
        finally:
            consumer.close()


def select_topics(counts: dict[str, int], options: MirrorOptions, side: str) -> dict[str, int]:
    """``counts`` cut to the topics ``options`` selects; named topics must all exist."""
    if options.topics:
        missing = [t for t in options.topics if t not in counts]
        if missing:
            known = sorted(t for t in counts if not t.startswith("__"))
            raise MirrorError(f"unknown topic(s) {', '.join(map(repr, missing))} on {side} (it has "
                              f"{', '.join(known[:10]) or 'no topics'}{' ...' if len(known) > 10 else ''}); "
                              "check --topics, or create them first")
    chosen = {t: n for t, n in sorted(counts.items()) if options.selects(t)}
    if not chosen:
        raise MirrorError(f"no topic on {side} matches --pattern {options.pattern!r}")
    return chosen


def _source_value(source: Any) -> int:
    """ConfigEntry.source as an int (confluent-kafka gives the enum or its value by version)."""
    return int(getattr(source, "value", source))
