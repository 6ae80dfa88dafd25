"""Kafka's CLI habits (issue 20): `--cluster` after the command, as Kafka's tools take
--bootstrap-server on every command, and `kstream topics create --topic foo` as kafka-topics.sh's form."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from kstream.tools.cli.main import cli


def _leaves(command: click.Command, path: tuple[str, ...] = ()):
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _leaves(sub, (*path, name))
    else:
        yield path, command


@pytest.mark.parametrize("args", [
    ["topics", "describe", "t", "--cluster", "{c}"],
    ["topics", "list", "--cluster", "{c}"],
    ["get-offsets", "--cluster", "{c}", "--topic", "t"],
    ["groups", "list", "--cluster", "{c}"],
    ["consume", "--cluster", "{c}", "--topic", "t", "--from-beginning", "--max-messages", "1"],
], ids=lambda a: " ".join(a[:2]))
def test_cluster_after_the_command_names_the_cluster(cluster_path, make_topic, monkeypatch, tmp_path, args):
    make_topic("t", 1)
    from kstream import Producer

    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("t", b"v", partition=0)
    monkeypatch.chdir(tmp_path)  # ./data (the default) does not exist here
    monkeypatch.delenv("KSTREAM_CLUSTER", raising=False)
    result = CliRunner().invoke(cli, [a.format(c=cluster_path) for a in args])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "data").exists()


def test_given_before_and_after_it_must_agree(cluster_path, make_topic):
    make_topic("t", 1)
    same = CliRunner().invoke(cli, ["--cluster", cluster_path, "topics", "describe", "t", "--cluster", cluster_path])
    assert same.exit_code == 0, same.output
    other = CliRunner().invoke(cli, ["--cluster", "/elsewhere", "topics", "describe", "t", "--cluster", cluster_path])
    assert other.exit_code == 2 and "--cluster given twice" in other.output


def test_every_command_takes_it_and_the_console_keeps_its_own():
    for path, command in _leaves(cli):
        options = [p for p in command.params if "--cluster" in getattr(p, "opts", ())]
        assert len(options) == 1, f"kstream {' '.join(path)}: {len(options)} --cluster options"
    console = cli.commands["console"]
    (option,) = [p for p in console.params if "--cluster" in getattr(p, "opts", ())]
    assert option.multiple  # the console's --cluster [NAME=]PATH, which names several clusters


def test_topics_commands_take_kafkas_topic_option(cluster_path):
    def run(*args):
        return CliRunner().invoke(cli, ["--cluster", cluster_path, "topics", *args])

    assert run("create", "--topic", "foo", "--partitions", "2").exit_code == 0
    described = run("describe", "--topic", "foo")
    assert described.exit_code == 0 and "PartitionCount: 2" in described.output
    assert run("alter", "--topic", "foo", "--partitions", "3").exit_code == 0
    assert "PartitionCount: 3" in run("describe", "foo", "--topic", "foo").output  # named twice: described once
    assert run("delete", "--topic", "foo").exit_code == 0
    both = run("create", "a", "--topic", "b")
    assert both.exit_code == 2 and "two topics named" in both.output
    neither = run("create")
    assert neither.exit_code == 2 and "name the topic" in neither.output
    assert "Topic: " not in run("describe").output  # no topics left
