"""The Kafka tests: the session's broker is ``kafka_broker`` (tests/conftest.py)."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def topic_name():
    """A topic name no other test of the session uses (the broker is shared)."""
    return f"t-{uuid.uuid4().hex[:12]}"
