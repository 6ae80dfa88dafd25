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


@pytest.fixture
def journal(tmp_path, monkeypatch):
    """The power-cut journal (kstream.log.storage.faults) for this test: what each fsync made durable."""
    from kstream.log.storage import faults

    path = str(tmp_path / "journal")
    monkeypatch.setattr(faults, "JOURNAL", None)
    faults.start_journal(path)
    yield path
    monkeypatch.setattr(faults, "JOURNAL", None)
