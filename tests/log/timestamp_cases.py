"""The one table of offset-for-timestamp cases, as data, and the builder that writes each as a log.

Every reader of the engine must answer these the same way: the Python face
(:func:`kstream.log.offset_for_timestamp`, tests/log/test_face_timestamps.py), and, through
the shared vectors (tests/jvm/vectors.py puts each case's log files and expected offsets in the
vectors), the Java reader's ``TimestampLookup`` (``TimestampVectorTest``). The callers' tests
(admin, consumer, CLI, Spark) build cases from here too.

The rule (kstream/log/timestamps.py): the earliest offset in [log start, end) whose record a
reader at the isolation level is handed and whose timestamp is >= the target; end is the HW
(read_uncommitted) or the LSO (read_committed); control frames never answer; aborted records
do not answer under read_committed. ``None``: no such record (Kafka's -1 / null).

A case is a partition written frame by frame with exact header timestamps (a marker's too, as
Kafka's coordinator stamps its markers; a LogAppendTime frame's too), each frame where the
table says (``new_segment`` rolls before it), then ``delete_below`` (DeleteRecords: whole
segments) for a retention gap. Frames are appended through the partition (kstream's own append
path: indexes, .txnindex, HW); transactions are written as their frames only (no SQLite rows),
which is what a reader of the files sees. Timestamps in the table are ms after :data:`T0`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kstream import Admin, NewTopic
from kstream.log.cluster import record_deletion
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.partition_log import EncodedBatch
from kstream.log.storage.records import PayloadCodec, batch_from_records

# In the future: segments roll by the age of their first frame (segment.ms) and retention
# deletes by the newest, so past times would roll and expire segments the table did not ask for.
T0 = 4_102_444_800_000  # 2100-01-01
PRODUCER_IDS = {1: 4_000_001, 2: 4_000_002}  # the table's transactional producers
ISOLATIONS = ("read_uncommitted", "read_committed")


@dataclass(frozen=True)
class Frame:
    """One frame. ``kind``: data (plain), txn (transactional data of ``producer``), commit or
    abort (that producer's marker, one offset). ``timestamps``: the records' CreateTime (a
    marker: its one timestamp). ``append_time``: a LogAppendTime frame stamped with this time
    (its records' CreateTime stays in the payload, and readers must not use it)."""

    kind: str
    timestamps: tuple[int, ...]
    producer: int = 0
    append_time: int | None = None
    new_segment: bool = False

    @property
    def control(self) -> bool:
        return self.kind in ("commit", "abort")

    @property
    def record_count(self) -> int:
        return 1 if self.control else len(self.timestamps)

    def record_timestamp(self, index: int) -> int:
        if self.append_time is not None:
            return self.append_time
        return self.timestamps[0] if self.control else self.timestamps[index]


@dataclass(frozen=True)
class Lookup:
    """A target time and the offset each isolation level must answer (None: no record)."""

    target: int
    read_uncommitted: int | None
    read_committed: int | None
    why: str


@dataclass(frozen=True)
class Case:
    name: str
    frames: tuple[Frame, ...]
    lookups: tuple[Lookup, ...]
    delete_below: int | None = None  # DeleteRecords below this offset once written
    about: str = ""


def _data(*timestamps: int, new_segment: bool = False, append_time: int | None = None) -> Frame:
    return Frame("data", timestamps, new_segment=new_segment, append_time=append_time)


def _txn(producer: int, *timestamps: int, new_segment: bool = False, append_time: int | None = None) -> Frame:
    return Frame("txn", timestamps, producer, append_time=append_time, new_segment=new_segment)


def _marker(kind: str, producer: int, timestamp: int, new_segment: bool = False,
            log_append_time: bool = False) -> Frame:
    return Frame(kind, (timestamp,), producer, timestamp if log_append_time else None, new_segment)


CASES: tuple[Case, ...] = (
    Case("plain", (_data(10, 20), _data(30), _data(40, 50, new_segment=True)), (
        Lookup(-5, 0, 0, "a target before the first record: the first record"),
        Lookup(20, 1, 1, "a record exactly at the target"),
        Lookup(25, 2, 2, "between records: the next one"),
        Lookup(35, 3, 3, "in the next segment"),
        Lookup(50, 4, 4, "the last record"),
        Lookup(51, None, None, "after the last record: none (Kafka: -1 / null)"),
    ), about="three frames over two segments"),
    Case("commit-marker", (_data(10), _txn(1, 20, 30), _marker("commit", 1, 40), _data(50)), (
        Lookup(35, 4, 4, "the COMMIT marker (offset 3, time 40) is the first frame reaching 35: skipped"),
        Lookup(40, 4, 4, "a marker exactly at the target: skipped"),
        Lookup(30, 2, 2, "the committed record itself"),
        Lookup(51, None, None, "after the last record"),
    ), about="a committed transaction whose marker is stamped after its records (as Kafka's are)"),
    Case("abort-marker", (_data(10), _txn(1, 20, 30), _marker("abort", 1, 35), _data(40)), (
        Lookup(15, 1, 4, "an aborted record at 20: read_uncommitted is handed it, read_committed is not"),
        Lookup(31, 4, 4, "only the ABORT marker (35) before the next record: skipped by both"),
        Lookup(5, 0, 0, "before everything"),
        Lookup(41, None, None, "after the last record"),
    ), about="an aborted transaction and its marker"),
    Case("aborted-interleaved", (_txn(1, 20), _data(5), _marker("abort", 1, 25), _data(30)), (
        Lookup(15, 0, 3, "read_committed: not the aborted record at 0 (Kafka's answer), whose start would hand "
                         "out the earlier-stamped record at 1 too"),
        Lookup(3, 0, 1, "read_committed: the plain record at 1"),
        Lookup(26, 3, 3, "past the ABORT marker (25)"),
    ), about="an aborted transaction with a plain record between its data and its marker"),
    Case("log-append-time", (
        _data(1, 2, append_time=100), _txn(1, 3, 4, append_time=110),
        _marker("commit", 1, 120, log_append_time=True), _data(5, append_time=120),
        _txn(2, 6, append_time=130), _marker("abort", 2, 140, log_append_time=True), _data(7, append_time=150),
    ), (
        Lookup(101, 2, 2, "the frame's append time, not the records' CreateTime (3, 4)"),
        Lookup(115, 5, 5, "the COMMIT marker (120) comes first at offset 4: skipped"),
        Lookup(120, 5, 5, "a record with the marker's time, after it"),
        Lookup(125, 6, 8, "an aborted record (130), then the ABORT marker (140)"),
        Lookup(135, 8, 8, "only the ABORT marker (140) before the last record"),
        Lookup(151, None, None, "after the last record"),
    ), about="every frame LogAppendTime: markers carry their append time, records their frame's"),
    Case("open-transaction", (_data(10), _txn(1, 20), _data(30)), (
        Lookup(5, 0, 0, "below the LSO"),
        Lookup(15, 1, None, "the open transaction's record: read_committed reads only up to the LSO (1)"),
        Lookup(25, 2, None, "past the LSO: nothing read_committed may read yet"),
    ), about="a transaction without its marker holds the LSO at its first offset"),
    Case("retention-gap", (_data(10), _data(20, new_segment=True), _data(30, 40, new_segment=True)), (
        Lookup(5, 2, 2, "the log start moved past the target: the first record left"),
        Lookup(25, 2, 2, "a deleted record would have answered: the first one left"),
        Lookup(35, 3, 3, "after the gap"),
    ), delete_below=2, about="DeleteRecords below 2 deleted the first two segments"),
    Case("kstream-markers", (_txn(1, 10), _marker("commit", 1, 0, new_segment=True), _data(20)), (
        Lookup(0, 2, 2, "the log starts at a COMMIT marker stamped 0 (kstream's CreateTime markers)"),
        Lookup(-1, 2, 2, "a target before every record"),
        Lookup(21, None, None, "after the last record"),
    ), delete_below=1, about="retention deleted the transaction's data: its marker starts the log"),
    Case("segments-of-nothing-visible", (
        _data(10), _marker("commit", 2, 15, new_segment=True), _txn(1, 20, 30, new_segment=True),
        _marker("abort", 1, 40), _data(50, new_segment=True),
    ), (
        Lookup(12, 2, 5, "a segment of one stray marker; then, under read_committed, one of an aborted "
                         "transaction"),
        Lookup(35, 5, 5, "the aborted segment's marker reaches 35: skipped"),
        Lookup(10, 0, 0, "the first record"),
    ), about="whole segments a reader gets nothing from"),
    Case("empty-log", (), (
        Lookup(0, None, None, "no record at all"),
        Lookup(-1, None, None, "no record at all, whatever the time"),
    ), about="a topic nobody wrote to: no frame in any segment"),
    Case("equal-timestamps", (_data(10, 20), _data(20, 20), _data(20, 30)), (
        Lookup(20, 1, 1, "the first of five records at 20, over three frames"),
        Lookup(21, 5, 5, "the only later one"),
        Lookup(30, 5, 5, "the last record"),
    ), about="one timestamp across frames"),
    Case("out-of-order", (_data(100, 50), _data(300), _data(200, 400, new_segment=True), _data(150)), (
        Lookup(60, 0, 0, "the first record reaches 60 (its successor does not)"),
        Lookup(120, 2, 2, "50 then 300: the first offset at or after the time, not a later 150"),
        Lookup(250, 2, 2, "300 at offset 2 comes before 400 at offset 4"),
        Lookup(350, 4, 4, "the second segment, past a record at 200"),
        Lookup(401, None, None, "after the largest timestamp"),
    ), about="timestamps that do not grow with offsets, within frames and across segments"),
)


def record_timestamps(case: Case) -> list[tuple[int, Frame]]:
    """(timestamp, frame) of every offset of the case, in offset order."""
    return [(frame.record_timestamp(i), frame) for frame in case.frames for i in range(frame.record_count)]


def oracle(case: Case, target: int, isolation: str) -> int | None:
    """The rule, by brute force over the table (keeps the hand-written answers honest)."""
    records = record_timestamps(case)
    aborted: set[int] = set()
    open_first: dict[int, int] = {}
    for offset, (_, frame) in enumerate(records):
        if frame.kind == "txn":
            open_first.setdefault(frame.producer, offset)
        elif frame.control:
            first = open_first.pop(frame.producer, None)
            if first is not None and frame.kind == "abort":
                aborted.update(o for o in range(first, offset) if records[o][1].producer == frame.producer
                               and records[o][1].kind == "txn")
    end = len(records)
    if isolation == "read_committed" and open_first:
        end = min(open_first.values())
    start = case.delete_below or 0
    for offset in range(start, end):
        timestamp, frame = records[offset]
        if frame.control or (isolation == "read_committed" and offset in aborted):
            continue
        if timestamp >= target:
            return offset
    return None


def expected(case: Case, lookup: Lookup, isolation: str) -> tuple[int, int] | None:
    """(offset, absolute timestamp) the lookup must answer, or None."""
    offset = getattr(lookup, isolation)
    if offset is None:
        return None
    return offset, T0 + record_timestamps(case)[offset][0]


def topic_name(case: Case) -> str:
    return f"ts-{case.name}"


def _encoded(frame: Frame) -> EncodedBatch:
    codec = PayloadCodec()
    if frame.control:
        value = fmt.COMMIT_MARKER if frame.kind == "commit" else fmt.ABORT_MARKER
        payload = codec.encode(batch_from_records([value], None, None, None))  # as the marker writer's
        stamp = T0 + frame.timestamps[0]
        attributes = fmt.CONTROL | fmt.TRANSACTIONAL
    else:
        create = [T0 + t for t in frame.timestamps]
        values = [f"{frame.kind}-{t}".encode() for t in frame.timestamps]
        payload = codec.encode(batch_from_records(values, None, create, None))
        stamp = None
        attributes = fmt.TRANSACTIONAL if frame.kind == "txn" else 0
    low = high = stamp
    if frame.append_time is not None:
        low = high = T0 + frame.append_time
        attributes |= fmt.LOG_APPEND_TIME
    elif stamp is None:
        low, high = T0 + min(frame.timestamps), T0 + max(frame.timestamps)
    assert low is not None and high is not None
    producer = PRODUCER_IDS[frame.producer] if frame.producer else fmt.NO_PRODUCER_ID
    return EncodedBatch(payload, frame.record_count, low, high, attributes, producer, 0 if frame.producer else -1)


def build(cluster_path: str, case: Case, topic: str | None = None) -> str:
    """Write ``case`` as partition 0 of a new topic (default ``ts-<name>``) of the cluster at
    ``cluster_path`` (created if missing); returns the topic name."""
    topic = topic or topic_name(case)
    with Admin({"cluster": cluster_path}) as admin:
        # Every frame indexed: the time index's entries (a running maximum) steer each scan.
        admin.create_topics([NewTopic(topic, 1, 1, config={"index.interval.bytes": "1"})])[topic].result()
    cluster = Cluster.open(cluster_path)
    try:
        handle = cluster.partition(topic, 0)
        try:
            for frame in case.frames:
                log = handle.leader_log
                config = log.config
                if frame.new_segment:
                    # A roll on demand: for this one append any non-empty segment is full.
                    log.config = dataclasses.replace(config, segment_bytes=1)
                try:
                    handle.append(_encoded(frame), acks="all")
                finally:
                    log.config = config
        finally:
            handle.close()
        if case.delete_below is not None:
            assert record_deletion.delete_records(cluster, topic, 0, case.delete_below) == case.delete_below
    finally:
        cluster.close()
    return topic


def vector_cases() -> list[dict]:
    """Each (case, lookup, isolation) with what must be answered: the manifest's ``timestamps``."""
    rows = []
    for case in CASES:
        for lookup in case.lookups:
            for isolation in ISOLATIONS:
                found = expected(case, lookup, isolation)
                rows.append({"case": case.name, "topic": topic_name(case), "partition": 0,
                             "target": T0 + lookup.target, "isolation": isolation, "why": lookup.why,
                             "offset": -1 if found is None else found[0],
                             "timestamp": -1 if found is None else found[1]})
    return rows
