"""Offsets for a time, as a Consumer answers them, for callers below the client layer that are
handed a callable (:data:`kstream.groups.offset_reset.OffsetsAt`: the CLI's and the console's
offset resets)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kstream.client.consumer import Consumer
from kstream.message import TopicPartition


def offsets_at(config: Mapping[str, Any], keys: list[tuple[str, int]], timestamp_ms: int
               ) -> dict[tuple[str, int], int]:
    """Per partition, the first offset whose timestamp is at or after ``timestamp_ms`` (negative
    where there is none), by ``Consumer(config).offsets_for_times``."""
    with Consumer(dict(config)) as consumer:
        found = consumer.offsets_for_times([TopicPartition(t, p, timestamp_ms) for t, p in keys])
    return {(tp.topic, tp.partition): tp.offset for tp in found}
