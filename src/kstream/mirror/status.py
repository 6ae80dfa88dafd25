"""Mirror heartbeats: each run reports its progress into its kstream cluster, the console reads them.

A running mirror writes a status record into the internal topic ``__kstream_mirror_status``
of its kstream cluster (the source into Kafka, the target into kstream), as Kafka Connect
keeps its connectors' and tasks' states in its status topic: one partition, key
``NAME/RUN`` (the mirror's name and its run: start time, pid), value one JSON document
(:class:`MirrorStatus`). A record is written when the run has
checked its input and starts copying (``running``), at every progress tick
(``--progress-interval``: the heartbeat), and when it ends (``stopped``, or ``failed`` with
the error). The console (docs/CONSOLE.md, "Mirrors") reads the latest record of each name's
latest run (by start time: a fenced run's last words, written after its successor started,
do not hide the successor) with a consumer of no group: it writes nothing, and a cluster
without the topic has no mirrors to show. A ``running`` record older than its own ``stale_after_ms`` is shown as
``stale``: the run stopped heartbeating without saying so (SIGKILL, power cut, a hung call).

The topic is created by the first mirror that reports, with a bounded retention
(:data:`TOPIC_CONFIG`); only writers create it. A document lists at most
:data:`MAX_STATUS_PARTITIONS` partitions (a pattern over thousands of partitions), and says
how many it left out (its ``topics`` are the listed partitions'), and a record is at most
:data:`MAX_STATUS_BYTES`. A reader checks each record it uses (JSON, version, every field and its
type, the size) and raises a MirrorError naming the offset and what to do for one that is not a
status (the console shows it as an error box); it never skips one. A status write that fails
(the topic cannot be made: a log dir is offline and the cluster's default replication factor
needs it; a write fails) is logged and tried again at the next tick, and the copy goes on: the
heartbeats are the console's view of the mirror, never a reason to stop it (the console shows
the run stale meanwhile; the progress line and the Prometheus figures still have it). At the end
of a failed run, the run's error is the one raised.

Thread safety: a :class:`StatusWriter` belongs to the copying loop's thread.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa

from kstream.client.admin.client import AdminClient
from kstream.client.admin.topics import NewTopic
from kstream.client.consumer import Consumer
from kstream.client.producer import Producer
from kstream.errors import KStreamError, TopicExistsError
from kstream.message import TopicPartition
from kstream.mirror.errors import MirrorError

log = logging.getLogger(__name__)
TOPIC = "__kstream_mirror_status"
TOPIC_CONFIG: Mapping[str, str] = {
    "retention.ms": str(7 * 24 * 3600 * 1000),
    "retention.bytes": str(64 << 20),
    "segment.bytes": str(8 << 20),
}
VERSION = 1
MAX_STATUS_PARTITIONS = 5_000
"""Partitions one status document lists (about 120 bytes each as JSON): the rest are counted
in ``partitions_left_out``."""
MAX_READ_RECORDS = 20_000
"""Status records one read scans: the topic's newest ones within the time window asked."""
READ_POLL_TIMEOUT_S = 1.0
"""One poll of a status read; MAX_EMPTY_POLLS of them in a row that return nothing short of the
end the read took at its start fail the read (a MirrorError naming where it stopped)."""
MAX_EMPTY_POLLS = 3
MAX_ERROR_CHARS = 2_000
MAX_STATUS_BYTES = 4 << 20
"""Bytes of one status record's JSON value, at most: MAX_STATUS_PARTITIONS partitions and as many
topics at Kafka's longest names (249 characters) take under 3 MiB. A reader refuses a longer
value before parsing it; a writer reports a longer document as a failed status write."""
STATES = ("running", "stopped", "failed")
STALE_INTERVALS = 3  # heartbeats missed before a running mirror is shown stale


@dataclass(frozen=True)
class PartitionStatus:
    """One source partition: the next source offset the mirror copies, the source's end (last
    stable offset at the last heartbeat), the target's next offset after the copy (None:
    not known yet this run), and the lag (end - position)."""

    topic: str
    partition: int
    source_position: int | None
    source_end: int | None
    target_position: int | None
    lag: int | None


