"""The kstream CLI end to end (click's runner, one process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kstream.errors import ConfigError
from kstream.log.storage import format as fmt
from kstream.tools.cli.main import cli


def run(cluster, *args, input=None):
    result = CliRunner().invoke(cli, ["--cluster", cluster, *args], input=input, catch_exceptions=False)
    return result


def test_topics_produce_consume_dump(cluster_path):
    assert run(cluster_path, "topics", "create", "t", "--partitions", "2",
               "--config", "retention.ms=3600000").exit_code == 0
    assert run(cluster_path, "topics", "list").output.split() == ["t"]
    produced = run(cluster_path, "produce", "t", "--key-separator", ":", input="a:1\nb:2\nc:3\n")
    assert produced.exit_code == 0, produced.output
    consumed = run(cluster_path, "consume", "t", "--from-beginning", "--print-key",
                   "--max-messages", "3", "--timeout-ms", "500")
    lines = sorted(line for line in consumed.output.splitlines() if "\t" in line)
    assert lines == ["a\t1", "b\t2", "c\t3"]
    described = run(cluster_path, "topics", "describe", "t")
    assert "retention.ms=3600000" in described.output and "PartitionCount: 2" in described.output
    assert run(cluster_path, "topics", "alter", "t", "--partitions", "3").exit_code == 0
    assert "PartitionCount: 3" in run(cluster_path, "topics", "describe", "t").output
    segment = os.path.join(cluster_path, "logs", "t-0", fmt.segment_file_name(0))
    other = os.path.join(cluster_path, "logs", "t-1", fmt.segment_file_name(0))
    path = segment if os.path.exists(segment) else other
    dumped = run(cluster_path, "dump-log", path, "--print-data")
    assert dumped.exit_code == 0 and "isValid: true" in dumped.output and "| offset: 0" in dumped.output
    data = bytearray(open(path, "rb").read())
    data[-3] ^= 0x01
    open(path, "wb").write(bytes(data))
    dumped = run(cluster_path, "dump-log", path)
    assert dumped.exit_code != 0 and "isValid: false" in dumped.output
    assert run(cluster_path, "topics", "delete", "t").exit_code == 0
    assert run(cluster_path, "topics", "list").output.strip() == ""


def test_typed_topic_from_cli(cluster_path):
    result = run(cluster_path, "topics", "create", "typed", "--schema", "id:int64!,name:string")
    assert result.exit_code == 0, result.output
    assert run(cluster_path, "topics", "alter", "typed", "--add-columns", "score:float64").exit_code == 0
    assert "score:double" in run(cluster_path, "topics", "describe", "typed").output


def test_perf_produce_and_consume_json(cluster_path):
    produced = run(cluster_path, "perf", "produce", "--topic", "p", "--num-records", "5000",
                   "--record-size", "100", "--partitions", "2", "--acks", "1", "--json")
    summary = json.loads(produced.output.strip().splitlines()[-1])
    assert summary["records"] == 5000 and summary["records_per_s"] > 0
    assert set(summary["latency_ms"]) == {"avg", "max", "p50", "p95", "p99", "p99.9"}
    consumed = run(cluster_path, "perf", "consume", "--topic", "p", "--messages", "5000", "--json",
                   "--api", "batch")
    assert json.loads(consumed.output.strip().splitlines()[-1])["records"] == 5000


def test_errors_are_one_line_messages(cluster_path, make_topic):
    make_topic("other")
    result = subprocess.run([sys.executable, "-c", "from kstream.tools.cli import main; main()",
                             "--cluster", cluster_path, "produce", "missing"],
                            input=b"x\n", capture_output=True)
    assert result.returncode == 1
    assert result.stderr.decode().startswith("error: topic 'missing' does not exist")


def test_topics_create_and_alter_take_cleanup_policy_compact(cluster_path):
    created = run(cluster_path, "topics", "create", "c", "--config", "cleanup.policy=compact",
                  "--config", "delete.retention.ms=1000")
    assert created.exit_code == 0, created.output
    assert "cleanup.policy=compact" in run(cluster_path, "topics", "describe", "c").output
    altered = run(cluster_path, "topics", "alter", "c", "--config", "cleanup.policy=delete,compact")
    assert altered.exit_code == 0, altered.output
    assert "cleanup.policy=delete,compact" in run(cluster_path, "topics", "describe", "c").output
    with pytest.raises(ConfigError, match="'min.cleanable.dirty.ratio': 1.5 is above the maximum 1"):
        run(cluster_path, "topics", "alter", "c", "--config", "min.cleanable.dirty.ratio=1.5")
    assert "min.cleanable.dirty.ratio" not in run(cluster_path, "topics", "describe", "c").output


def test_topics_clean_runs_the_cleaner_once(cluster_path):
    assert run(cluster_path, "topics", "create", "c", "--config", "cleanup.policy=compact",
               "--config", "segment.bytes=1024").exit_code == 0
    for i in range(6):
        produced = run(cluster_path, "produce", "c", "--key-separator", ":", input=f"k:{i}\n")
        assert produced.exit_code == 0, produced.output
    cleaned = run(cluster_path, "topics", "clean", "c", "--force")
    assert cleaned.exit_code == 0 and "c-0: cleaned below offset" in cleaned.output, cleaned.output
    assert "4 record(s) removed" in cleaned.output, cleaned.output
    again = run(cluster_path, "topics", "clean", "c")
    assert "c-0: not cleaned: dirty ratio 0.00" in again.output, again.output
    consumed = run(cluster_path, "consume", "c", "--from-beginning", "--print-key", "--timeout-ms", "500")
    assert [line for line in consumed.output.splitlines() if "\t" in line] == ["k\t4", "k\t5"]
    first = os.path.join(cluster_path, "logs", "c-0", fmt.segment_file_name(0))
    dumped = run(cluster_path, "dump-log", first, "--print-data")
    assert "cleaned: filler" in dumped.output and "isValid: true" in dumped.output, dumped.output
