"""kstream.spark_session() as a notebook runs it (issue 20, item 3): a fresh Python process
whose PATH's python3 is not the virtualenv's and with no PYSPARK_PYTHON, so Spark's Python
workers would otherwise run an interpreter that cannot import kstream. Each test is its own
process with its own Spark JVM (the shared test session's JVM has the right interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from tests.spark.jvm_support import JAR, NO_JAR_REASON

pytestmark = pytest.mark.spark

README = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "README.md")

NOTEBOOK = """
import json, sys
import kstream

spark = kstream.spark_session()
cluster = sys.argv[1]
(spark.createDataFrame([("k1", "v1"), ("k2", "v2")], "key string, value string")
 .write.format("kstream").option("cluster", cluster).option("topic", "notes").mode("append").save())
def read(**options):
    frame = spark.read.format("kstream").option("cluster", cluster).option("subscribe", "notes")
    for key, value in options.items():
        frame = frame.option(key, value)
    rows = frame.load().selectExpr("cast(key as string) k", "cast(value as string) v").collect()
    return sorted([r.k, r.v] for r in rows)
# A notebook that holds many files (kstream clients keep segment files open) before its first
# foreachBatch: py4j's callback server, started late, cannot select() on a descriptor >= 1024.
held = [open(sys.argv[2]) for _ in range(1100)]
landed = []
(spark.readStream.format("kstream").option("cluster", cluster).option("subscribe", "notes")
 .option("startingOffsets", "earliest").load().writeStream
 .foreachBatch(lambda frame, batch: landed.append(frame.count()))
 .option("checkpointLocation", sys.argv[3]).trigger(availableNow=True).start().awaitTermination(120))
print(json.dumps({"read": read(), "python_read": read(reader="python"),
                  "jars": spark.sparkContext.getConf().get("spark.jars", ""),
                  "pushdown": spark.conf.get("spark.sql.python.filterPushdown.enabled"),
                  "foreach_batch_rows": sum(landed)}))
"""


def notebook_env(tmp_path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """This environment without PYSPARK_PYTHON / PYSPARK_DRIVER_PYTHON, and with a PATH whose
    python3 is a script that fails (a notebook's PATH rarely leads to the virtualenv)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python3 = bin_dir / "python3"
    python3.write_text("#!/bin/sh\necho 'this python3 is not the one with kstream' >&2\nexit 1\n")
    python3.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_script(script: str, tmp_path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:  # type: ignore[no-untyped-def]
    path = tmp_path / "notebook.py"
    path.write_text(textwrap.dedent(script))
    return subprocess.run([sys.executable, str(path), *args], env=env or notebook_env(tmp_path), cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def last_json(result: subprocess.CompletedProcess) -> dict:  # type: ignore[type-arg]
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_notebook_reads_and_writes_with_only_import_kstream_and_spark_session(cluster_path, make_topic, tmp_path):
    make_topic("notes", 1)
    out = last_json(run_script(NOTEBOOK, tmp_path, cluster_path, README, str(tmp_path / "checkpoint")))
    expected = [["k1", "v1"], ["k2", "v2"]]
    assert out["read"] == expected
    assert out["python_read"] == expected  # Spark's Python workers imported kstream
    assert out["pushdown"] == "false"
    assert out["foreach_batch_rows"] == 2  # with 1,100 files open (kstream.spark_session's callback server)
    assert (JAR in out["jars"].split(",")) if JAR else out["jars"] == ""


@pytest.mark.jvm
@pytest.mark.skipif(JAR is None, reason=NO_JAR_REASON)
def test_a_plain_session_says_which_python_spark_ran_and_spark_session_says_to_restart(
        cluster_path, make_topic, tmp_path):
    """The wrong order: a plain session (with the jar) starts the JVM with PATH's python3. The
    jar's provider names that interpreter and the fix; kstream.spark_session() afterwards
    cannot change a running JVM and says so."""
    make_topic("notes", 1)
    script = """
    import json, sys
    from pyspark.sql import SparkSession
    import kstream
    from kstream.jars import with_jar

    spark = with_jar(SparkSession.builder).master("local[1]").getOrCreate()
    errors = {}
    try:
        (spark.createDataFrame([("v",)], "value string").write.format("kstream")
         .option("cluster", sys.argv[1]).option("topic", "notes").mode("append").save())
    except Exception as e:
        errors["write"] = str(e)
    try:
        kstream.spark_session()
    except kstream.ConfigError as e:
        errors["session"] = str(e)
    print(json.dumps(errors))
    """
    errors = last_json(run_script(script, tmp_path, cluster_path))
    assert 'ConfigError: format("kstream") writes and Python reads run the kstream Python' in errors["write"]
    assert "'python3' from the Spark JVM's PATH" in errors["write"]
    assert "kstream.spark_session()" in errors["write"]
    assert "'python3' from the Spark JVM's PATH" in errors["session"]
    assert "restart the Python process" in errors["session"]


def test_update_mode_without_the_jar_fails_with_sparks_message_which_the_readme_explains(
        cluster_path, make_topic, tmp_path):
    """No kstream code runs before Spark refuses update mode without the jar (pyspark's Python
    write builder lacks it), so the message is Spark's; the README names it and the fix."""
    make_topic("clicks", 1)
    make_topic("counts", 1)
    script = """
    import sys
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[1]").config("spark.sql.shuffle.partitions", "1").getOrCreate()
    query = (spark.readStream.format("kstream").option("cluster", sys.argv[1]).option("subscribe", "clicks")
             .option("startingOffsets", "earliest").load().groupBy("key").count()
             .selectExpr("cast(count as string) as value")
             .writeStream.format("kstream").option("cluster", sys.argv[1]).option("topic", "counts")
             .option("checkpointLocation", sys.argv[2]).outputMode("update").trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    except Exception as e:
        print(str(e).splitlines()[0])
    """
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    result = run_script(script, tmp_path, cluster_path, str(tmp_path / "cp"), env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    message = "kstream does not support Update mode."
    assert message in result.stdout
    with open(README, encoding="utf-8") as f:
        readme = f.read()
    assert message in readme and "kstream.spark_session()" in readme