@dataclass(frozen=True)
class MirrorStatus:
    """One status record: what the console shows of a mirror run."""

    mirror: str
    run: str  # the run's identity: its start time (ms) and pid
    direction: str  # into-kstream / into-kafka
    source: str  # the endpoints as given: kafka:HOST:PORT, cluster:PATH
    target: str
    state: str  # one of STATES, as the run last said it
    started_ms: int
    heartbeat_ms: int
    interval_ms: int
    stale_after_ms: int
    until_end: bool
    exactly_once: bool
    records: int
    records_per_s: float
    transactions: int
    host: str
    pid: int
    partitions: tuple[PartitionStatus, ...] = ()
    partitions_left_out: int = 0
    error: str | None = None
    version: int = VERSION
    topics: tuple[str, ...] = field(default=())

    def state_at(self, now_ms: int) -> str:
        """``running``, ``stopped`` or ``failed`` as written; ``stale`` for a running one whose
        last heartbeat is older than ``stale_after_ms``."""
        if self.state == "running" and now_ms - self.heartbeat_ms > self.stale_after_ms:
            return "stale"
        return self.state

    def total_lag(self) -> int | None:
        known = [p.lag for p in self.partitions if p.lag is not None]
        return sum(known) if known else None

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, value: bytes, where: str) -> MirrorStatus:
        """The status in ``value``; a MirrorError naming ``where`` and what is wrong for anything
        else (not JSON, another version, a field missing, unknown or of another type, a value over
        :data:`MAX_STATUS_BYTES`): the console shows it rather than a page it cannot build."""
        if len(value) > MAX_STATUS_BYTES:
            raise MirrorError(f"{where}: {len(value)} bytes, more than a status record holds ({MAX_STATUS_BYTES}, "
                              f"MAX_STATUS_BYTES); {_BAD_RECORD_HELP}")
        try:
            doc = json.loads(value)
            if not isinstance(doc, dict):
                raise ValueError(f"a JSON {type(doc).__name__}, not an object")
            if doc.get("version") != VERSION:
                raise ValueError(f"version {doc.get('version')!r}, this kstream reads {VERSION}")
            _check_fields(doc, _STATUS_FIELDS, "")
            raw_parts = doc.pop("partitions")
            if not isinstance(raw_parts, list):
                raise ValueError(f"field 'partitions' is a JSON {type(raw_parts).__name__}, not an array")
            for i, part in enumerate(raw_parts):
                if not isinstance(part, dict):
                    raise ValueError(f"field 'partitions[{i}]' is a JSON {type(part).__name__}, not an object")
                _check_fields(part, _PARTITION_FIELDS, f"partitions[{i}].")
            raw_topics = doc.pop("topics")
            if not isinstance(raw_topics, list) or not all(isinstance(t, str) for t in raw_topics):
                raise ValueError("field 'topics' is not an array of strings")
            status = cls(**doc, partitions=tuple(PartitionStatus(**p) for p in raw_parts), topics=tuple(raw_topics))
        except (ValueError, TypeError, KeyError, RecursionError) as err:
            raise MirrorError(f"{where}: not a mirror status record ({err}); {_BAD_RECORD_HELP}") from err
        if status.state not in STATES:
            raise MirrorError(f"{where}: state {status.state!r} is not one of {STATES}; {_BAD_RECORD_HELP}")
        return status


_BAD_RECORD_HELP = (f"only `kstream mirror` writes {TOPIC}: read a window that starts after this record (the "
                    f"console's ?since_h=), or delete the topic (`kstream topics delete {TOPIC}`: running mirrors "
                    "make it again at their next heartbeat)")
_INT = (int,)
_OPTIONAL_INT = (int, type(None))
_STATUS_FIELDS: Mapping[str, tuple[type, ...]] = {
    "mirror": (str,), "run": (str,), "direction": (str,), "source": (str,), "target": (str,), "state": (str,),
    "started_ms": _INT, "heartbeat_ms": _INT, "interval_ms": _INT, "stale_after_ms": _INT,
    "until_end": (bool,), "exactly_once": (bool,), "records": _INT, "records_per_s": (int, float),
    "transactions": _INT, "host": (str,), "pid": _INT, "partitions": (list,), "partitions_left_out": _INT,
    "error": (str, type(None)), "version": _INT, "topics": (list,)}
_PARTITION_FIELDS: Mapping[str, tuple[type, ...]] = {
    "topic": (str,), "partition": _INT, "source_position": _OPTIONAL_INT, "source_end": _OPTIONAL_INT,
    "target_position": _OPTIONAL_INT, "lag": _OPTIONAL_INT}


def _check_fields(doc: Mapping[str, Any], kinds: Mapping[str, tuple[type, ...]], prefix: str) -> None:
    """ValueError unless ``doc`` has exactly the fields of ``kinds``, each of its JSON types (a
    JSON true is not a number here)."""
    if doc.keys() != kinds.keys():
        missing, unknown = sorted(kinds.keys() - doc.keys()), sorted(doc.keys() - kinds.keys())
        raise ValueError(f"fields {[prefix + m for m in missing]} missing, {[prefix + u for u in unknown]} unknown")
    for name, kind in kinds.items():
        value = doc[name]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in kind):
            raise ValueError(f"field '{prefix}{name}' is {value!r:.40}, not of {[k.__name__ for k in kind]}")


