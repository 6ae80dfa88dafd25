"""`kstream reassign`: move partitions between log dirs, as kafka-reassign-partitions does.

Kafka's JSON formats carry over, with log dirs standing for brokers: a broker
id is a log dir id (as `kstream log-dirs describe` and `topics describe` print
them). A plan is ``{"version": 1, "partitions": [{"topic": "t", "partition": 0,
"replicas": [1, 2], "log_dirs": ["any", "any"]}]}``; ``log_dirs`` is optional,
and each entry is ``"any"`` or the path of the log dir of the replica at the
same position (kstream has one log dir per "broker", so it can only confirm).

* ``--generate --topics-to-move-json-file F --broker-list 1,2,3`` prints the
  current assignment and a proposed one (replicas spread round-robin over the
  given log dirs, the replication factor kept). Read-only.
* ``--execute --reassignment-json-file F`` prints the current assignment (save
  it to roll back) and moves each partition: new replicas are copied and
  caught up, then the replica list switches and old copies are deleted. The
  whole plan is checked before anything moves. Unlike Kafka, the move is done
  when the command returns.
* ``--verify --reassignment-json-file F`` says, per partition, whether its
  replicas are the plan's; exit status 1 if any is not.

``--topic T --partition P --replicas 1,2`` moves one partition (kstream's
shorthand for a one-entry plan). The JSON documents are read strictly
(:mod:`kstream.tools.cli.plan_json`): a wrong type is an error naming the field.
"""

from __future__ import annotations

import json
import os
from typing import Any

import click

from kstream.errors import ConfigError
from kstream.log.cluster import replica_ops
from kstream.log.cluster.cluster import Cluster
from kstream.tools.cli import plan_json
from kstream.tools.cli.common import cluster_options

Plan = list[tuple[str, int, list[int]]]


def _read_topics(path: str) -> list[str]:
    """kafka-reassign-partitions' topics-to-move file: {"topics": [{"topic": "t"}], "version": 1}."""
    return plan_json.topics_to_move(plan_json.load_file(path, "topics-to-move file"), path)


def read_plan(path: str, cluster: Cluster) -> Plan:
    """A reassignment plan from a file, checked whole against the cluster (:func:`check_plan`)."""
    return check_plan(plan_json.load_file(path, "reassignment plan"), cluster, path)


def parse_plan(text: str, cluster: Cluster, source: str = "the plan") -> Plan:
    """A reassignment plan from JSON text (the console's form), checked as :func:`read_plan` does."""
    return check_plan(plan_json.parse_text(text, source, "reassignment plan"), cluster, source)


def check_plan(document: dict[str, Any], cluster: Cluster, path: str) -> Plan:
    """A plan document checked whole against the cluster: its fields of the right types
    (:func:`kstream.tools.cli.plan_json.plan_entries`), topics and partitions exist, replicas are
    distinct log dir ids, log_dirs (if given) agree, no partition twice (``path`` names the
    plan in messages)."""
    paths = cluster.log_dir_paths()
    plan: Plan = []
    for topic, partition, replicas, log_dirs in plan_json.plan_entries(document, path):
        if log_dirs is None:
            log_dirs = ["any"] * len(replicas)
        if len(log_dirs) != len(replicas):
            raise ConfigError(f"{topic}-{partition}: log_dirs has {len(log_dirs)} entries, replicas "
                              f"{len(replicas)}")
        for replica, log_dir in zip(replicas, log_dirs, strict=True):
            if replica in paths and log_dir != "any" and os.path.abspath(log_dir) != paths[replica]:
                raise ConfigError(f"{topic}-{partition}: log dir {log_dir!r} is not log dir {replica} "
                                  f"({paths[replica]}); in kstream a log dir is a broker: give "
                                  '"any" or its path')
        plan.append((topic, partition, replicas))
    seen: set[tuple[str, int]] = set()
    for topic, partition, replicas in plan:
        if (topic, partition) in seen:
            raise ConfigError(f"{path}: partition {topic}-{partition} is listed twice")
        seen.add((topic, partition))
        cluster.partition(topic, partition).close()  # TopicNotFound / PartitionNotFound
        if not replicas or len(set(replicas)) != len(replicas) or any(r not in paths for r in replicas):
            raise ConfigError(f"{topic}-{partition}: replicas {replicas} must be distinct log dir ids "
                              f"of {sorted(paths)} (see `kstream log-dirs describe`)")
    return plan


def plan_document(cluster: Cluster, plan: Plan) -> str:
    """A plan as Kafka prints it: one line of JSON, log_dirs filled in with the log dir paths."""
    paths = cluster.log_dir_paths()
    return json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r, "log_dirs": [paths.get(i, "any") for i in r]}
        for t, p, r in plan]}, separators=(",", ":"))


def current_plan(cluster: Cluster, keys: list[tuple[str, int]]) -> Plan:
    return [(t, p, list(cluster.topic(t).partitions[p].replicas)) for t, p in keys]


