"""How one study point runs on kstream, on Tansu (a secondary peer line) and as the machine's ceiling.

Apache Kafka, the study's peer, has its own module (:mod:`kstream.tools.perf.study_kafka`).

A point is a dict of plan settings (:data:`kstream.tools.perf.plan.SETTINGS`).
Each function runs it once and returns a :class:`~kstream.tools.perf.result.PerfResult`;
the study calls them in turn, repeat after repeat, so the three systems
share the machine's state of the moment. A point the peer cannot run
(replicas on one broker, kstream-only settings) raises :class:`NotApplicableError`
with the reason, which the study records and the plots leave out.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import Any

from kstream.admin import Admin, NewTopic
from kstream.errors import KStreamError
from kstream.tools.perf import ceiling, parallel, peer, runs
from kstream.tools.perf.pair import pair
from kstream.tools.perf.result import PerfResult


class NotApplicableError(KStreamError):
    """The system cannot run this point (the reason is the message)."""


def records(point: dict[str, Any]) -> int:
    """Records per client: ``records``, capped so records x record_size <= ``max_bytes``."""
    count = int(point["records"])
    if "max_bytes" in point:
        count = min(count, max(1, point["max_bytes"] // max(1, point["record_size"])))
    return count


def min_insync(point: dict[str, Any]) -> int:
    return min(point.get("min_insync_replicas", 1), point.get("replication_factor", 1))


def producer_config(point: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {"acks": point.get("acks", "1")}
    for setting, option in (("batch_size", "batch.size"), ("linger_ms", "linger.ms"),
                            ("compression", "compression.type")):
        if setting in point:
            config[option] = point[setting]
    return config


def consumer_config(point: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for setting, option in (("max_poll_records", "max.poll.records"), ("fetch_max_bytes", "fetch.max.bytes"),
                            ("check_crcs", "check.crcs")):
        if setting in point:
            config[option] = point[setting]
    return config


# -- kstream ------------------------------------------------------------------------------------

def kstream_point(run: str, point: dict[str, Any], cluster: str, topic: str) -> PerfResult:
    """Run ``point`` on a fresh ``topic`` of the study cluster, then delete the topic."""
    if point.get("compression") in KAFKA_ONLY_CODECS:
        raise NotApplicableError(f"kstream refuses compression.type={point['compression']} (its Arrow IPC "
                                 "buffers carry lz4 or zstd); Kafka's figure stands alone here")
    base = {"cluster": cluster}
    with Admin(base) as admin:
        admin.create_topics([NewTopic(topic, point["partitions"], point.get("replication_factor", 1),
                                      config={"min.insync.replicas": min_insync(point)})])[topic].result()
    try:
        return _kstream_run(run, point, base, topic)
    finally:
        with Admin(base) as admin:
            admin.delete_topics([topic])[topic].result()


def _kstream_run(run: str, point: dict[str, Any], base: dict[str, Any], topic: str) -> PerfResult:
    count, size = records(point), point["record_size"]
    produce_job = {"topic": topic, "num_records": count, "record_size": size, "api": point.get("api", "record"),
                   "producer_config": dict(base, **producer_config(point)),
                   "payload_kind": point.get("payload", "random")}
    if run == "produce":
        produce_job["warm_up"] = point.get("warm_up", False)
        jobs = [(runs.produce, produce_job)] * point.get("producers", 1)
        threads = point.get("threads", 1)
        if threads > 1:
            if len(jobs) > 1:
                raise KStreamError("a point has producers or threads above 1, not both")
            return parallel.run_threads([(runs.produce, produce_job)] * threads)
        return parallel.run_together(jobs)
    if run == "consume":
        runs.produce(**dict(produce_job, api="batch", producer_config=dict(base, acks="1")))
        config = dict(base, **consumer_config(point))
        shares = parallel.split_partitions(point["partitions"], point.get("consumers", 1))
        return parallel.run_together([(runs.consume, {"topic": topic, "num_records": None, "partitions": share,
                                                      "consumer_config": config, "api": point.get("api", "record")})
                                      for share in shares])
    if run == "pair":
        return pair(topic, count, size, produce_job["producer_config"], dict(base, **consumer_config(point)),
                    point.get("api", "record"))
    assert run == "end_to_end", run
    return runs.end_to_end(topic, count, size, produce_job["producer_config"], dict(base),
                           point.get("throughput", 1000))


# -- Tansu, the secondary peer line -------------------------------------------------------------

KSTREAM_ONLY = ("threads", "max_poll_records", "fetch_max_bytes", "check_crcs")
"""Settings only kstream's clients have: the peers do not run a point that sets one."""
KAFKA_ONLY_CODECS = ("gzip", "snappy")


