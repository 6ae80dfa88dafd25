"""What the Kafka tests need and how they skip without it (docs/KAFKA_PEER.md)."""

from __future__ import annotations

import importlib.util

import pytest

from kstream.tools.perf import kafka_peer


def peer_missing() -> str | None:
    """One line naming what the Kafka tests lack (java, `make kafka`'s jars, confluent-kafka), or None."""
    reason = kafka_peer.missing()
    if reason is None and importlib.util.find_spec("confluent_kafka") is None:
        reason = "no confluent-kafka (pip install -e '.[dev]')"
    return reason


def skip_without_peer() -> None:
    reason = peer_missing()
    if reason:
        pytest.skip(f"Apache Kafka peer: {reason}")
