"""Shared fixtures: a fresh cluster per test under tmp_path."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from kstream.admin import Admin, NewTopic


@pytest.fixture
def cluster_path(tmp_path):
    return str(tmp_path / "cluster")


@pytest.fixture
def admin(cluster_path):
    with Admin({"cluster": cluster_path}) as client:
        yield client


@pytest.fixture
def make_topic(admin):
    def make(name="t", partitions=1, config=None, schema=None):
        admin.create_topics([NewTopic(name, partitions, 1, config=config or {}, schema=schema)])[name].result()
        return name

    return make
