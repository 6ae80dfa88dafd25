"""What one mirror run copies and how: the CLI's options as a frozen, checked dataclass."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from kstream.errors import ConfigError
from kstream.group_names import check_group_name
from kstream.log.cluster.cluster import MAX_TOPIC_NAME, check_topic_name
from kstream.mirror.endpoints import Endpoint

MIRROR_PREFIX = "__mirror."
"""The mirror's own names: its kstream group and transactional id ``__mirror.<name>``, its
offset-syncs topic ``__mirror.<name>.offset-syncs``. Topics starting with ``__`` are never mirrored."""

MAX_CHUNK_RECORDS = 1_000_000
DEFAULT_CHUNK_RECORDS = 50_000
"""Records per chunk by default: 10,000 made the mirror 0.53-0.82 of confluent-kafka's rates at
one million records, 50,000 made it 0.89-0.98 (docs/BENCHMARKS.md, issue 23, stop 37)."""
MIN_CHUNK_BYTES = 1 << 10
MAX_CHUNK_BYTES = 1 << 30
DEFAULT_CHUNK_BYTES = 64 << 20
"""Into kstream a chunk is held in memory (and one more while the previous commits): at most this
many bytes of records (Arrow buffers) per chunk, whatever ``chunk_records`` allows."""

OFFSET_SYNCS_SUFFIX = ".offset-syncs"
MAX_NAME_CHARS = MAX_TOPIC_NAME - len(MIRROR_PREFIX) - len(OFFSET_SYNCS_SUFFIX)
"""188: the name is part of the kstream topic ``__mirror.<name>.offset-syncs`` (made after the
copied topics, so a name no topic can carry is refused before anything is made)."""
MIN_SECONDS = 0.1
MAX_SECONDS = 3600.0
"""Bounds of ``--timeout`` and ``--progress-interval`` (and the poll timeout): a tenth of a
second (a heartbeat, an fsynced status record, per tick) to an hour (a broker silent longer is
down; a heartbeat rarer than that leaves the console's stale state hours late)."""

OFFSET_SYNCS_CONFIG = {"retention.ms": "-1"}
"""The offset-syncs topic's config: kept until deleted (a translation reads every sync of a
partition; MM2 compacts its topic but keeps the history in memory, a translation here starts
from the topic)."""


@dataclass(frozen=True)
class MirrorOptions:
    """One mirror: from ``source`` to ``target``, the topics named in ``topics`` or matching
    ``pattern`` (a full match, as Kafka's ``--include``), ``name`` naming its state.

    ``chunk_records``: records per kstream transaction, at most (into kstream) or per Kafka flush
    and commit (into Kafka). ``chunk_bytes`` (into kstream): a transaction's records' bytes, at
    most (a chunk closes at the first record that reaches it). ``until_end``: copy up to each
    source partition's end at start (Kafka: the last stable offset), then stop. ``timeout_s``:
    how long a side may take to answer before the mirror gives up (an unreachable broker).
    ``exactly_once`` (into Kafka only): each chunk is one Kafka transaction carrying the records and the positions
    (kafka_transactions.py); Kafka -> kstream is always exactly once."""

    source: Endpoint
    target: Endpoint
    name: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    until_end: bool = False
    chunk_records: int = DEFAULT_CHUNK_RECORDS
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    poll_timeout_s: float = 0.5
    timeout_s: float = 10.0
    progress_interval_s: float = 5.0
    exactly_once: bool = False

    def __post_init__(self) -> None:
        if self.source.is_kafka == self.target.is_kafka:
            raise ConfigError(f"--from {self.source} and --to {self.target}: a mirror copies between "
                              "Apache Kafka and kstream, so one side is kafka:HOST:PORT and the other cluster:PATH")
        if self.exactly_once and not self.target.is_kafka:
            raise ConfigError(f"--exactly-once with --to {self.target}: Kafka -> kstream is always exactly once "
                              "(kstream transactions carry the records and the Kafka positions); --exactly-once asks "
                              "for Kafka transactions when copying into Kafka (--to kafka:HOST:PORT)")
        if bool(self.topics) == (self.pattern is not None):
            raise ConfigError("give the topics to mirror either by name (--topics A,B) or by --pattern REGEX, "
                              "one of them")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as err:
                raise ConfigError(f"--pattern {self.pattern!r} is not a regular expression: {err}") from err
        for topic in self.topics:
            if not topic or topic.startswith("__"):
                raise ConfigError(f"--topics: {topic!r} cannot be mirrored (empty, or an internal name starting '__')")
        check_group_name(self.group, "--name")
        try:
            check_topic_name(self.offset_syncs_topic)
        except ConfigError as err:
            raise ConfigError(f"--name {self.name[:40]!r}{'...' if len(self.name) > 40 else ''}: the mirror's "
                              f"offset-syncs topic {MIRROR_PREFIX}NAME{OFFSET_SYNCS_SUFFIX} cannot carry it; a name "
                              f"is 1-{MAX_NAME_CHARS} characters of ASCII letters, digits, '.', '_' and '-'") from err
        if not 1 <= self.chunk_records <= MAX_CHUNK_RECORDS:
            raise ConfigError(f"chunk records {self.chunk_records}: between 1 and {MAX_CHUNK_RECORDS}")
        if not MIN_CHUNK_BYTES <= self.chunk_bytes <= MAX_CHUNK_BYTES:
            raise ConfigError(f"chunk bytes {self.chunk_bytes}: between {MIN_CHUNK_BYTES} and {MAX_CHUNK_BYTES}")
        for option, seconds in (("--timeout", self.timeout_s), ("--progress-interval", self.progress_interval_s),
                                ("poll timeout", self.poll_timeout_s)):
            if not (math.isfinite(seconds) and MIN_SECONDS <= seconds <= MAX_SECONDS):
                raise ConfigError(f"{option} {seconds}: between {MIN_SECONDS:g} and {MAX_SECONDS:g} seconds")

    @property
    def group(self) -> str:
        """The kstream group whose committed offsets are the mirror's source positions (into
        kstream: Kafka offsets, committed in the data's transaction; into Kafka: kstream offsets)."""
        return MIRROR_PREFIX + self.name

    @property
    def transactional_id(self) -> str:
        return MIRROR_PREFIX + self.name

    @property
    def offset_syncs_topic(self) -> str:
        return f"{MIRROR_PREFIX}{self.name}{OFFSET_SYNCS_SUFFIX}"

    def selects(self, topic: str) -> bool:
        """Whether the mirror copies ``topic`` (internal ``__`` topics never)."""
        if topic.startswith("__"):
            return False
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics
