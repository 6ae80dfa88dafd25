"""The mirror's input, checked before anything runs (no broker needed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kstream.errors import ConfigError
from kstream.mirror import MirrorOptions, parse_endpoint
from kstream.mirror.topic_configs import kafka_to_kstream, kstream_to_kafka
from kstream.tools.cli import mirror as mirror_cli
from kstream.tools.cli.main import cli


def test_endpoints_are_kafka_host_port_or_cluster_path():
    assert parse_endpoint("kafka:a:9092,b:9093").address == "a:9092,b:9093"
    assert parse_endpoint("cluster:./data").address == "./data"
    for bad in ("kafka:nohost", "kafka:", "cluster:", "s3://x", "kafka:h:port"):
        with pytest.raises(ConfigError, match="--from"):
            parse_endpoint(bad, "--from")


def test_options_need_one_kafka_side_and_topics_or_a_pattern():
    kafka, cluster = parse_endpoint("kafka:h:1"), parse_endpoint("cluster:/x")
    with pytest.raises(ConfigError, match="one side is kafka"):
        MirrorOptions(cluster, cluster, "n", topics=("t",))
    with pytest.raises(ConfigError, match="either by name"):
        MirrorOptions(kafka, cluster, "n")
    with pytest.raises(ConfigError, match="either by name"):
        MirrorOptions(kafka, cluster, "n", topics=("t",), pattern="t.*")
    with pytest.raises(ConfigError, match="not a regular expression"):
        MirrorOptions(kafka, cluster, "n", pattern="(")
    with pytest.raises(ConfigError, match="internal"):
        MirrorOptions(kafka, cluster, "n", topics=("__consumer_offsets",))
    options = MirrorOptions(kafka, cluster, "n", pattern="a.*")
    assert options.group == "__mirror.n" and options.offset_syncs_topic == "__mirror.n.offset-syncs"
    assert options.selects("abc") and not options.selects("xabc") and not options.selects("__abc")


def test_chunk_sizes_have_bounds():
    kafka, cluster = parse_endpoint("kafka:h:1"), parse_endpoint("cluster:/x")
    options = MirrorOptions(kafka, cluster, "n", topics=("t",))
    assert (options.chunk_records, options.chunk_bytes) == (50_000, 64 << 20)
    for records in (0, 1_000_001):
        with pytest.raises(ConfigError, match="chunk records"):
            MirrorOptions(kafka, cluster, "n", topics=("t",), chunk_records=records)
    for size in (1023, (1 << 30) + 1):
        with pytest.raises(ConfigError, match="chunk bytes"):
            MirrorOptions(kafka, cluster, "n", topics=("t",), chunk_bytes=size)
    result = CliRunner().invoke(cli, ["mirror", "--from", "kafka:h:1", "--to", "cluster:/x", "--topics", "t",
                                      "--chunk-bytes", "10"])
    assert result.exit_code == 2 and "--chunk-bytes" in result.output


def test_configs_that_mean_the_same_translate_and_the_others_are_left_out():
    copied, left_out = kafka_to_kstream({"retention.ms": "1000", "max.message.bytes": "2000000",
                                         "min.insync.replicas": "2", "compression.type": "gzip",
                                         "cleanup.policy": "compact", "flush.messages": "1"})
    assert copied == {"retention.ms": "1000", "message.max.bytes": "2000000", "cleanup.policy": "compact"}
    assert left_out == ["compression.type", "flush.messages", "min.insync.replicas"]
    copied, left_out = kstream_to_kafka({"message.max.bytes": "2000000", "compression.type": "zstd",
                                         "message.timestamp.type": "LogAppendTime"})
    assert copied == {"max.message.bytes": "2000000", "compression.type": "zstd"}
    assert left_out == ["message.timestamp.type"]


def test_import_kstream_and_the_cli_never_load_confluent_kafka():
    code = ("import sys, kstream, kstream.mirror, kstream.mirror.into_kstream, kstream.mirror.into_kafka, "
            "kstream.tools.cli.main; print('confluent_kafka' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_side_left_out_is_the_cluster_of_cluster(monkeypatch, tmp_path):
    """`kstream --cluster PATH mirror --from kafka:...`: the kstream side is --cluster's, as every
    other command's cluster is; neither side given is a usage error."""
    seen = []

    class Recorded:
        def __init__(self, options, _out):
            seen.append((str(options.source), str(options.target)))

        def run(self, _stop):
            raise SystemExit(0)

    monkeypatch.setattr(mirror_cli, "IntoKstream", Recorded)
    monkeypatch.setattr(mirror_cli, "IntoKafka", Recorded)
    cluster = str(tmp_path / "c")
    for args in (["--cluster", cluster, "mirror", "--from", "kafka:localhost:9092", "--topics", "t"],
                 ["mirror", "--cluster", cluster, "--to", "kafka:localhost:9092", "--topics", "t"]):
        assert CliRunner().invoke(cli, args).exit_code == 0
    assert [sorted(pair) for pair in seen] == [sorted([f"cluster:{cluster}", "kafka:localhost:9092"])] * 2
    assert seen[0][0].startswith("kafka:") and seen[1][1].startswith("kafka:")
    neither = CliRunner().invoke(cli, ["--cluster", cluster, "mirror", "--topics", "t"])
    assert neither.exit_code == 2 and "give --from or --to" in neither.output
    assert not os.path.exists(cluster)


@pytest.mark.parametrize("name", ["my mirror", "a/b", "é", "n" * 189])
def test_a_name_its_offset_syncs_topic_cannot_carry_is_refused_before_anything_is_made(tmp_path, name):
    """The name is part of the kstream topic __mirror.NAME.offset-syncs, made after the copied
    topics: a name no topic can carry was found only then (the topics made on the other side)."""
    kafka, cluster = parse_endpoint("kafka:h:1"), parse_endpoint(f"cluster:{tmp_path / 'c'}")
    with pytest.raises(ConfigError, match=r"--name .*: the mirror's offset-syncs topic __mirror\..*1-188 characters"):
        MirrorOptions(kafka, cluster, name, topics=("t",))
    result = CliRunner().invoke(cli, ["mirror", "--from", "kafka:localhost:9", "--to", f"cluster:{tmp_path / 'c'}",
                                      "--topics", "t", "--name", name])
    assert isinstance(result.exception, ConfigError) and "--name" in str(result.exception)  # main() prints it
    assert not os.path.exists(tmp_path / "c")
    assert MirrorOptions(kafka, cluster, "n" * 188, topics=("t",)).offset_syncs_topic.endswith(".offset-syncs")


def test_timeouts_and_the_progress_interval_have_bounds():
    kafka, cluster = parse_endpoint("kafka:h:1"), parse_endpoint("cluster:/x")
    for option, field in (("--timeout", "timeout_s"), ("--progress-interval", "progress_interval_s"),
                          ("poll timeout", "poll_timeout_s")):
        for value in (0.0, -1.0, 0.09, 3600.1, float("nan"), float("inf")):
            with pytest.raises(ConfigError, match=rf"{option} {value}: between 0.1 and 3600 seconds"):
                MirrorOptions(kafka, cluster, "n", topics=("t",), **{field: value})
        assert getattr(MirrorOptions(kafka, cluster, "n", topics=("t",), **{field: 3600.0}), field) == 3600.0
    for option in ("--timeout", "--progress-interval"):
        result = CliRunner().invoke(cli, ["mirror", "--from", "kafka:h:1", "--to", "cluster:/x", "--topics", "t",
                                          option, "86400"])
        assert result.exit_code == 2 and option in result.output and "3600" in result.output
