"""Named, typed options and their parsing: the one place option names live.

Every option kstream accepts (cluster, topic, producer, consumer) is an
:class:`Option` in one of the tables below, with its Kafka name, type, default
and meaning. The tables feed validation (``ConfigError`` names the option, the
value and what is allowed), the README options table and
``conf/kstream.properties``. This is a leaf module: the storage engine and
the client API both use it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kstream.errors import ConfigError

LONG_MAX = 9223372036854775807
# Kafka's Int.MaxValue: the most a segment or a frame may hold, because offset index
# entries hold 32-bit positions (kstream.log.storage.format.MAX_SEGMENT_BYTES / MAX_MESSAGE_BYTES).
INT_MAX = 2147483647
MIN_TRANSACTION_TIMEOUT_MS = 1000  # librdkafka's floor for transaction.timeout.ms


@dataclass(frozen=True)
class Option:
    """One option: Kafka-style name, a parser from string, a default and its meaning."""

    name: str
    kind: str  # "int", "float", "bool", "str", "enum", "set", "list"
    default: Any
    doc: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    aliases: Mapping[str, str] | None = None  # value spellings, e.g. acks "-1" -> "all"
    refused: Mapping[str, str] | None = None  # values Kafka knows that kstream cannot take -> why

    def parse(self, raw: Any) -> Any:
        """The typed value of ``raw`` (a string, or already typed)."""
        if self.refused and str(raw).strip() in self.refused:
            raise ConfigError(f"option {self.name!r}: {raw!r} is not supported by kstream: "
                              f"{self.refused[str(raw).strip()]}{self._allowed()}")
        try:
            value = _PARSERS[self.kind](self, raw)
        except (TypeError, ValueError) as err:
            # librdkafka's wording first (code ported from confluent-kafka matches on it)
            raise ConfigError(
                f'Invalid value for configuration property "{self.name}": {raw}: '
                f"not a valid {_KIND_WORDS.get(self.kind, self.kind)}{self._allowed()}"
            ) from err
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(f"option {self.name!r}: {value} is below the minimum {self.minimum}"
                              f"{self._range()}")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(f"option {self.name!r}: {value} is above the maximum {self.maximum}"
                              f"{self._range()}")
        return value

    def _range(self) -> str:
        if self.minimum is None or self.maximum is None:
            return ""
        return f" (allowed: {self.minimum}..{self.maximum})"

    def _allowed(self) -> str:
        return f"; allowed: {', '.join(self.choices)}" if self.choices else ""


_KIND_WORDS = {"set": "comma-separated list", "float": "number"}


def _parse_int(option: Option, raw: Any) -> int:
    if isinstance(raw, bool):
        raise TypeError("bool is not an int")
    return int(raw)


def _parse_float(option: Option, raw: Any) -> float:
    if isinstance(raw, bool):
        raise TypeError("bool is not a float")
    value = float(raw)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("not a finite number")
    return value


def _parse_set(option: Option, raw: Any) -> str:
    """A Kafka LIST of choices (``compact,delete``): each item once, in the order of ``choices``.

    The value is one canonical string, so ``delete,compact`` and ``compact, delete`` are the same
    setting (Kafka trims the items of a LIST and does not care for their order here)."""
    items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
    given = [str(item).strip() for item in items]
    if not given or any(item not in option.choices for item in given):
        raise ValueError(raw)
    return ",".join(choice for choice in option.choices if choice in given)


def _parse_bool(option: Option, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(text)


def _parse_enum(option: Option, raw: Any) -> str:
    text = str(raw).strip()
    if option.aliases and text in option.aliases:
        text = option.aliases[text]
    if text not in option.choices:
        raise ValueError(text)
    return text


def _parse_list(option: Option, raw: Any) -> tuple[str, ...]:
    if isinstance(raw, (list, tuple)):
        return tuple(str(x) for x in raw)
    return tuple(part.strip() for part in str(raw).split(",") if part.strip())


_PARSERS: dict[str, Callable[[Option, Any], Any]] = {
    "int": _parse_int,
    "float": _parse_float,
    "set": _parse_set,
    "bool": _parse_bool,
    "str": lambda option, raw: str(raw),
    "enum": _parse_enum,
    "list": _parse_list,
}


def parse_options(
    table: Mapping[str, Option], given: Mapping[str, Any], *, what: str,
    ignore: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Defaults of ``table`` overridden by ``given``; unknown names raise ConfigError."""
    values = {name: option.default for name, option in table.items()}
    for name, raw in given.items():
        if name in ignore:
            continue
        option = table.get(name)
        if option is None:
            close = difflib.get_close_matches(name, list(table), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(f"unknown option {name!r} for {what}{hint}")
        values[name] = option.parse(raw)
    return values


def _table(*options: Option) -> dict[str, Option]:
    return {option.name: option for option in options}


_CODECS = ("none", "lz4", "zstd")
_NO_CODEC = "batches are Arrow IPC, whose buffer compression is lz4 or zstd only"
_REFUSED_CODECS = {"gzip": _NO_CODEC, "snappy": _NO_CODEC}
_DAY_MS = 24 * 3600 * 1000

# Broker-side settings: chosen when a cluster is created, stored in it.
CLUSTER_OPTIONS = _table(
    Option("log.dirs", "list", (),
           "Log dirs, one per disk (JBOD); relative ones are inside the cluster dir. Default: <cluster>/logs."),
    Option("num.partitions", "int", 1, "Partitions of a topic created without a count.", minimum=1),
    Option("default.replication.factor", "int", 1, "Replicas of a topic created without a factor.",
           minimum=1),
    Option("min.insync.replicas", "int", 1, "Replicas that must have an acks=all batch fsynced.",
           minimum=1),
    Option("log.segment.bytes", "int", 1 << 30,
           "Roll a segment at this size (at most 2147483647: index entries hold 32-bit positions).",
           minimum=1024, maximum=INT_MAX),
    Option("log.roll.ms", "int", 7 * _DAY_MS, "Roll a segment this old.", minimum=1),
    Option("log.retention.ms", "int", 7 * _DAY_MS,
           "Delete segments whose newest record is older (-1: keep forever).", minimum=-1),
    Option("log.retention.bytes", "int", -1,
           "Delete oldest segments while a partition is larger (-1: no limit).", minimum=-1),
    Option("log.retention.check.interval.ms", "int", 300_000,
           "How often a writer applies retention to a partition.", minimum=0),
    Option("log.cleaner.io.max.bytes.per.second", "float", 1.7976931348623157e308,
           "The log cleaner's bytes read + written per second, per clean (it sleeps between frames, "
           "never holding the partition lock). Default: unlimited (Kafka's Double.MaxValue): the "
           "cleaner runs inside a writer's append when due, so a limit lengthens that append; set "
           "one when a separate `kstream topics clean` shares the cores and disk with producers.",
           minimum=1.0),
    Option("log.index.interval.bytes", "int", 4096, "Bytes between sparse index entries.",
           minimum=1),
    Option("log.flush.interval.messages", "int", LONG_MAX,
           "fsync after this many messages (acks=all always fsyncs).", minimum=1),
    Option("log.flush.interval.ms", "int", LONG_MAX,
           "fsync when the oldest unflushed message is this old.", minimum=0),
    Option("message.max.bytes", "int", 8 * 1024 * 1024,
           "Largest record batch (frame) the log accepts; bigger than Kafka's 1 MiB because "
           "Arrow batches gain from size (at most 2147483647).", minimum=1024, maximum=INT_MAX),
    Option("compression.type", "enum", "producer", "Stored compression.",
           choices=("producer", *_CODECS), refused=_REFUSED_CODECS),
    Option("log.message.timestamp.type", "enum", "CreateTime", "Record timestamps.",
           choices=("CreateTime", "LogAppendTime")),
    Option("unclean.leader.election.enable", "bool", False,
           "Elect an out-of-sync replica when no in-sync one is left."),
    Option("replica.fetch.max.bytes", "int", 1 << 20,
           "Bytes a writer copies to a lagging follower per append (kstream replicator: no limit).",
           minimum=1024),
    Option("transaction.max.timeout.ms", "int", 900_000,
           "The longest transaction.timeout.ms a producer may ask (Kafka's broker setting: above it "
           "init_transactions() fails with INVALID_TRANSACTION_TIMEOUT); also how long a Spark sink "
           "task's write may stay open.", minimum=MIN_TRANSACTION_TIMEOUT_MS, maximum=INT_MAX),
    Option("auto.create.topics.enable", "bool", False,
           "Create unknown topics on first produce (off: unknown topics are an error)."),
    Option("offsets.history.retention.ms", "int", 7 * _DAY_MS,
           "How long old versions of the group offsets table (Delta) stay readable for "
           "group@version/group@timestamp reads; vacuum removes older files.", minimum=3_600_000),
)

# Topic-level name -> the cluster-level option that gives its default.
TOPIC_DEFAULTS_FROM_CLUSTER = {
    "compression.type": "compression.type",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "index.interval.bytes": "log.index.interval.bytes",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "message.max.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}

TOPIC_OPTIONS = _table(
    Option("cleanup.policy", "set", "delete",
           "delete: retention removes old segments; compact: the cleaner keeps the latest record of "
           "each key (keyless records refused); compact,delete: both.",
           choices=("compact", "delete")),
    Option("min.cleanable.dirty.ratio", "float", 0.5,
           "A compacted partition is cleaned when its uncleaned (dirty) bytes are at least this "
           "share of its cleanable bytes.", minimum=0, maximum=1),
    Option("min.compaction.lag.ms", "int", 0,
           "A record stays uncompacted at least this long after it was written.",
           minimum=0, maximum=LONG_MAX),
    Option("max.compaction.lag.ms", "int", LONG_MAX,
           "A record is eligible for cleaning at the latest this long after it was written, "
           "whatever the dirty ratio.", minimum=1, maximum=LONG_MAX),
    Option("delete.retention.ms", "int", _DAY_MS,
           "How long a tombstone (null value) of a compacted topic is kept after its segment was "
           "cleaned, so readers see the delete.", minimum=0, maximum=LONG_MAX),
    Option("tier.delta.path", "str", None,
           "The topic's Delta table (an absolute directory path or a file:// URI): the committed "
           "records of its sealed segments are copied there (`kstream tier run`, docs/TIERING.md) and "
           "retention then deletes only what the table holds. Unset: not tiered."),
    Option("tier.lag.ms", "int", 10 * 60 * 1000,
           "A tiered topic's sealed segment waits at most this long before `kstream tier run` copies "
           "it (a pass copies a partition once its oldest untiered sealed segment is this old).",
           minimum=0, maximum=365 * _DAY_MS),
    Option("tier.lag.bytes", "int", 256 << 20,
           "A tiered topic's partition is copied as soon as its untiered sealed segments hold this "
           "many bytes, even before tier.lag.ms.", minimum=1, maximum=1 << 40),
    *(
        Option(topic_name, CLUSTER_OPTIONS[cluster_name].kind, None, CLUSTER_OPTIONS[cluster_name].doc,
               choices=CLUSTER_OPTIONS[cluster_name].choices,
               minimum=CLUSTER_OPTIONS[cluster_name].minimum,
               maximum=CLUSTER_OPTIONS[cluster_name].maximum,
               refused=CLUSTER_OPTIONS[cluster_name].refused)
        for topic_name, cluster_name in TOPIC_DEFAULTS_FROM_CLUSTER.items()
    ),
)

_ACKS_ALIASES = {"-1": "all", "0": "0", "1": "1"}

PRODUCER_OPTIONS = _table(
    Option("cluster", "str", None, "Cluster path (default: $KSTREAM_CLUSTER or ./data)."),
    Option("client.id", "str", "kstream", "Name of this client in logs and metrics."),
    Option("acks", "enum", "all", "all: fsynced on min.insync.replicas; 1: written; 0: no wait.",
           choices=("all", "0", "1"), aliases=_ACKS_ALIASES),
    Option("batch.size", "int", 1_000_000, "Bytes of records per partition batch.", minimum=1),
    Option("linger.ms", "int", 5, "Longest a record waits for its batch to fill.", minimum=0),
    Option("compression.type", "enum", "none",
           "Batch compression (Arrow IPC buffers: lz4 or zstd; gzip and snappy are refused).",
           choices=_CODECS, refused=_REFUSED_CODECS),
    Option("enable.idempotence", "bool", True,
           "Producer id + sequence: a batch is retried with its sequence (retries) and the log "
           "writes it once. The id is taken from the cluster's metadata at the first send (creating "
           "a Producer writes nothing)."),
    Option("retries", "int", 3,
           "Times a batch that failed with NotEnoughReplicas or a failed log dir is sent again "
           "(idempotent producers only: others would duplicate it).", minimum=0, maximum=INT_MAX),
    Option("retry.backoff.ms", "int", 100, "Wait before each retry.", minimum=0, maximum=INT_MAX),
    Option("delivery.timeout.ms", "int", 120_000,
           "Longest a batch is retried after its first send; then its error is reported.",
           minimum=0, maximum=INT_MAX),
    Option("message.max.bytes", "int", 1_000_000,
           "Largest record the producer accepts (at most 2147483647).", minimum=1, maximum=INT_MAX),
    Option("transactional.id", "str", None,
           "Makes the producer transactional: init_transactions(), begin/commit/abort_transaction()."),
    Option("transaction.timeout.ms", "int", 60_000,
           "A transaction of this producer left open longer is aborted (by whoever next writes) and the "
           "producer fenced; at most the cluster's transaction.max.timeout.ms. With transactional.id, "
           "delivery.timeout.ms (message.timeout.ms) defaults to it and may not exceed it, as in librdkafka.",
           minimum=MIN_TRANSACTION_TIMEOUT_MS, maximum=INT_MAX),
    Option("max.in.flight.requests.per.connection", "int", 5,
           "acks=all batches written whose fsyncs may still be running (in the background) while "
           "produce() goes on; their reports wait for them. 1: wait for each batch's fsync.", minimum=1),
    Option("open.partitions.max", "int", 1000,
           "Partition handles a producer keeps open (least recently used closed beyond).", minimum=1),
    Option("partitioner", "enum", "murmur2_random",
           "Keyed: murmur2 like Kafka's Java client. Unkeyed: sticky (murmur2_random), or all to "
           "one partition, the murmur2 of an empty key (murmur2).", choices=("murmur2_random", "murmur2")),
    Option("statistics.interval.ms", "int", 0,
           "Call stats_cb with librdkafka-shaped JSON statistics this often, from poll()/flush() "
           "(0: never).", minimum=0, maximum=86_400_000),
)

CONSUMER_OPTIONS = _table(
    Option("cluster", "str", None, "Cluster path (default: $KSTREAM_CLUSTER or ./data)."),
    Option("client.id", "str", "kstream", "Name of this client in logs and metrics."),
    Option("group.id", "str", None, "Consumer group: needed for subscribe(), commit() and committed()."),
    Option("group.instance.id", "str", None,
           "Static membership: a member that comes back with the same id keeps its partitions "
           "without a rebalance."),
    Option("partition.assignment.strategy", "enum", "range", "How a group spreads partitions.",
           choices=("range", "roundrobin")),
    Option("session.timeout.ms", "int", 45_000,
           "A member with no heartbeat for this long is removed and the group rebalances "
           "(subscribe() refuses less than 100, as a broker's group.min.session.timeout.ms).",
           minimum=1, maximum=3_600_000),
    Option("heartbeat.interval.ms", "int", 3_000, "How often a member's heartbeat thread runs.",
           minimum=10),
    Option("max.poll.interval.ms", "int", 300_000,
           "Rebalance timeout: a member that does not poll (rejoin) within this is removed.",
           minimum=100),
    Option("auto.offset.reset", "enum", "latest",
           "Where to start without a valid position (none committed, or out of the log's range: deleted "
           "by retention, past the log end); `error`: report `_AUTO_OFFSET_RESET` once and wait for a seek.",
           choices=("earliest", "latest", "error"),
           aliases={"smallest": "earliest", "beginning": "earliest", "largest": "latest",
                    "end": "latest"}),
    Option("fetch.max.bytes", "int", 52_428_800, "Most bytes one fetch returns.", minimum=1),
    Option("max.partition.fetch.bytes", "int", 1_048_576,
           "Most bytes one fetch takes from one partition (at least one batch).", minimum=1),
    Option("max.poll.records", "int", 500, "Most records one poll_batch() returns by default.",
           minimum=1),
    Option("fetch.wait.max.ms", "int", 100, "Longest a poll waits between looks at the log.",
           minimum=0),
    Option("check.crcs", "bool", True, "Verify every batch's checksum on read."),
    Option("decode.max.items", "int", 1_000_000,
           "Most values one typed record converts to in poll()/consume() (list and map items, struct "
           "fields, at every nesting level; a list of nulls is stored in no bytes, so a small record can "
           "hold millions); a record over it is an error Message (_VALUE_DESERIALIZATION) and is skipped: "
           "read it with poll_batch() (Arrow), or raise this.", minimum=1, maximum=100_000_000),
    Option("enable.partition.eof", "bool", False, "Emit an EOF event at the end of a partition."),
    Option("enable.auto.commit", "bool", True,
           "With group.id: commit the positions of returned records every auto.commit.interval.ms, "
           "on rebalance and on close."),
    Option("auto.commit.interval.ms", "int", 5_000, "How often auto commit runs.", minimum=0),
    Option("enable.auto.offset.store", "bool", True,
           "Store each returned record's offset + 1 as the position commit() and auto commit use; "
           "false: only store_offsets() stores."),
    Option("statistics.interval.ms", "int", 0,
           "Call stats_cb with librdkafka-shaped JSON statistics this often, from poll()/consume() "
           "(0: never).", minimum=0, maximum=86_400_000),
    Option("isolation.level", "enum", "read_committed",
           "read_committed: up to the LSO, aborted data skipped; read_uncommitted: up to the HW.",
           choices=("read_committed", "read_uncommitted")),
)


OPTION_TABLES: dict[str, Mapping[str, Option]] = {
    "cluster": CLUSTER_OPTIONS,
    "topic": TOPIC_OPTIONS,
    "producer": PRODUCER_OPTIONS,
    "consumer": CONSUMER_OPTIONS,
}


def default_text(option: Option, table: str) -> str:
    """How a default reads in docs (topic defaults come from the cluster option)."""
    if table == "topic" and option.name in TOPIC_DEFAULTS_FROM_CLUSTER:
        return f"cluster's {TOPIC_DEFAULTS_FROM_CLUSTER[option.name]}"
    if option.default is None:
        return "(none)"
    if isinstance(option.default, bool):
        return str(option.default).lower()
    if isinstance(option.default, tuple):
        return ",".join(option.default)
    return str(option.default)


def render_properties() -> str:
    """conf/kstream.properties: every option, its default and meaning."""
    out = ["# kstream configuration: every option with its default (generated from",
           "# src/kstream/config/options.py; tests/config/test_options.py keeps this file in step).",
           "# Cluster options are fixed when a cluster is created; topic options are",
           "# per-topic overrides; producer/consumer options go in the client's config."]
    for table, options in OPTION_TABLES.items():
        out += ["", f"## {table} options"]
        for option in options.values():
            out.append(f"# {option.doc}")
            default = default_text(option, table)
            prefix = "# " if default.startswith("cluster's") or default == "(none)" else ""
            out.append(f"{prefix}{option.name}={'' if prefix else default}"
                       + (f"   (default: {default})" if prefix else ""))
    return "\n".join(out) + "\n"


def render_markdown() -> str:
    """The README options table."""
    rows = ["| scope | option | type | default | meaning |", "|---|---|---|---|---|"]
    for table, options in OPTION_TABLES.items():
        for option in options.values():
            kind = "/".join(option.choices) if option.choices else option.kind
            rows.append(f"| {table} | `{option.name}` | {kind} | {default_text(option, table)} | {option.doc} |")
    return "\n".join(rows)