class StatusWriter:
    """Writes one run's status records into its kstream cluster (creating the topic first)."""

    def __init__(self, cluster_path: str, base: dict[str, Any]):
        self.cluster_path = cluster_path
        self._base = base  # the fields that do not change during the run
        self._producer: Producer | None = None

    def write(self, state: str, progress: Any, error: BaseException | None = None,
              now_ms: int | None = None) -> MirrorStatus:
        """Append the run's status at ``now_ms`` (None: now; ``progress``: a
        mirror.progress.Progress); flushed before returning."""
        assert state in STATES, state
        status = build_status(self._base, state, progress, error, now_ms)
        if self._producer is None:
            ensure_topic(self.cluster_path)
            self._producer = Producer({"cluster": self.cluster_path, "linger.ms": 0})
        key = f"{status.mirror}/{status.run}".encode()
        value = status.to_json()
        if len(value) > MAX_STATUS_BYTES:
            raise MirrorError(f"mirror {status.mirror}: its status is {len(value)} bytes, more than a status record "
                              f"holds ({MAX_STATUS_BYTES}, MAX_STATUS_BYTES); not written")
        self._producer.produce_batch(TOPIC, pa.table({"key": [key], "value": [value]}), partition=0)
        self._producer.flush()
        return status

    def close(self) -> None:
        if self._producer is not None:
            producer, self._producer = self._producer, None
            producer.close()


@contextmanager
def heartbeats(progress: Any, cluster_path: str, options: Any, direction: str) -> Iterator[StatusWriter]:
    """Report a run into ``cluster_path`` while the block runs: ``running`` now and at each
    progress tick, then ``stopped`` (the block returned) or ``failed`` (it raised: the block's
    error is raised, a failure to report it only logged). ``options``: the MirrorOptions."""
    writer = StatusWriter(cluster_path, run_base(options, direction))
    failing: list[str] = []  # the last failure's text while writes fail: logged once, then on recovery

    def report(state: str, progress: Any, error: BaseException | None = None) -> None:
        try:
            writer.write(state, progress, error)
        except KStreamError as status_err:
            writer.close()  # the next tick starts again: the topic, then a producer
            if not failing or failing[-1] != str(status_err):
                log.warning("mirror %s: could not report its status into %s (tried again at each tick; the copy "
                            "goes on): %s", options.name, TOPIC, status_err)
            failing[:] = [str(status_err)]
            return
        if failing:
            log.warning("mirror %s: reports its status into %s again", options.name, TOPIC)
            failing.clear()

    try:
        report("running", progress)
        progress.on_tick = lambda p: report("running", p)
        try:
            yield writer
        except BaseException as err:
            progress.on_tick = None
            report("failed", progress, err)  # the run's own error is the one to raise
            raise
        progress.on_tick = None
        report("stopped", progress)
    finally:
        progress.on_tick = None
        writer.close()


def run_base(options: Any, direction: str) -> dict[str, Any]:
    """The fields of a run's status that never change (``options``: its MirrorOptions)."""
    interval_ms = int(options.progress_interval_s * 1000)
    started_ms = int(time.time() * 1000)
    return {"mirror": options.name, "run": f"{started_ms}-{os.getpid()}", "direction": direction,
            "source": str(options.source), "target": str(options.target), "started_ms": started_ms,
            "interval_ms": interval_ms,
            # a tick may wait out a chunk's commit (each side's calls time out after timeout_s)
            "stale_after_ms": STALE_INTERVALS * interval_ms + int(2 * options.timeout_s * 1000),
            "until_end": options.until_end, "exactly_once": options.exactly_once,
            "host": socket.gethostname(), "pid": os.getpid()}


def build_status(base: Mapping[str, Any], state: str, progress: Any, error: BaseException | None = None,
                 now_ms: int | None = None) -> MirrorStatus:
    positions, ends, targets = dict(progress.positions), dict(progress.ends), dict(progress.targets)
    keys = sorted(set(positions) | set(ends))
    listed = keys[:MAX_STATUS_PARTITIONS]
    partitions = tuple(
        PartitionStatus(t, p, positions.get((t, p)), ends.get((t, p)), targets.get((t, p)),
                        None if (t, p) not in ends else max(0, ends[(t, p)] - positions.get((t, p), 0)))
        for t, p in listed)
    text = None if error is None else f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS]
    heartbeat_ms = int(time.time() * 1000) if now_ms is None else now_ms
    return MirrorStatus(**base, state=state, heartbeat_ms=heartbeat_ms, records=progress.records,
                        records_per_s=round(progress.rate(), 1), transactions=progress.transactions,
                        partitions=partitions, partitions_left_out=max(0, len(keys) - MAX_STATUS_PARTITIONS),
                        error=text, topics=tuple(sorted({t for t, _ in listed})))


