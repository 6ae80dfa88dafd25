"""`import kstream.log` loads the storage engine only (issue 10, structure): no consumer groups,
no deltalake, no pyspark, and no client API; the package re-exports its public names lazily."""

from __future__ import annotations

import json
import subprocess
import sys

import kstream
import kstream.log

HEAVY = ("deltalake", "pyspark", "kstream.groups", "kstream.admin", "kstream.client", "kstream.source",
         "kstream.sink")


def loaded_after(statement: str) -> list[str]:
    """Modules in sys.modules after ``statement`` runs in a fresh interpreter."""
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in ("deltalake", "pyspark") or m.startswith(HEAVY)]


def test_import_kstream_log_is_light():
    modules = loaded_after("import kstream.log")
    assert heavy(modules) == []
    light = {"kstream", "kstream._lazy", "kstream._version", "kstream.error", "kstream.errors", "kstream.log"}
    assert {m for m in modules if m.startswith("kstream")} <= light


def test_a_storage_engine_leaf_loads_no_client_groups_or_spark():
    assert heavy(loaded_after("import kstream.log.storage.segment, kstream.log.cluster.cluster")) == []


def test_public_names_still_import():
    modules = loaded_after("from kstream import Producer, ConfigError, TopicPartition")
    assert "kstream.client.producer" in modules
    assert not [m for m in modules if m.split(".")[0] in ("deltalake", "pyspark")]
    for name in kstream.__all__:
        assert getattr(kstream, name) is not None, name
        assert name in dir(kstream)
    for name in kstream.log.__all__:
        assert getattr(kstream.log, name).__name__ == name
