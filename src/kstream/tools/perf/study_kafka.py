"""How a study point runs on Apache Kafka, the study's peer, at each of its two durabilities.

:class:`KafkaPeers` starts the brokers (:class:`~kstream.tools.perf.kafka_peer.KafkaPeer`)
once and keeps them across points and scenarios: one broker, or three for a
scenario with replicas, the other count stopped when the study moves on, so
an idle JVM cluster does not share the cores with a run it is not part of.
Each point makes its own topic and deletes it afterwards.

The two durabilities are two topics on the same brokers: Kafka's default
(acknowledged from the page cache; fsync left to the OS) and the topic
setting ``flush.messages=1`` (every append fsynced before it is acknowledged,
as kstream's acks=all), the per-topic form of the broker's
``log.flush.interval.messages`` (``kafka_peer --flush-messages``).

Two clients drive it (:mod:`kstream.tools.perf.study_systems`): confluent-kafka,
the librdkafka client kstream imitates, with the settings of the Tansu line
(:mod:`kstream.tools.perf.peer`), and Kafka's own perf tools
(:mod:`kstream.tools.perf.kafka_tools`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

from kstream.errors import KStreamError
from kstream.tools.perf import kafka_peer, kafka_tools, peer
from kstream.tools.perf.result import PerfResult
from kstream.tools.perf.study_points import (
    KSTREAM_ONLY,
    NotApplicableError,
    confluent_run,
    consumer_config,
    min_insync,
    producer_config,
    records,
)
from kstream.tools.perf.study_systems import BY_KEY

TOOLS_LATENCY_RECORDS = 1_000
"""EndToEndLatency's records per run: it waits for each one, so 1,000 take 1-10 s."""
WARM_UP_RECORDS = 300_000
"""Records sent to a scratch topic after a broker starts, so the first point does not time its JIT warm-up."""
TOOLS_PRODUCER_CONFIG = {"linger.ms": 5, "batch.size": 1_000_000}
"""ProducerPerformance gets the batching confluent-kafka's line and kstream use (Java's default batch is 16 KB)."""


def kafka_missing() -> str | None:
    """One line naming what the Kafka lines lack (java, `make kafka`'s jars, confluent-kafka), or None."""
    reason = kafka_peer.missing()
    if reason is None and importlib.util.find_spec("confluent_kafka") is None:
        reason = "no confluent-kafka (pip install -e '.[dev]')"
    return reason


class KafkaPeers:
    """The study's Apache Kafka brokers, started on first use and kept until :meth:`close`.

    ``external`` maps a broker count to the bootstrap of a broker someone else
    runs (the tests' ``kafka_broker``): used as it is, never started or stopped.
    Not thread-safe; one study uses one.
    """

    def __init__(self, external: Mapping[int, str] | None = None) -> None:
        self.external = dict(external or {})
        self.running: dict[int, kafka_peer.KafkaPeer] = {}
        self.start_seconds: dict[int, float] = {}

    def bootstrap(self, brokers: int) -> str:
        """The bootstrap of a ``brokers``-node cluster; starts it (and stops the other) if needed."""
        if brokers in self.external:
            return self.external[brokers]
        for other in [n for n in self.running if n != brokers]:
            self.running.pop(other).stop()
        if brokers not in self.running:
            reason = kafka_missing()
            if reason:
                raise NotApplicableError(f"Apache Kafka peer: {reason}")
            started = kafka_peer.KafkaPeer(brokers).start()
            self.running[brokers] = started
            self.start_seconds[brokers] = self.start_seconds.get(brokers, 0.0) + started.start_seconds
            _warm_up(started.bootstrap, brokers)
        return self.running[brokers].bootstrap

    def close(self) -> None:
        for started in self.running.values():
            started.stop()
        self.running = {}


def _warm_up(bootstrap: str, brokers: int) -> None:
    """Send :data:`WARM_UP_RECORDS` through a fresh broker (a scratch topic, deleted): its JIT compiles now."""
    topic = "kstream-study-warm-up"
    kafka_peer.create_topic(bootstrap, topic, 6, brokers)
    try:
        peer.confluent_produce(bootstrap, topic, WARM_UP_RECORDS, 100, {"acks": "all"})
    finally:
        _delete_topic(bootstrap, topic)


