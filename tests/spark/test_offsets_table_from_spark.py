"""Reading the group offsets table (a Delta table) from Spark: docs/GROUPS.md's two recipes.

- deltalake -> Arrow -> ``spark.createDataFrame``: works on any session (the shared one here);
  time travel is ``DeltaTable(path, version=N)``.
- delta-spark (``spark.read.format("delta")``, ``versionAsOf``): run in a process of its own
  (tests/spark/delta_spark_recipe.py: a Delta session needs its own SQL extension and catalog)
  with the jars ``make delta-spark`` resolves into jvm/.delta-spark/<version>/ at the version
  jvm/delta-spark/pom.xml pins; skipped with one line when they are absent, so the default run
  downloads nothing. No delta-spark release is built for Spark 4.3 yet: with one built for an
  older Spark, every read fails on pyspark 4.3 with a NoSuchMethodError, and the test is an
  expected failure (strict: pinning a release that works turns it into a failure saying to drop
  the marker and update docs/GROUPS.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pyspark
import pytest
from deltalake import DeltaTable

from kstream import ConsumerGroups
from kstream.log.cluster.cluster import Cluster

pytestmark = pytest.mark.spark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POM = os.path.join(ROOT, "jvm", "delta-spark", "pom.xml")
RECIPE = os.path.join(ROOT, "tests", "spark", "delta_spark_recipe.py")
RECIPE_TIMEOUT_S = 600
COLUMNS = ["group", "topic", "partition", "offset", "leader_epoch", "metadata", "generation", "member_id",
           "committer", "commit_time", "topic_id"]


def pinned_delta_version() -> str:
    properties = ET.parse(POM).getroot().find("{http://maven.apache.org/POM/4.0.0}properties")
    assert properties is not None, f"{POM} has no <properties>"
    return properties.findtext("{http://maven.apache.org/POM/4.0.0}delta.version") or ""


DELTA_VERSION = pinned_delta_version()
JAR_DIR = os.path.join(ROOT, "jvm", ".delta-spark", DELTA_VERSION)
# delta-spark releases on Maven Central and the Spark each is built for; none is for 4.3 yet.
DELTA_BUILT_FOR_SPARK = {"4.0.0": "4.0", "4.0.1": "4.0", "4.1.0": "4.0", "4.2.0": "4.1", "4.3.0": "4.1",
                         "4.3.1": "4.1", "4.4.0": "4.2"}
SPARK_MINOR = ".".join(pyspark.__version__.split(".")[:2])
MISMATCH = DELTA_BUILT_FOR_SPARK.get(DELTA_VERSION, SPARK_MINOR) != SPARK_MINOR


class DeltaSparkBuiltForAnotherSparkError(AssertionError):
    """delta-spark failed on a method of Spark's that its Spark version had and this one lacks."""


@pytest.fixture
def offsets_table(cluster_path, make_topic):
    """A cluster whose offsets table has two groups' commits; the table's path, the version
    after the first commit, and what each group committed then and last."""
    make_topic("t", partitions=2)
    make_topic("u", partitions=1)
    service = ConsumerGroups(Cluster.open(cluster_path))
    try:
        first = service.commit("billing", {("t", 0): 0, ("t", 1): 0})  # offsets in range of empty topics
        service.commit("audit", {("u", 0): 0})
    finally:
        service.close()
        service.cluster.close()
    path = os.path.join(cluster_path, "__consumer_offsets")
    return path, first


def deltalake_rows(path: str, version: int | None = None) -> list[list]:
    table = DeltaTable(path, version=version)
    data = table.to_pyarrow_dataset().to_table(use_threads=False)
    return sorted([r["group"], r["topic"], r["partition"], r["offset"]] for r in data.to_pylist())


def test_the_deltalake_recipe_reads_the_table_and_its_history_into_spark(spark, offsets_table):
    path, first = offsets_table
    # docs/GROUPS.md "Reading the offsets table from Spark", as written there
    offsets = spark.createDataFrame(DeltaTable(path).to_pyarrow_dataset().to_table(use_threads=False))
    then = spark.createDataFrame(DeltaTable(path, version=first).to_pyarrow_dataset().to_table(use_threads=False))
    assert offsets.columns == COLUMNS
    now_rows = sorted([r.group, r.topic, r.partition, r.offset] for r in offsets.collect())
    assert now_rows == [["audit", "u", 0, 0], ["billing", "t", 0, 0], ["billing", "t", 1, 0]]
    assert sorted([r.group, r.topic, r.partition, r.offset] for r in then.collect()) == [
        ["billing", "t", 0, 0], ["billing", "t", 1, 0]]
    assert offsets.filter("`group` = 'billing'").count() == 2


@pytest.mark.delta_spark
@pytest.mark.skipif(not os.path.isdir(JAR_DIR), reason=f"no delta-spark {DELTA_VERSION} jars in "
                    f"{os.path.relpath(JAR_DIR, ROOT)} (make delta-spark resolves them)")
@pytest.mark.xfail(MISMATCH, raises=DeltaSparkBuiltForAnotherSparkError, strict=True,
                   reason=f"delta-spark {DELTA_VERSION} is built for Spark {DELTA_BUILT_FOR_SPARK.get(DELTA_VERSION)}, "
                          f"not pyspark {pyspark.__version__}'s: its reads fail with NoSuchMethodError "
                          "(docs/GROUPS.md)")
def test_the_delta_spark_recipe_reads_the_table_and_travels_in_time(offsets_table):
    path, first = offsets_table
    result = subprocess.run([sys.executable, RECIPE, JAR_DIR, path, str(first)], capture_output=True, text=True,
                            timeout=RECIPE_TIMEOUT_S, check=False)
    if result.returncode != 0:
        error = next((line for line in result.stderr.splitlines() if "Error" in line), result.stderr[-2000:])
        if "java.lang.NoSuchMethodError" in result.stderr:
            raise DeltaSparkBuiltForAnotherSparkError(f"delta-spark {DELTA_VERSION} on pyspark {pyspark.__version__}: "
                                                 f"{error}")
        pytest.fail(f"the delta-spark recipe failed (exit {result.returncode}): {result.stderr[-4000:]}")
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["columns"] == COLUMNS
    assert got["current"] == deltalake_rows(path)
    assert got["at_version"] == deltalake_rows(path, first)
    assert got["versions"] == list(range(DeltaTable(path).version() + 1))