def ensure_topic(cluster_path: str) -> None:
    """Create the status topic in the cluster unless it exists (writers only)."""
    admin = AdminClient({"cluster": cluster_path})
    try:
        if TOPIC in admin.list_topics().topics:
            return
        try:
            admin.create_topics([NewTopic(TOPIC, 1, config=dict(TOPIC_CONFIG))])[TOPIC].result()
        except TopicExistsError:
            pass  # another mirror created it meanwhile
    except KStreamError as err:
        raise MirrorError(f"cannot create the mirror status topic {TOPIC} in {cluster_path}: {err}") from err
    finally:
        admin.close()


def read_statuses(cluster_path: str, since_ms: int, max_records: int = MAX_READ_RECORDS) -> list[MirrorStatus]:
    """The latest status of each mirror's latest run (by start time) that reported at or after
    ``since_ms``, newest first, from at most the topic's last ``max_records`` records; []
    without the topic. Reads only (a consumer of no group, committing nothing). A record that is
    not a status (no key or value, not the JSON of :class:`MirrorStatus`) is a MirrorError; so is
    a read that gets nothing more before the end it took at its start (MAX_EMPTY_POLLS polls),
    rather than statuses from part of the topic."""
    consumer = Consumer({"cluster": cluster_path, "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        if TOPIC not in consumer.list_topics().topics:
            return []
        tp = TopicPartition(TOPIC, 0)
        low, high = consumer.get_watermark_offsets(tp)
        by_time = consumer.offsets_for_times([TopicPartition(TOPIC, 0, since_ms)])[0].offset
        if by_time < 0:
            return []  # nothing at or after since_ms
        start = max(by_time, low, high - max_records)
        latest: dict[bytes, tuple[int, bytes]] = {}
        consumer.assign([TopicPartition(TOPIC, 0, start)])
        position = start
        empty_polls = 0
        while position < high:
            batch = consumer.poll_batch(max_records, READ_POLL_TIMEOUT_S)
            if batch is None:
                # Nothing left to hand out may still be the end: only aborted records or markers
                # left below it, or retention removed the rest (the position then moved on).
                at = consumer.position([tp])[0].offset
                empty_polls = 0 if at > position else empty_polls + 1
                position = max(position, at)
                if position < high and empty_polls >= MAX_EMPTY_POLLS:
                    raise MirrorError(f"{TOPIC}: reading the mirror statuses stopped at offset {position}, before the "
                                      f"end {high}: {empty_polls} polls of {READ_POLL_TIMEOUT_S:g} s each returned "
                                      "nothing (a transaction open on the topic holds read_committed back? a slow or "
                                      "failing disk?); read again, and if it stays, check the topic with "
                                      f"`kstream get-offsets --topic {TOPIC}`")
                continue
            empty_polls = 0
            offsets = batch.column("offset").to_pylist()
            for offset, key, value in zip(offsets, batch.column("key").to_pylist(),
                                          batch.column("value").to_pylist(), strict=True):
                if offset >= high:
                    continue
                if key is None or value is None:
                    raise MirrorError(f"{TOPIC} offset {offset}: not a mirror status record (no "
                                      f"{'key' if key is None else 'value'}); {_BAD_RECORD_HELP}")
                latest[key] = (offset, value)
            position = offsets[-1] + 1
    finally:
        consumer.close()
    runs = [MirrorStatus.from_json(value, f"{TOPIC} offset {offset}") for offset, value in latest.values()]
    by_mirror: dict[str, MirrorStatus] = {}
    for status in runs:
        if status.heartbeat_ms < since_ms:
            continue
        seen = by_mirror.get(status.mirror)
        if seen is None or (status.started_ms, status.heartbeat_ms) > (seen.started_ms, seen.heartbeat_ms):
            by_mirror[status.mirror] = status
    return sorted(by_mirror.values(), key=lambda s: (-s.heartbeat_ms, s.mirror))


def status_json(status: MirrorStatus, now_ms: int) -> dict[str, Any]:
    """A status as the console's JSON endpoint gives it: the record plus ``shown_state`` (with
    ``stale``), ``heartbeat_age_ms`` and ``total_lag``."""
    return {**asdict(status), "shown_state": status.state_at(now_ms), "heartbeat_age_ms": now_ms - status.heartbeat_ms,
            "total_lag": status.total_lag()}