def propose(cluster: Cluster, topics: list[str], brokers: list[int]) -> Plan:
    """Each partition's replicas spread round-robin over ``brokers`` (log dir ids), keeping its
    replication factor: partition p's first replica is brokers[p mod n], followers the next ones."""
    paths = cluster.log_dir_paths()
    unknown = [b for b in brokers if b not in paths]
    if unknown or len(set(brokers)) != len(brokers) or not brokers:
        raise ConfigError(f"--broker-list {brokers}: give distinct log dir ids of {sorted(paths)}")
    plan: Plan = []
    for topic in topics:
        for placement in cluster.topic(topic).partitions:
            factor = len(placement.replicas)
            if factor > len(brokers):
                raise ConfigError(f"{topic} has replication factor {factor}: --broker-list needs at least "
                                  f"{factor} log dirs, got {len(brokers)}")
            first = placement.partition % len(brokers)
            plan.append((topic, placement.partition,
                         [brokers[(first + j) % len(brokers)] for j in range(factor)]))
    return plan


def _open(ctx: click.Context) -> Cluster:
    return Cluster.open(cluster_options(ctx)["cluster"])


@click.command()
@click.option("--generate", "mode", flag_value="generate", help="Propose a plan for --topics-to-move-json-file.")
@click.option("--execute", "mode", flag_value="execute", help="Carry out --reassignment-json-file.")
@click.option("--verify", "mode", flag_value="verify", help="Check --reassignment-json-file is carried out.")
@click.option("--topics-to-move-json-file", type=click.Path(exists=True, dir_okay=False),
              help='With --generate: {"topics": [{"topic": "t"}], "version": 1}.')
@click.option("--broker-list", help="With --generate: log dir ids to spread replicas over, e.g. 1,2,3.")
@click.option("--reassignment-json-file", type=click.Path(exists=True, dir_okay=False),
              help="With --execute/--verify: the plan (what --generate proposes).")
@click.option("--topic", help="Move one partition of this topic (with --partition, --replicas).")
@click.option("--partition", type=int)
@click.option("--replicas", help="New replica list: log dir ids, first = preferred leader.")
@click.pass_context
def reassign(ctx: click.Context, mode: str | None, topics_to_move_json_file: str | None, broker_list: str | None,
             reassignment_json_file: str | None, topic: str | None, partition: int | None,
             replicas: str | None) -> None:
    """Move partitions' replicas between log dirs (copy, catch up, switch, delete), with
    kafka-reassign-partitions' --generate / --execute / --verify and JSON plans."""
    if mode is None:
        if topic is None or partition is None or replicas is None:
            raise click.UsageError("give --generate, --execute or --verify (Kafka's way), or --topic, "
                                   "--partition and --replicas")
        try:
            ids = [int(r) for r in replicas.split(",") if r.strip()]
        except ValueError as err:
            raise click.BadParameter(f"{replicas!r}: expected log dir ids like 1,2", param_hint="--replicas") from err
        _move(ctx, [(topic, partition, ids)])
        return
    cluster = _open(ctx)
    try:
        if mode == "generate":
            if topics_to_move_json_file is None or broker_list is None:
                raise click.UsageError("--generate needs --topics-to-move-json-file and --broker-list")
            try:
                brokers = [int(b) for b in broker_list.split(",") if b.strip()]
            except ValueError as err:
                raise click.BadParameter(f"{broker_list!r}: expected log dir ids like 1,2,3",
                                         param_hint="--broker-list") from err
            proposed = propose(cluster, _read_topics(topics_to_move_json_file), brokers)
            click.echo("Current partition replica assignment")
            click.echo(plan_document(cluster, current_plan(cluster, [(t, p) for t, p, _ in proposed])))
            click.echo("")
            click.echo("Proposed partition reassignment configuration")
            click.echo(plan_document(cluster, proposed))
            return
        if reassignment_json_file is None:
            raise click.UsageError(f"--{mode} needs --reassignment-json-file")
        plan = read_plan(reassignment_json_file, cluster)
        if mode == "verify":
            _verify(cluster, plan)
            return
        click.echo("Current partition replica assignment")
        click.echo("")
        click.echo(plan_document(cluster, current_plan(cluster, [(t, p) for t, p, _ in plan])))
        click.echo("")
        click.echo("Save this to use as the --reassignment-json-file option during rollback")
    finally:
        cluster.close()
    _move(ctx, plan)
    click.echo("Successfully started partition reassignments for " + ",".join(f"{t}-{p}" for t, p, _ in plan))
    click.echo("(kstream moves them before returning: --verify reports them completed)")


def _move(ctx: click.Context, plan: Plan) -> None:
    cluster = _open(ctx)
    try:
        for topic, partition, replicas in plan:
            info = replica_ops.reassign(cluster, topic, partition, replicas)
            click.echo(f"{topic}-{partition}: replicas {list(info.replicas)}, leader {info.leader}, "
                       f"isr {list(info.isr)}, epoch {info.leader_epoch}.")
    finally:
        cluster.close()


def differences(cluster: Cluster, plan: Plan) -> list[tuple[str, int, list[int], list[int]]]:
    """Per planned partition: (topic, partition, current replicas, planned replicas)."""
    return [(t, p, list(cluster.topic(t).partitions[p].replicas), r) for t, p, r in plan]


def _verify(cluster: Cluster, plan: Plan) -> None:
    click.echo("Status of partition reassignment:")
    differ = 0
    for topic, partition, current, replicas in differences(cluster, plan):
        if current == replicas:
            click.echo(f"Reassignment of partition {topic}-{partition} is completed.")
        else:
            differ += 1
            click.echo(f"There is no active reassignment of partition {topic}-{partition}, but replica set "
                       f"is {current} rather than {replicas}.")
    if differ:
        raise click.ClickException(f"{differ} partition(s) do not have the planned replicas")
