"""`kstream table get`: a compacted topic's latest values by key, from the command line."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
from click.testing import CliRunner

from helpers import file_tree
from kstream import Producer
from kstream.tools.cli.main import cli

COMPACT = {"cleanup.policy": "compact"}


def run(cluster, *args):
    return CliRunner().invoke(cli, ["--cluster", cluster, *args], catch_exceptions=False)


def fill(cluster_path):
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        producer.produce("users", b"one", key=b"alice")
        producer.produce("users", b"two", key=b"alice")
        producer.produce("users", b"bob", key=b"bob")
        producer.produce("users", None, key=b"bob")


def test_table_get_prints_latest_values_and_exits_1_for_keys_without_one(cluster_path, make_topic):
    make_topic("users", partitions=2, config=COMPACT)
    fill(cluster_path)
    done = run(cluster_path, "table", "get", "users", "alice")
    assert (done.exit_code, done.stdout) == (0, "two\n")
    done = run(cluster_path, "table", "get", "users", "alice", "bob", "nobody", "--print-key",
               "--property", "print.offset=true")
    assert done.exit_code == 1
    assert done.stdout == "Offset:1\talice\ttwo\n"
    assert "bob: no value (never written, or deleted)" in done.stderr and "nobody: no value" in done.stderr


def test_table_get_as_of_and_typed_topics(cluster_path, make_topic):
    make_topic("users", config=COMPACT)
    fill(cluster_path)
    assert run(cluster_path, "table", "get", "users", "alice", "--as-of", "0=1").stdout == "one\n"
    assert run(cluster_path, "table", "get", "users", "alice", "--as-of", "zero").exit_code == 2
    make_topic("typed", config=COMPACT, schema=pa.schema([("id", pa.int64())]))
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("typed", {"id": 5}, key=b"k")
    assert run(cluster_path, "table", "get", "typed", "k").stdout == '{"id":5}\n'


def test_table_get_refuses_a_topic_that_is_not_compacted_and_writes_nothing(cluster_path, make_topic):
    make_topic("users", config=COMPACT)
    make_topic("log")
    fill(cluster_path)
    before = file_tree(cluster_path)
    run(cluster_path, "table", "get", "users", "alice", "bob")
    done = subprocess.run([sys.executable, "-c", "from kstream.tools.cli.main import main; main()",
                           "--cluster", cluster_path, "table", "get", "log", "k"], capture_output=True, text=True)
    assert done.returncode == 1 and "a Table reads compacted topics only" in done.stderr
    assert file_tree(cluster_path) == before


def test_table_help_says_kafka_has_no_such_command():
    done = CliRunner().invoke(cli, ["table", "--help"])
    assert "Kafka has no key lookups" in done.output
