"""librdkafka-shaped statistics for ``stats_cb``: what Burrow-like tools read, from an embedded log.

A client with ``stats_cb`` and ``statistics.interval.ms`` > 0 owns a
:class:`ClientStats`. It counts records per partition as the client sends or
hands them out (:meth:`ClientStats.sent`, :meth:`ClientStats.received`) and,
when the interval has passed, :meth:`ClientStats.maybe_emit` (called from
poll()/flush()/consume(), as librdkafka serves stats from its poll) builds
one JSON document in librdkafka's layout (STATISTICS.md) and calls
``stats_cb(json_str)``:

- top level: ``name``, ``client_id``, ``type`` (producer|consumer), ``ts``
  (monotonic µs), ``time`` (unix s), ``age`` (µs since the client started),
  ``msg_cnt``/``msg_size`` (records/bytes waiting in the producer),
  ``tx``/``txmsgs``/``txmsg_bytes``, ``rx``/``rxmsgs``/``rxmsg_bytes``;
- ``brokers``: empty. librdkafka's entries describe broker connections (round
  trips, buffers, requests in flight) and an embedded client has none; partition
  ``leader`` is the leader replica's log dir id (log dirs stand for brokers in
  ``list_topics()``);
- ``topics`` → ``partitions`` → ``{partition, leader, txmsgs, txbytes, rxmsgs, rxbytes,
  msgq_cnt, next_offset, app_offset, stored_offset, committed_offset, lo_offset, hi_offset,
  ls_offset, consumer_lag, consumer_lag_stored}`` (-1 where unknown, as librdkafka);
- consumers in a group: ``cgrp`` with ``state``, ``join_state`` and ``assignment_size``.

What the counters count is the client's own traffic; offsets are read from the
log when the document is built (a few stat calls per partition per interval).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

StatsCallback = Callable[[str], None]


@dataclass
class PartitionCounters:
    """What a client sent to or received from one partition."""

    msgs: int = 0
    bytes: int = 0


@dataclass
class PartitionView:
    """One partition's offsets as the client sees them when the stats are built (-1: unknown)."""

    topic: str
    partition: int
    leader: int = -1
    msgq_cnt: int = 0
    next_offset: int = -1
    app_offset: int = -1
    stored_offset: int = -1
    committed_offset: int = -1
    lo_offset: int = -1
    hi_offset: int = -1
    ls_offset: int = -1


@dataclass
class ClientStats:
    """Counters of one client and the builder of its statistics documents."""

    kind: str  # "producer" | "consumer"
    client_id: str
    interval_ms: int
    callback: StatsCallback
    name: str = ""
    started: float = field(default_factory=time.monotonic)
    tx: dict[tuple[str, int], PartitionCounters] = field(default_factory=dict)
    rx: dict[tuple[str, int], PartitionCounters] = field(default_factory=dict)
    _next: float = 0.0

    def __post_init__(self) -> None:
        self.name = self.name or f"{self.client_id}#{self.kind}-{id(self) & 0xFFFF}"
        self._next = self.started + self.interval_ms / 1000.0

    def sent(self, topic: str, partition: int, records: int, size: int) -> None:
        counters = self.tx.setdefault((topic, partition), PartitionCounters())
        counters.msgs += records
        counters.bytes += size

    def received(self, topic: str, partition: int, records: int, size: int) -> None:
        counters = self.rx.setdefault((topic, partition), PartitionCounters())
        counters.msgs += records
        counters.bytes += size

    def due(self) -> bool:
        return time.monotonic() >= self._next

    def maybe_emit(self, build: Callable[[], dict[str, Any]]) -> bool:
        """Call the callback with ``build()``'s document if the interval has passed."""
        document = self.render_if_due(build)
        if document is None:
            return False
        self.callback(document)
        return True

    def render_if_due(self, build: Callable[[], dict[str, Any]]) -> str | None:
        """``build()``'s document as JSON if the interval has passed (and the next interval
        starts), else None: for a client that builds it under its lock and calls the callback
        after releasing it."""
        now = time.monotonic()
        if now < self._next:
            return None
        self._next = now + self.interval_ms / 1000.0
        return json.dumps(build())

    def document(self, views: Iterable[PartitionView], msg_cnt: int = 0,
                 msg_size: int = 0, cgrp: dict[str, Any] | None = None) -> dict[str, Any]:
        """The statistics document (see the module docstring)."""
        now = time.monotonic()
        topics: dict[str, Any] = {}
        for view in views:
            key = (view.topic, view.partition)
            tx = self.tx.get(key, PartitionCounters())
            rx = self.rx.get(key, PartitionCounters())
            lag = -1 if view.hi_offset < 0 or view.app_offset < 0 else max(0, view.hi_offset - view.app_offset)
            stored_lag = (-1 if view.hi_offset < 0 or view.committed_offset < 0
                          else max(0, view.hi_offset - view.committed_offset))
            topic = topics.setdefault(view.topic, {"topic": view.topic, "age": 0, "metadata_age": 0,
                                                   "partitions": {}})
            topic["partitions"][str(view.partition)] = {
                "partition": view.partition, "broker": view.leader, "leader": view.leader,
                "desired": True, "unknown": False, "msgq_cnt": view.msgq_cnt, "msgq_bytes": 0,
                "xmit_msgq_cnt": 0, "xmit_msgq_bytes": 0, "fetchq_cnt": 0, "fetchq_size": 0,
                "fetch_state": "active" if self.kind == "consumer" else "none",
                "query_offset": -1, "next_offset": view.next_offset, "app_offset": view.app_offset,
                "stored_offset": view.stored_offset, "commited_offset": view.committed_offset,
                "committed_offset": view.committed_offset, "eof_offset": -1,
                "lo_offset": view.lo_offset, "hi_offset": view.hi_offset, "ls_offset": view.ls_offset,
                "consumer_lag": lag, "consumer_lag_stored": stored_lag,
                "txmsgs": tx.msgs, "txbytes": tx.bytes, "rxmsgs": rx.msgs, "rxbytes": rx.bytes,
                "msgs": tx.msgs + rx.msgs, "rx_ver_drops": 0, "msgs_inflight": 0,
            }
        txmsgs = sum(c.msgs for c in self.tx.values())
        rxmsgs = sum(c.msgs for c in self.rx.values())
        document: dict[str, Any] = {
            "name": self.name, "client_id": self.client_id, "type": self.kind,
            "ts": int(now * 1_000_000), "time": int(time.time()),
            "age": int((now - self.started) * 1_000_000), "replyq": 0,
            "msg_cnt": msg_cnt, "msg_size": msg_size, "msg_max": 0, "msg_size_max": 0,
            "simple_cnt": 0, "metadata_cache_cnt": len(topics),
            "tx": txmsgs, "tx_bytes": sum(c.bytes for c in self.tx.values()), "txmsgs": txmsgs,
            "txmsg_bytes": sum(c.bytes for c in self.tx.values()),
            "rx": rxmsgs, "rx_bytes": sum(c.bytes for c in self.rx.values()), "rxmsgs": rxmsgs,
            "rxmsg_bytes": sum(c.bytes for c in self.rx.values()),
            "brokers": {}, "topics": topics,
        }
        if cgrp is not None:
            document["cgrp"] = cgrp
        return document
