"""One SparkSession (local[2]) for the whole test run; Spark's Python workers use this interpreter.

The kstream JVM reader's jar is on it when built (kstream.jars.with_jar), as on every session
kstream builds; reads choose their reader with option 'reader' (docs/JVM_READER.md)."""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession
    from tests.spark.jvm_support import BENCH_JAR

    from kstream.jars import jar_path, with_jar

    builder = with_jar(SparkSession.builder)
    if jar_path() is not None and os.path.isfile(BENCH_JAR):  # the LatencyWriter of Real-time Mode tests
        builder = builder.config("spark.jars", f"{jar_path()},{BENCH_JAR}")
    session = (builder.master("local[2]").appName("kstream-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.python.filterPushdown.enabled", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
