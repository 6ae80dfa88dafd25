"""kstream.spark_builder's settings and interpreter choice, without starting Spark (the
notebook-style runs with a JVM are tests/spark/test_spark_setup.py)."""

from __future__ import annotations

import os
import sys

import pytest

from kstream import spark_setup


@pytest.fixture
def no_jvm(monkeypatch):
    """As in a fresh notebook: no Spark JVM yet, and no PYSPARK_* variables."""
    monkeypatch.setattr(spark_setup, "jvm_started", lambda: False)
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)


def options(builder) -> dict:  # type: ignore[no-untyped-def]
    return dict(builder._options)


def test_a_builder_gets_the_kstream_settings_and_this_interpreter(no_jvm):
    opts = options(spark_setup.spark_builder())
    assert opts["spark.sql.python.filterPushdown.enabled"] == "false"
    assert opts["spark.sql.shuffle.partitions"] == spark_setup.LOCAL_SHUFFLE_PARTITIONS
    assert os.environ["PYSPARK_DRIVER_PYTHON"] == sys.executable
    assert os.environ["PYSPARK_PYTHON"] == sys.executable


def test_the_builders_own_settings_win_and_a_cluster_master_keeps_its_shuffle_partitions(no_jvm):
    from pyspark.sql import SparkSession

    own = SparkSession.builder.config("spark.sql.shuffle.partitions", "64")
    assert options(spark_setup.spark_builder(own))["spark.sql.shuffle.partitions"] == "64"
    remote = SparkSession.builder.master("spark://host:7077")
    assert "spark.sql.shuffle.partitions" not in options(spark_setup.spark_builder(remote))


def test_a_users_pyspark_python_is_kept_and_the_driver_python_is_this_one(no_jvm, monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/udf-python")
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", "jupyter")  # a notebook launched by bin/pyspark
    spark_setup.spark_builder()
    assert os.environ["PYSPARK_PYTHON"] == "/opt/udf-python"
    assert os.environ["PYSPARK_DRIVER_PYTHON"] == sys.executable


def test_a_running_jvm_keeps_its_environment(monkeypatch):
    monkeypatch.setattr(spark_setup, "jvm_started", lambda: True)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", "jupyter")
    spark_setup.spark_builder()
    assert os.environ["PYSPARK_DRIVER_PYTHON"] == "jupyter"


def test_the_error_names_the_interpreter_spark_runs_in_sparks_order():
    assert "'jupyter' (PYSPARK_DRIVER_PYTHON of the Spark JVM)" in spark_setup.python_not_found("jupyter", "/p")
    assert "'/p' (PYSPARK_PYTHON of the Spark JVM)" in spark_setup.python_not_found(None, "/p")
    message = spark_setup.python_not_found("", None)
    assert "'python3' from the Spark JVM's PATH" in message
    assert "restart the Python process" in message and "kstream.spark_session()" in message
