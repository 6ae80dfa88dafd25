"""One SparkSession (local[2]) for the whole test run; Spark's Python workers use this interpreter.

The kstream JVM reader's jar is on it when built (as kstream.jars.with_jar puts it on every session
kstream builds; reads choose their reader with option 'reader', docs/JVM_READER.md), and so are
Spark's Kafka connector's jars when `make kafka` resolved them (docs/KAFKA_PEER.md): spark.jars is
fixed when the JVM starts, so the kstream tests and the connector's tests
(tests/spark/test_kafka_spark_connector.py) share this one session."""

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

    from kstream.jars import JARS_CONF, jar_path
    from kstream.spark_setup import start_callback_server
    from kstream.tools.perf.kafka_peer import connector_jars

    builder = SparkSession.builder
    jars = session_jars(jar_path(), BENCH_JAR, connector_jars())
    if jars:
        builder = builder.config(JARS_CONF, ",".join(jars))
    session = (builder.master("local[2]").appName("kstream-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.python.filterPushdown.enabled", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    start_callback_server(session)  # before the test process holds 1024 files (see its doc)
    yield session
    session.stop()


def session_jars(kstream_jar: str | None, bench_jar: str, kafka_connector: list[str]) -> list[str]:
    """spark.jars of the test session: the kstream reader's jar and, beside it, the bench classes'
    (the LatencyWriter of Real-time Mode tests) when built, then the connector's jars when resolved."""
    jars = []
    if kstream_jar is not None:
        jars.append(kstream_jar)
        if os.path.isfile(bench_jar):
            jars.append(bench_jar)
    return jars + list(kafka_connector)
