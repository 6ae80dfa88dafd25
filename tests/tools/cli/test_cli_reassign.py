"""`kstream reassign --generate / --execute / --verify` with kafka-reassign-partitions' JSON plans
(log dirs stand for brokers)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kstream import Admin, Consumer, NewTopic, Producer, TopicPartition
from kstream.message import OFFSET_BEGINNING
from kstream.tools.cli.main import cli


def run(cluster, *args):
    return CliRunner().invoke(cli, ["--cluster", cluster, *args])


@pytest.fixture
def four_dirs(tmp_path):
    """A cluster on log dirs 1..4 with t: 2 partitions, replication factor 2, 20 records each."""
    path = str(tmp_path / "c")
    dirs = ",".join(str(tmp_path / f"d{i}") for i in range(4))
    with Admin({"cluster": path, "log.dirs": dirs}) as admin:
        admin.create_topics([NewTopic("t", 2, 2)])["t"].result()
    with Producer({"cluster": path, "acks": "all"}) as producer:
        for i in range(40):
            producer.produce("t", f"{i}".encode(), partition=i % 2)
    return path


def replicas(path):
    with Admin({"cluster": path}) as admin:
        return [list(p.replicas) for p in admin.cluster.topic("t").partitions]


def test_generate_execute_verify(four_dirs, tmp_path):
    before = replicas(four_dirs)
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"topics": [{"topic": "t"}], "version": 1}))
    generated = run(four_dirs, "reassign", "--generate", "--topics-to-move-json-file", str(topics),
                    "--broker-list", "3,4")
    assert generated.exit_code == 0, generated.output
    lines = generated.output.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[3] == "Proposed partition reassignment configuration"
    current, proposed = json.loads(lines[1]), json.loads(lines[4])
    assert [p["replicas"] for p in current["partitions"]] == before
    assert proposed["version"] == 1
    assert [(p["topic"], p["partition"], p["replicas"]) for p in proposed["partitions"]] == [
        ("t", 0, [3, 4]), ("t", 1, [4, 3])]
    assert all(len(p["log_dirs"]) == 2 for p in proposed["partitions"])
    assert replicas(four_dirs) == before  # --generate changes nothing

    plan = tmp_path / "plan.json"
    plan.write_text(lines[4])
    pending = run(four_dirs, "reassign", "--verify", "--reassignment-json-file", str(plan))
    assert pending.exit_code == 1 and "rather than [3, 4]" in pending.output
    done = run(four_dirs, "reassign", "--execute", "--reassignment-json-file", str(plan))
    assert done.exit_code == 0, done.output
    assert "Save this to use as the --reassignment-json-file option during rollback" in done.output
    assert "Successfully started partition reassignments for t-0,t-1" in done.output
    assert replicas(four_dirs) == [[3, 4], [4, 3]]
    verified = run(four_dirs, "reassign", "--verify", "--reassignment-json-file", str(plan))
    assert verified.exit_code == 0, verified.output
    assert verified.output.splitlines() == ["Status of partition reassignment:",
                                            "Reassignment of partition t-0 is completed.",
                                            "Reassignment of partition t-1 is completed."]
    with Consumer({"cluster": four_dirs}) as consumer:
        consumer.assign([TopicPartition("t", p, OFFSET_BEGINNING) for p in (0, 1)])
        seen = 0
        while consumer.poll(0.3) is not None:
            seen += 1
    assert seen == 40


@pytest.mark.parametrize("entry, message", [
    ({"topic": "t", "partition": 0, "replicas": [1, 9]}, "distinct log dir ids"),
    ({"topic": "t", "partition": 0, "replicas": [1, 1]}, "distinct log dir ids"),
    ({"topic": "t", "partition": 7, "replicas": [1, 2]}, "partition 7 does not exist"),
    ({"topic": "nope", "partition": 0, "replicas": [1, 2]}, "nope"),
    ({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/elsewhere", "any"]}, "is not log dir 1"),
    ({"topic": "t", "partition": 0}, "partitions[1] has no 'replicas'"),
])
def test_a_bad_plan_moves_nothing(four_dirs, tmp_path, entry, message):
    before = replicas(four_dirs)
    plan = tmp_path / "plan.json"
    good = {"topic": "t", "partition": 1, "replicas": [3, 4]}
    plan.write_text(json.dumps({"version": 1, "partitions": [good, entry]}))
    result = run(four_dirs, "reassign", "--execute", "--reassignment-json-file", str(plan))
    assert result.exit_code != 0 and message in str(result.exception)
    assert replicas(four_dirs) == before


def test_generate_needs_enough_log_dirs_and_modes_need_files(four_dirs, tmp_path):
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"topics": [{"topic": "t"}], "version": 1}))
    result = run(four_dirs, "reassign", "--generate", "--topics-to-move-json-file", str(topics),
                 "--broker-list", "2")
    assert result.exit_code != 0 and "replication factor 2" in str(result.exception)
    assert run(four_dirs, "reassign", "--execute").exit_code == 2
    assert run(four_dirs, "reassign").exit_code == 2


@pytest.mark.parametrize("entry, message", [
    ({"topic": "t", "partition": True, "replicas": [1, 2]}, "partitions[1].partition is true: give an integer"),
    ({"topic": "t", "partition": 0, "replicas": "0"}, 'partitions[1].replicas is "0": give a list'),
    ({"topic": "t", "partition": 0, "replicas": [True, 2]}, "partitions[1].replicas[0] is true: give an integer"),
    ({"topic": "t", "partition": 1.0, "replicas": [1, 2]}, "partitions[1].partition is 1.0: give an integer"),
    ({"topic": 5, "partition": 0, "replicas": [1, 2]}, "partitions[1].topic is 5: give a string"),
    ({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": "any"}, "partitions[1].log_dirs"),
    ({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": [1, "any"]}, "partitions[1].log_dirs[0]"),
    ("t-0", "partitions[1] is \"t-0\": give an object"),
])
def test_a_plan_of_the_wrong_types_names_the_field(four_dirs, tmp_path, entry, message):
    from kstream.errors import ConfigError

    before = replicas(four_dirs)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 1, "replicas": [3, 4]},
                                                             entry]}))
    result = run(four_dirs, "reassign", "--execute", "--reassignment-json-file", str(plan))
    assert isinstance(result.exception, ConfigError) and message in str(result.exception), result.exception
    assert replicas(four_dirs) == before


@pytest.mark.parametrize("text, message", [
    ('{"version": 1, "partitions": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper"),
    ('{"version": true, "partitions": []}', "version is true"),
    ('{"version": 1, "partitions": {"topic": "t"}}', "partitions is"),
    ("[]", "give an object"),
])
def test_a_malformed_plan_is_a_clear_error_from_the_cli_and_the_console(four_dirs, tmp_path, text, message):
    from kstream.errors import ConfigError
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.cluster.reassignment import parse_plan

    plan = tmp_path / "plan.json"
    plan.write_text(text)
    result = run(four_dirs, "reassign", "--verify", "--reassignment-json-file", str(plan))
    assert isinstance(result.exception, ConfigError) and message in str(result.exception), result.exception
    cluster = Cluster.open(four_dirs)
    try:
        with pytest.raises(ConfigError, match=message):
            parse_plan(text, cluster)  # the console's form
    finally:
        cluster.close()


@pytest.mark.parametrize("document, message", [
    ({"topics": [{"topic": 1}], "version": 1}, "topics[0].topic is 1: give a string"),
    ({"topics": "t", "version": 1}, 'topics is "t": give a list'),
])
def test_a_topics_file_of_the_wrong_types_names_the_field(four_dirs, tmp_path, document, message):
    from kstream.errors import ConfigError

    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps(document))
    result = run(four_dirs, "reassign", "--generate", "--topics-to-move-json-file", str(topics),
                 "--broker-list", "3,4")
    assert isinstance(result.exception, ConfigError) and message in str(result.exception), result.exception


def test_replicas_that_are_not_ids_are_a_usage_error(four_dirs):
    result = run(four_dirs, "reassign", "--topic", "t", "--partition", "0", "--replicas", "a,1")
    assert result.exit_code == 2 and "expected log dir ids like 1,2" in result.output