def brokers_needed(points: list[dict[str, Any]]) -> int:
    """3 when any point of a scenario has replicas (three brokers against kstream's three log dirs), else 1."""
    return 3 if any(p.get("replication_factor", 1) > 1 for p in points) else 1


def applicable(key: str, run: str, point: dict[str, Any]) -> None:
    """NotApplicableError with the reason when Kafka line ``key`` cannot run ``point``."""
    system = BY_KEY[key]
    if not point.get("peer", True) or not point.get("kafka", True):
        raise NotApplicableError("the plan turns the Kafka lines off here")
    if system.tools and not point.get("kafka_tools", True):
        raise NotApplicableError("the plan turns Kafka's perf tools off here")
    if point.get("api", "record") == "batch":
        raise NotApplicableError("Arrow batches are kstream's own API: the row's 'kstream ÷ fastest Kafka' "
                                 "compares them with the fastest Kafka client on the same records")
    if point.get("warm_up", False):
        raise NotApplicableError("Kafka's broker opens every partition when the topic is made: "
                                 "Kafka runs the cold line only")
    used = [s for s in KSTREAM_ONLY if s in point and point[s] not in (1, True)]
    if used:
        raise NotApplicableError(f"kstream-only setting {used[0]}")
    if system.fsync and run == "consume":
        raise NotApplicableError("a read fsyncs nothing: Kafka's reads are the default-durability line's")
    if system.tools:
        if run == "pair":
            raise NotApplicableError("Kafka's perf tools have no producer-and-consumer-at-once run")
        if run == "consume" and point.get("consumers", 1) > 1:
            raise NotApplicableError("ConsumerPerformance is one reader; its group split is not timed alone")


def kafka_point(key: str, run: str, point: dict[str, Any], topic: str, peers: KafkaPeers, brokers: int) -> PerfResult:
    """Run ``point`` on Kafka line ``key`` on a fresh ``topic``, then delete the topic."""
    applicable(key, run, point)
    system = BY_KEY[key]
    bootstrap = peers.bootstrap(brokers)
    replicas = point.get("replication_factor", 1)
    if replicas > brokers:
        raise NotApplicableError(f"{replicas} replicas need {replicas} brokers; the peer has {brokers}")
    config = {"min.insync.replicas": str(min_insync(point))}
    if system.fsync:
        config["flush.messages"] = "1"
    try:
        kafka_peer.create_topic(bootstrap, topic, point["partitions"], replicas, config)
        try:
            if system.tools:
                return _tools_run(run, point, bootstrap, topic)
            return confluent_run(run, point, bootstrap, topic)
        finally:
            _delete_topic(bootstrap, topic)
    except NotApplicableError:
        raise
    except Exception as err:  # (confluent-kafka raises its own KafkaException): the study keeps it as a finding
        raise KStreamError(f"{system.label} ({system.durability}): {err}") from err


def _delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})  # (kept alive until the deletion answers)
    admin.delete_topics([topic])[topic].result(60)


def _tools_run(run: str, point: dict[str, Any], bootstrap: str, topic: str) -> PerfResult:
    count, size = records(point), point["record_size"]
    config = dict(TOOLS_PRODUCER_CONFIG, **producer_config(point))
    if run == "produce":
        return kafka_tools.producer_performance(bootstrap, topic, count, size, config,
                                                point.get("payload", "random"), point.get("producers", 1))
    if run == "consume":
        peer.confluent_produce(bootstrap, topic, count, size, {"acks": "1"}, point.get("payload", "random"),
                               spread_over=point["partitions"])
        return kafka_tools.consumer_performance(bootstrap, topic, count, consumer_config(point))
    assert run == "end_to_end", run
    return kafka_tools.end_to_end_latency(bootstrap, topic, min(count, TOOLS_LATENCY_RECORDS),
                                          point.get("acks", "1"), size)
