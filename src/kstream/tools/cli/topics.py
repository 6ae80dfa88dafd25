"""`kstream topics`: create, list, describe, alter, delete."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click
import pyarrow as pa
from rich.table import Table

from kstream.admin import Admin, NewPartitions, NewTopic
from kstream.config.option_text import parse_schema
from kstream.config.options import CLUSTER_OPTIONS
from kstream.errors import TopicExistsError
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.store import TransactionStore
from kstream.tiering import tier_status
from kstream.tools.cli.common import cluster_options, console, parse_pairs

if TYPE_CHECKING:
    from kstream.log.transactions.store import Holder


def topic_argument(command):
    """TOPIC as the command's argument or, in Kafka's form, ``--topic TOPIC`` (kafka-topics.sh
    --create --topic foo): one of the two; see :func:`one_topic`."""
    command = click.option("--topic", "topic_option", metavar="TOPIC",
                           help="The topic, as kafka-topics.sh takes it (instead of the TOPIC argument).")(command)
    return click.argument("topic", required=False)(command)


def one_topic(argument: str | None, option: str | None) -> str:
    """The topic named by the argument or by --topic (both: they must agree)."""
    if argument is not None and option is not None and argument != option:
        raise click.UsageError(f"two topics named: {argument!r} and --topic {option!r}; name one")
    topic = argument if argument is not None else option
    if topic is None:
        raise click.UsageError("name the topic: as an argument (kstream topics create NAME) or with --topic NAME")
    return topic


@click.group()
def topics() -> None:
    """Create, list, describe, alter and delete topics."""


@topics.command("create")
@topic_argument
@click.option("--partitions", type=int, default=-1, help="Partitions (default: num.partitions).")
@click.option("--replication-factor", type=int, default=-1,
              help="Replicas (default: default.replication.factor).")
@click.option("--config", "configs", multiple=True, metavar="K=V", help="Topic config override.")
@click.option("--schema", help="Typed topic: Arrow columns as name:type,... (e.g. id:int64,name:string).")
@click.option("--log-dirs", help="Comma-separated log dirs; used when this creates the cluster.")
@click.option("--cluster-config", "cluster_configs", multiple=True, metavar="K=V",
              help="Broker-side setting; used when this creates the cluster.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if the topic already exists.")
@click.pass_context
def create(ctx: click.Context, topic: str | None, topic_option: str | None, partitions: int,
           replication_factor: int, configs: tuple[str, ...], schema: str | None, log_dirs: str | None,
           cluster_configs: tuple[str, ...], if_not_exists: bool) -> None:
    """Create TOPIC (or --topic TOPIC)."""
    topic = one_topic(topic, topic_option)
    broker = parse_pairs(cluster_configs, "--cluster-config")
    unknown = [k for k in broker if k not in CLUSTER_OPTIONS]
    if unknown:
        raise click.BadParameter(f"unknown broker-side settings {unknown}", param_hint="--cluster-config")
    with Admin(cluster_options(ctx, **broker, **{"log.dirs": log_dirs})) as admin:
        new = NewTopic(topic, partitions, replication_factor, config=parse_pairs(configs, "--config"),
                       schema=parse_schema(schema) if schema else None)
        try:  # creates the cluster too if there is none at the path: the one command that does
            admin.create_topics([new])[topic].result()
        except TopicExistsError:
            if not if_not_exists:
                raise
            click.echo(f"Topic {topic} already exists.")
            return
        info = admin.cluster.topic(topic)
        click.echo(f"Created topic {topic} with {info.num_partitions} partition(s), "
                   f"replication factor {info.replication_factor}.")


@topics.command("list")
@click.pass_context
def list_(ctx: click.Context) -> None:
    """List topic names."""
    with Admin(cluster_options(ctx)) as admin:
        for name in admin.cluster.list_topics():
            click.echo(name)


@topics.command("describe")
@click.argument("names", nargs=-1)
@click.option("--topic", "topic_options", multiple=True, metavar="TOPIC",
              help="A topic to describe, as kafka-topics.sh takes it (repeatable; or name them as arguments).")
@click.pass_context
def describe(ctx: click.Context, names: tuple[str, ...], topic_options: tuple[str, ...]) -> None:
    """Describe topics (all when none named): partitions, leaders, replicas, offsets, the LSO
    and the open transactions holding it; a tiered topic's local log start, lake end and tier
    lag. Read-only: an expired transaction is shown, not aborted."""
    names = tuple(dict.fromkeys(names + topic_options))
    out = console()
    with Admin(cluster_options(ctx)) as admin:
        store = TransactionStore.for_cluster(admin.cluster)
        for name in names or admin.cluster.list_topics():
            d = admin.describe_topic(name)
            overrides = ",".join(f"{k}={v}" for k, v in sorted(d.config.items())) or "(none)"
            out.print(f"Topic: [bold]{d.name}[/]  TopicId: {d.topic_id}  "
                          f"PartitionCount: {len(d.partitions)}  Configs: {overrides}")
            if d.schema is not None:
                out.print("Schema: " + ", ".join(f"{f.name}:{f.type}" for f in d.schema))
            table = Table("Partition", "Leader", "Replicas", "Isr", "Epoch", "LogStart", "LEO", "HW", "LSO",
                          "Replica LEOs", "Size")
            held: list[tuple[int, Holder]] = []
            for p in d.partitions:
                holders = store.holders(name, p.id)
                held.extend((p.id, h) for h in holders)
                table.add_row(str(p.id), str(p.leader), ",".join(map(str, p.replicas)),
                              ",".join(map(str, p.isrs)), str(p.leader_epoch), str(p.log_start_offset),
                              str(p.log_end_offset), str(p.high_watermark), str(p.last_stable_offset),
                              " ".join(f"{r}:{e}" for r, e in p.replica_log_end_offsets.items()),
                              f"{p.size_bytes:,}")
            out.print(table)
            if held:
                out.print(_open_transactions(held))
            if "tier.delta.path" in d.config:
                out.print(_lake(admin.cluster, name))


def _open_transactions(held: list[tuple[int, Holder]]) -> Table:
    """The open transactions holding partitions back (the LSO is the smallest first offset)."""
    table = Table("Partition", "FirstOffset", "Owner", "ProducerId", "Epoch", "State", "Started", "Deadline",
                  title="Open transactions")
    now = time.time() * 1000
    for partition, h in held:
        if h.owner is None:
            table.add_row(str(partition), str(h.first_offset), "(orphan: its writer was fenced)",
                          str(h.producer_id), "-", "-", "-", "reads as aborted; aborted by the next writer")
            continue
        deadline = "-" if h.deadline_ms is None else _when(h.deadline_ms) + (
            " (passed: reads as aborted unless decided; ended by the next writer)" if now >= h.deadline_ms else "")
        table.add_row(str(partition), str(h.first_offset), h.owner, str(h.producer_id), str(h.epoch),
                      str(h.state), _when(h.started_ms), deadline)
    return table


def _lake(cluster: Cluster, name: str) -> Table:
    """A tiered topic's partitions: local log start, the lake end kstream recorded, and the
    tierer's lag (sealed, stable offsets not in the lake yet, and how long the oldest waited)."""
    info = cluster.topic(name)
    config = cluster.log_config(info)
    table = Table("Partition", "LogStart", "LakeEnd", "TierLag", "TierLagAge", "LakeUpdated",
                  title=f"Tiered to {config.tier_table_dir} (tier.lag.ms={config.tier_lag_ms})")
    for p in tier_status(cluster, info, int(time.time() * 1000)):
        table.add_row(str(p.partition), str(p.log_start_offset), str(p.lake_end_offset), str(p.lag_offsets),
                      f"{p.lag_age_ms / 1000:.1f}s", _when(p.lake_updated_ms))
    return table


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


