"""The mirror tests: Apache Kafka (the session's ``kafka_broker``) beside a kstream cluster in tmp_path."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def topic_name():
    """A topic name no other test of the session uses (the broker is shared)."""
    return f"m-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def mirror_name():
    return f"n{uuid.uuid4().hex[:8]}"
