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
(:mod:`kstream.log.cluster.reassignment_json`); the planning is
:mod:`kstream.log.cluster.reassignment`, which the console calls too: a wrong type is an error naming the field.
"""

from __future__ import annotations

import click

from kstream.log.cluster import replica_ops
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.reassignment import (
    Plan,
    current_plan,
    differences,
    plan_document,
    propose,
    read_plan,
    read_topics,
)
from kstream.tools.cli.common import cluster_options


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
            proposed = propose(cluster, read_topics(topics_to_move_json_file), brokers)
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
