"""docs/SPARK.md's Python blocks, run in order in one namespace, as a notebook runs them.

The guide's first block calls ``kstream.spark_session()``, which returns the session already
running in this process (the shared test session, set up the same way). Blocks preceded by
``<!-- not run: why -->`` are skipped; every other block must run without an exception, and
the guide's own asserts check what it claims.
"""

from __future__ import annotations

import os

import pytest
from tests.docs.run_markdown import PYTHON, extract_blocks

pytestmark = pytest.mark.spark

GUIDE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "docs", "SPARK.md")


def test_the_guide_runs_in_order(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__guide__"}
    runnable = [b for b in extract_blocks(GUIDE)
                if b.language in PYTHON and (b.marker is None or b.marker.run)]
    assert len(runnable) >= 10, "the guide lost its examples"
    for block in runnable:
        try:
            exec(compile(block.code, f"{GUIDE}:{block.line}", "exec"), namespace)
        except Exception as err:
            raise AssertionError(f"docs/SPARK.md block at line {block.line} failed: {err!r}") from err
        finally:
            for query in spark.streams.active:  # a failed block leaves no query running
                query.stop()
