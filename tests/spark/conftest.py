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

    from kstream.jars import with_jar

    session = (with_jar(SparkSession.builder).master("local[2]").appName("kstream-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.python.filterPushdown.enabled", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