@topics.command("alter")
@topic_argument
@click.option("--config", "configs", multiple=True, metavar="K=V", help="Set a topic config.")
@click.option("--delete-config", "deletes", multiple=True, metavar="K", help="Remove an override.")
@click.option("--partitions", type=int, help="Increase the partition count to this.")
@click.option("--add-columns", help="Typed topic: nullable columns to append, name:type,...")
@click.pass_context
def alter(ctx: click.Context, topic: str | None, topic_option: str | None, configs: tuple[str, ...],
          deletes: tuple[str, ...], partitions: int | None, add_columns: str | None) -> None:
    """Change TOPIC's (or --topic TOPIC's) configs, partition count or schema."""
    topic = one_topic(topic, topic_option)
    with Admin(cluster_options(ctx)) as admin:
        changes: dict[str, str | None] = dict(parse_pairs(configs, "--config"))
        changes.update({k: None for k in deletes})
        if changes:
            admin.alter_topic_config(topic, changes)
            click.echo(f"Updated configs of {topic}.")
        if partitions is not None:
            admin.create_partitions([NewPartitions(topic, partitions)])[topic].result()
            click.echo(f"Topic {topic} now has {partitions} partitions.")
        if add_columns:
            current = admin.describe_topic(topic).schema
            if current is None:
                raise click.BadParameter(f"{topic} is a bytes topic", param_hint="--add-columns")
            added = parse_schema(add_columns)
            admin.evolve_schema(topic, pa.schema(list(current) + list(added)))
            click.echo(f"Added columns {added.names} to {topic}.")


@topics.command("clean")
@topic_argument
@click.option("--partition", "partitions", type=int, multiple=True, help="Only this partition (repeatable).")
@click.option("--force", is_flag=True,
              help="Clean even when the dirty ratio is below min.cleanable.dirty.ratio.")
@click.pass_context
def clean(ctx: click.Context, topic: str | None, topic_option: str | None, partitions: tuple[int, ...],
          force: bool) -> None:
    """Run the log cleaner once on compacted TOPIC (or --topic TOPIC): in each partition, keep the
    latest record of every key in the sealed segments below the LSO (offsets preserved), when
    its dirty ratio reaches min.cleanable.dirty.ratio (or with --force). Its reads and writes are
    held to the cluster's log.cleaner.io.max.bytes.per.second (default unlimited)."""
    topic = one_topic(topic, topic_option)
    with Admin(cluster_options(ctx)) as admin:
        results = admin.cluster.clean_topic(topic, list(partitions) or None, force=force)
    for done in results:
        if done.cleaned:
            click.echo(f"{topic}-{done.partition}: cleaned below offset {done.end_offset} ({done.reason}): "
                       f"{done.segments_rewritten} segment(s) rewritten, {done.records_removed} record(s) "
                       f"removed, {done.bytes_before} -> {done.bytes_after} bytes")
        else:
            click.echo(f"{topic}-{done.partition}: not cleaned: {done.reason}")


@topics.command("delete")
@topic_argument
@click.pass_context
def delete(ctx: click.Context, topic: str | None, topic_option: str | None) -> None:
    """Delete TOPIC (or --topic TOPIC) and its data."""
    topic = one_topic(topic, topic_option)
    with Admin(cluster_options(ctx)) as admin:
        admin.delete_topics([topic])[topic].result()
        click.echo(f"Deleted topic {topic}.")
