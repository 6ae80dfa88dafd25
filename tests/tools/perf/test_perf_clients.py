"""`kstream perf` with several client processes, the pair run and the CSV reporter."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner

from kstream.client.consumer import Consumer
from kstream.message import TopicPartition
from kstream.tools.cli.main import cli
from kstream.tools.perf import csv_report, payload
from kstream.tools.perf.parallel import split_partitions
from kstream.tools.perf.result import PerfResult, combine


def run(cluster_path, *args):
    result = CliRunner().invoke(cli, ["--cluster", cluster_path, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def _offsets(cluster_path, topic, partitions):
    with Consumer({"cluster": cluster_path}) as consumer:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p))[1] for p in range(partitions)]


def test_two_producer_processes_sum_their_records(cluster_path, tmp_path):
    out = tmp_path / "r.csv"
    result = run(cluster_path, "perf", "produce", "--topic", "t", "--partitions", "3", "--num-records", "3000",
                 "--producers", "2", "--acks", "1", "--json", "--csv", str(out))
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["records"] == 6000 and summary["clients"] == 2
    assert len(summary["config"]["per_client_records_per_s"]) == 2
    assert sum(_offsets(cluster_path, "t", 3)) == 6000  # every record of both processes is in the log
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 1 and rows[0]["clients"] == "2" and rows[0]["records"] == "6000"
    assert float(rows[0]["latency_p99_ms"]) > 0


def test_two_consumer_processes_read_every_record_once(cluster_path):
    run(cluster_path, "perf", "produce", "--topic", "t", "--partitions", "5", "--num-records", "4000",
        "--acks", "1", "--api", "batch")
    result = run(cluster_path, "perf", "consume", "--topic", "t", "--consumers", "2", "--json")
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["records"] == 4000 and summary["clients"] == 2 and summary["record_size"] == 100


def test_several_consumers_need_a_partition_each_and_no_message_cap(cluster_path):
    run(cluster_path, "perf", "produce", "--topic", "t", "--num-records", "10", "--acks", "1")
    result = CliRunner().invoke(cli, ["--cluster", cluster_path, "perf", "consume", "--topic", "t",
                                      "--consumers", "2"])
    assert "2 consumers for 1 partitions: each consumer needs" in str(result.exception)
    result = CliRunner().invoke(cli, ["--cluster", cluster_path, "perf", "consume", "--topic", "t",
                                      "--consumers", "2", "--messages", "5"])
    assert result.exit_code == 2 and "--messages is for one consumer" in result.output


@pytest.mark.parametrize("api", ["record", "batch"])
def test_pair_counts_what_the_consumer_saw(cluster_path, api):
    result = run(cluster_path, "perf", "pair", "--topic", "p", "--partitions", "2", "--num-records", "5000",
                 "--api", api, "--json")
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["records"] == 5000 and summary["name"] == "consumed while produced"
    assert 0 <= summary["latency_ms"]["p50"] <= summary["latency_ms"]["max"]
    assert summary["config"]["producer_records_per_s"] > 0


def test_combine_sums_records_over_the_span_of_all_clients():
    a = PerfResult("sent", 100, 1.0, 10, started_at=10.0, ended_at=11.0).finish([1.0, 3.0])
    b = PerfResult("sent", 300, 2.0, 10, started_at=10.5, ended_at=12.5).finish([5.0])
    both = combine([a, b])
    assert (both.records, both.seconds, both.clients) == (400, 2.5, 2)
    assert both.records_per_s == 160 and both.mb_per_s == 400 * 10 / 2.5 / 1e6
    assert both.latency_ms["max"] == 5.0 and both.latency_ms["p50"] == 3.0


def test_split_partitions_is_round_robin():
    assert split_partitions(6, 2) == [[0, 2, 4], [1, 3, 5]]
    assert split_partitions(3, 3) == [[0], [1], [2]]


def test_csv_refuses_a_file_with_other_columns(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    result = PerfResult("sent", 1, 1.0, 1).finish([])
    with pytest.raises(Exception, match="other columns"):
        csv_report.append(str(path), [csv_report.row(result)])
    assert path.read_text() == "a,b\n1,2\n"


def test_payload_kinds():
    assert len(payload.values("random", 7)) == 1 and len(payload.values("random", 7)[0]) == 7
    varied = payload.values("varied", 50)
    assert len(varied) == payload.POOL and len(set(varied)) == payload.POOL
    text = payload.values("text", 300)
    assert all(len(v) == 300 for v in text) and text[0].startswith(b"{")
    with pytest.raises(Exception, match="payload 'x'"):
        payload.values("x", 1)
    with pytest.raises(Exception, match="record size"):
        payload.values("random", payload.MAX_RECORD_SIZE + 1)


def test_warm_up_writes_one_record_per_partition_outside_the_count(cluster_path, make_topic):
    from kstream.tools.perf import runs

    make_topic("w", partitions=4)
    result = runs.produce("w", 1000, 10, {"cluster": cluster_path, "acks": "1"}, warm_up=True)
    assert result.records == 1000 and result.config["warm_up"] is True
    assert sum(_offsets(cluster_path, "w", 4)) == 1004