def tansu_point(run: str, point: dict[str, Any], topic: str) -> PerfResult:
    """Run ``point`` with confluent-kafka against a fresh Tansu broker (memory only: a secondary line)."""
    if not point.get("peer", True) or not point.get("tansu", True):
        raise NotApplicableError("the plan turns the Tansu line off here")
    if point.get("replication_factor", 1) > 1:
        raise NotApplicableError("one Tansu broker has no replicas")
    if point.get("api", "record") == "batch":
        raise NotApplicableError("Arrow batches are kstream's own API")
    if run == "end_to_end":
        raise NotApplicableError("end-to-end latency is measured on kstream and Kafka only")
    if point.get("warm_up", False):
        raise NotApplicableError("warming partitions up is kstream's (the peer runs each point once, cold)")
    used = [s for s in KSTREAM_ONLY if s in point and point[s] not in (1, True)]
    if used:
        raise NotApplicableError(f"kstream-only setting {used[0]}")
    if not peer.tansu_available():
        raise NotApplicableError("Tansu is not installed (pip install 'kstream[bench]')")
    with peer.tansu_broker(topic, point["partitions"]) as bootstrap:
        return confluent_run(run, point, bootstrap, topic)


def confluent_run(run: str, point: dict[str, Any], bootstrap: str, topic: str) -> PerfResult:
    """Run ``point`` with confluent-kafka's clients against the broker at ``bootstrap`` (Kafka or Tansu)."""
    count, size = records(point), point["record_size"]
    produce_job = {"bootstrap": bootstrap, "topic": topic, "num_records": count, "record_size": size,
                   "producer_config": producer_config(point), "payload_kind": point.get("payload", "random")}
    if run == "produce":
        return parallel.run_together([(peer.confluent_produce, produce_job)] * point.get("producers", 1))
    if run == "consume":
        peer.confluent_produce(**dict(produce_job, producer_config={"acks": "1"}, spread_over=point["partitions"]))
        shares = parallel.split_partitions(point["partitions"], point.get("consumers", 1))
        per_share = share_counts(count, point["partitions"], shares)
        return parallel.run_together([(peer.confluent_consume, {"bootstrap": bootstrap, "topic": topic,
                                                                 "num_records": n, "partitions": share})
                                      for share, n in zip(shares, per_share, strict=True)])
    if run == "pair":
        produced, consumed = parallel.run_clients([
            (peer.confluent_produce, produce_job),
            (peer.confluent_consume, {"bootstrap": bootstrap, "topic": topic, "num_records": count})])
        started_at = min(produced.started_at, consumed.started_at)
        return PerfResult("consumed while produced", consumed.records, consumed.ended_at - started_at, size,
                          started_at=started_at, ended_at=consumed.ended_at).finish([])
    assert run == "end_to_end", run
    return peer.confluent_end_to_end(bootstrap, topic, count, size, producer_config(point),
                                     point.get("throughput", 1000))


def share_counts(count: int, partitions: int, shares: Sequence[Sequence[int]]) -> list[int]:
    """Records each consumer finds when record ``i`` of ``count`` went to partition ``i % partitions``."""
    per_partition = [count // partitions + (1 if p < count % partitions else 0) for p in range(partitions)]
    return [sum(per_partition[p] for p in share) for share in shares]


# -- the ceiling --------------------------------------------------------------------------------

def ceiling_point(run: str, point: dict[str, Any], log_dirs: Sequence[str]) -> PerfResult:
    """Plain pyarrow doing the same bytes on the same dirs (see :mod:`kstream.tools.perf.ceiling`)."""
    if run == "end_to_end":
        raise NotApplicableError("latency has no throughput ceiling")
    clients = point.get("producers", 1) * point.get("threads", 1) if run == "produce" else 1
    batches = ceiling.make_batches(records(point) * clients, point["record_size"],
                                   point.get("batch_size", ceiling.BATCH_BYTES))
    scratch = [os.path.join(d, "study-ceiling") for d in log_dirs]
    for d in scratch:
        os.makedirs(d, exist_ok=True)
    try:
        files = [os.path.join(d, "copy.arrow") for d in scratch]
        if run == "consume":
            ceiling.raw_ipc_write(files[0], batches, fsync_each_batch=False)
            return ceiling.raw_ipc_read(files[0])
        replicas = point.get("replication_factor", 1)
        synced = min_insync(point) if point.get("acks", "1") == "all" else 0
        if replicas == 1:
            return ceiling.raw_ipc_write(files[0], batches, fsync_each_batch=bool(synced))
        if replicas > len(files):
            raise NotApplicableError(f"{replicas} copies need {replicas} log dirs; the study has {len(files)}")
        return ceiling.raw_ipc_write_copies(files[:replicas], batches, synced)
    finally:
        for d in scratch:
            shutil.rmtree(d, ignore_errors=True)
