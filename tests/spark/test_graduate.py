"""docs/GRADUATE.md, run as written: a Spark job moved from kstream to Apache Kafka and a Kafka topic
pulled into kstream (issue 23).

The page's blocks run in order in a scratch directory, as a user following it would run them:
each ```python block in one namespace (a notebook) on the shared test session, which carries
Spark's Kafka connector beside kstream (tests/spark/conftest.py; the page's
``kstream.spark_session(conf=...)`` returns that running session), and each ```bash block in a
new ``bash`` (``set -euo pipefail``) with the virtualenv's ``kstream`` first on PATH. ``KAFKA`` is
the session's broker (the page's one not-run block is the user's ``export KAFKA=...``). The page's
own asserts are the checks (the kstream run read part of the input, the Kafka run the rest, the
union of both outputs is the input once each, the mirrored topic equals Kafka's); this test
checks around them what the page only prints or leaves implicit.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
from tests.docs.run_markdown import BASH, PYTHON, REPO, environment, extract_blocks

from kstream.jars import JARS_CONF

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

PAGE = os.path.join(REPO, "docs", "GRADUATE.md")
BLOCK_TIMEOUT_S = 120


def page_blocks():
    """The page's runnable blocks, in order; the not-run ones must be only those it explains."""
    blocks = extract_blocks(PAGE)
    skipped = [b for b in blocks if b.marker is not None and not b.marker.run]
    assert [b.language for b in skipped] == ["bash", "bash"], "a new not-run block: say why in this test too"
    assert skipped[0].code.startswith("export KAFKA="), skipped[0].code
    assert skipped[1].code.startswith("kafka-consumer-groups "), skipped[1].code
    others = [b for b in blocks if b.language not in BASH | PYTHON and (b.marker is None or b.marker.run)]
    assert not others, f"blocks the test would not run: {[b.where() for b in others]}"
    return [b for b in blocks if b.language in BASH | PYTHON and (b.marker is None or b.marker.run)]


def run_bash(block, cwd: str) -> str:
    result = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block.code], cwd=cwd,
                            env=environment(os.path.dirname(sys.executable)), capture_output=True, text=True,
                            timeout=BLOCK_TIMEOUT_S)
    if result.returncode != 0:
        raise AssertionError(f"{block.where()} exited with {result.returncode}\n--- block:\n{block.code}"
                             f"--- stdout:\n{result.stdout}--- stderr:\n{result.stderr}")
    return result.stdout + result.stderr


def test_the_graduation_guide_runs_end_to_end(spark, kafka_broker, tmp_path, monkeypatch):
    if "spark-sql-kafka-0-10_2.13-" not in spark.sparkContext.getConf().get(JARS_CONF, ""):
        pytest.skip("Spark's Kafka connector is not on the session (make kafka)")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KAFKA", kafka_broker)
    namespace: dict = {"__name__": "__graduate__"}
    outputs: dict[str, str] = {}
    try:
        for block in page_blocks():
            started = time.monotonic()
            if block.language in BASH:
                outputs[block.code] = run_bash(block, str(tmp_path))
            else:
                run_python(block, namespace, spark)
            query = namespace.pop("query", None)
            batches = [p["durationMs"].get("triggerExecution") for p in query.recentProgress] if query else ""
            print(f"{block.where()}: {time.monotonic() - started:.1f} s {batches}")
        check_around_the_page(spark, kafka_broker, tmp_path, namespace, outputs)
    finally:
        namespace.clear()  # the page's Kafka producers and clients, before the session's broker stops


def run_python(block, namespace: dict, spark) -> None:  # type: ignore[no-untyped-def]
    try:
        exec(compile(block.code, f"{PAGE}:{block.line}", "exec"), namespace)
    except Exception as err:
        raise AssertionError(f"docs/GRADUATE.md block at line {block.line} failed: {err!r}") from err
    finally:
        for query in spark.streams.active:  # a failed block leaves no query running
            query.stop()


def check_around_the_page(spark, kafka_broker: str, tmp_path, namespace: dict,  # type: ignore[no-untyped-def]
                          outputs: dict[str, str]) -> None:
    """What the page prints or implies, checked."""
    # step 1: `groups describe` showed the group 40 records behind (60 read of 100)
    describe = next(out for code, out in outputs.items() if "groups describe etl" in code)
    rows = [[cell.strip() for cell in re.split(r"[│┃|]", line)[1:-1]] for line in describe.splitlines()]
    lag = next(row for row in rows if "LAG" in row).index("LAG")
    assert sum(int(row[lag]) for row in rows if row and row[0] == "etl") == 40, describe

    # step 2: the translated position is the kstream group's, offset for offset (the mirror was the
    # only writer of the Kafka topics when it was taken), for every partition of clicks
    from kstream import Admin, ConsumerGroupTopicPartitions, TopicPartition

    with Admin({"cluster": namespace["cluster"]}) as admin:
        request = ConsumerGroupTopicPartitions("etl", [TopicPartition("clicks", p) for p in range(3)])
        committed = admin.list_consumer_group_offsets([request])["etl"].result().topic_partitions
    starting = json.loads((tmp_path / "starting-offsets.json").read_text())
    assert starting == {"clicks": {str(tp.partition): tp.offset for tp in committed}}
    assert sum(starting["clicks"].values()) == 60
    reset = (tmp_path / "reset.csv").read_text().split()
    assert sorted(reset) == sorted(f"clicks,{p},{o}" for p, o in starting["clicks"].items())

    # --apply committed the same offsets as etl's on Kafka
    from confluent_kafka import ConsumerGroupTopicPartitions as KafkaGroupPartitions
    from confluent_kafka import TopicPartition as KafkaTopicPartition
    from confluent_kafka.admin import AdminClient

    kafka_admin = AdminClient({"bootstrap.servers": kafka_broker})
    request = KafkaGroupPartitions("etl", [KafkaTopicPartition("clicks", p) for p in range(3)])
    on_kafka = kafka_admin.list_consumer_group_offsets([request])["etl"].result(30)
    assert {str(tp.partition): tp.offset for tp in on_kafka.topic_partitions} == starting["clicks"]

    # the kstream run's own output holds exactly the first 60 events (its sink, exactly once)
    F = namespace["F"]  # noqa: N806 - the page's name for pyspark.sql.functions
    on_kstream = (spark.read.format("kstream").option("cluster", namespace["cluster"])
                  .option("subscribe", "clicks-clean").load()
                  .select(F.get_json_object(F.col("value").cast("string"), "$.n").cast("int").alias("n")).collect())
    assert sorted(r.n for r in on_kstream) == list(range(60))

    # the reverse: offsets kept 1:1, as the page says (its assert compares kstream's and Kafka's)
    assert len(namespace["replayed"]) == 50
    assert sorted(o for p, o, _, _ in namespace["replayed"] if p == 0) == list(range(25))
    assert len(namespace["totals"]) == 4
