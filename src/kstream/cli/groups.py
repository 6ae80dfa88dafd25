"""`kstream groups`: list, describe (members, assignment, offsets, lag), reset-offsets, delete.

Shaped like kafka-consumer-groups.sh: describe prints one row per partition
with CURRENT-OFFSET, LOG-END-OFFSET and LAG; reset-offsets is a dry run that
prints the plan unless ``--execute`` is given.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Iterator
from contextlib import contextmanager

import click
from rich.table import Table

from kstream.cli.common import cluster_options, console
from kstream.consumer import Consumer
from kstream.errors import ConfigError
from kstream.group_names import check_group_name
from kstream.groups import ConsumerGroups
from kstream.log.cluster import Cluster
from kstream.message import TopicPartition


@contextmanager
def _groups(ctx: click.Context) -> Iterator[ConsumerGroups]:
    cluster = Cluster.open(ctx.obj["cluster"])
    service = ConsumerGroups(cluster)
    try:
        yield service
    finally:
        service.close()
        cluster.close()


def _group_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """GROUP checked before the cluster is opened: a bad name is refused, nothing written."""
    return check_group_name(value, "GROUP")


@click.group()
def groups() -> None:
    """List, describe, reset and delete consumer groups (offsets live in a Delta table)."""


@groups.command("list")
@click.pass_context
def list_(ctx: click.Context) -> None:
    """List groups: those with members or committed offsets."""
    with _groups(ctx) as service:
        for name in service.list_groups():
            click.echo(name)


@groups.command("describe")
@click.argument("group", callback=_group_name)
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of tables.")
@click.pass_context
def describe(ctx: click.Context, group: str, as_json: bool) -> None:
    """GROUP's state, members and, per partition, committed offset, log end offset and lag."""
    with _groups(ctx) as service:
        d = service.describe(group)
    members = {m.member_id: m for m in d.members}
    if as_json:
        click.echo(json.dumps({
            "group": d.group_id, "state": d.state, "generation": d.generation, "protocol": d.protocol,
            "members": [{"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                         "pid": m.pid, "kind": m.kind, "assignment": [list(tp) for tp in m.assignment]}
                        for m in d.members],
            "partitions": [{"topic": p.topic, "partition": p.partition, "committed": p.committed,
                            "log_start_offset": p.log_start_offset, "high_watermark": p.high_watermark,
                            "log_end_offset": p.log_end_offset, "lag": p.lag, "owner": p.owner}
                           for p in d.partitions]}, indent=2))
        return
    out = console()
    out.print(f"Group: [bold]{d.group_id}[/]  State: {d.state}  Generation: {d.generation}  "
                  f"Assignor: {d.protocol or '-'}  Members: {len(d.members)}  TotalLag: {d.total_lag}")
    table = Table("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "HW", "LAG", "CONSUMER-ID",
                  "HOST", "CLIENT-ID")
    for p in d.partitions:
        owner = members.get(p.owner or "")
        table.add_row(p.topic, str(p.partition), "-" if p.committed is None else str(p.committed),
                      str(p.log_end_offset), str(p.high_watermark), "-" if p.lag is None else str(p.lag),
                      p.owner or "-", f"{owner.host}/{owner.pid}" if owner else "-",
                      owner.client_id if owner else "-")
    out.print(table)


def _scope(service: ConsumerGroups, group: str, topics: tuple[str, ...], all_topics: bool
           ) -> list[tuple[str, int]]:
    """`--topic t` (every partition) or `--topic t:0,2`, or the topics the group committed."""
    if all_topics:
        return sorted(service.committed(group))
    if not topics:
        raise click.UsageError("say which partitions to reset: --topic T[:P,...] or --all-topics")
    result = []
    for spec in topics:
        name, _, parts = spec.partition(":")
        count = service.cluster.topic(name).num_partitions
        chosen = [int(p) for p in parts.split(",")] if parts else list(range(count))
        for p in chosen:
            if not 0 <= p < count:
                raise ConfigError(f"topic {name!r} has partitions 0..{count - 1}; {p} does not exist")
        result += [(name, p) for p in chosen]
    return sorted(set(result))


def _plan(service: ConsumerGroups, ctx: click.Context, group: str, scope: list[tuple[str, int]],
          how: str, value: str | None) -> dict[tuple[str, int], int]:
    committed = service.committed(group)
    plan: dict[tuple[str, int], int] = {}
    if how == "from-file":
        assert value is not None
        with open(value, newline="") as f:
            for row in csv.reader(f):
                if row and not row[0].startswith("#"):
                    topic, partition, offset = row[0].strip(), int(row[1]), int(row[2])
                    plan[(topic, partition)] = offset
        scope = sorted(plan)
    timestamps: dict[tuple[str, int], int] = {}
    if how == "to-datetime":
        assert value is not None
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        with Consumer(cluster_options(ctx)) as consumer:
            found = consumer.offsets_for_times([TopicPartition(t, p, int(when.timestamp() * 1000))
                                                for t, p in scope])
        timestamps = {(tp.topic, tp.partition): tp.offset for tp in found}
    for key in scope:
        start, hw, _ = service.ends(*key)
        current = committed.get(key)
        if how == "to-earliest":
            target = start
        elif how == "to-latest":
            target = hw
        elif how == "to-datetime":
            target = hw if timestamps[key] < 0 else timestamps[key]
        elif how == "shift-by":
            target = (current.offset if current else start) + int(value or 0)
        elif how == "to-offset":
            target = int(value or 0)
        else:
            target = plan[key]
        plan[key] = max(start, min(target, hw))
    return plan


@groups.command("reset-offsets")
@click.argument("group", callback=_group_name)
@click.option("--topic", "topics", multiple=True, metavar="T[:P,...]", help="Partitions to reset.")
@click.option("--all-topics", is_flag=True, help="Every partition the group has committed.")
@click.option("--to-earliest", "how", flag_value="to-earliest", help="To the log start offset.")
@click.option("--to-latest", "how", flag_value="to-latest", help="To the high watermark.")
@click.option("--to-datetime", metavar="ISO-8601", help="To the first offset at or after this time.")
@click.option("--shift-by", type=int, help="Move the committed offset by N (negative: back).")
@click.option("--to-offset", type=int, help="To this offset.")
@click.option("--from-file", type=click.Path(exists=True, dir_okay=False),
              help="CSV of topic,partition,offset.")
@click.option("--execute", is_flag=True, help="Apply the plan (default: dry run, print it).")
@click.option("--force", is_flag=True, help="Reset even with active members (they are fenced).")
@click.pass_context
def reset_offsets(ctx: click.Context, group: str, topics: tuple[str, ...], all_topics: bool,
                  how: str | None, to_datetime: str | None, shift_by: int | None, to_offset: int | None,
                  from_file: str | None, execute: bool, force: bool) -> None:
    """Reset GROUP's committed offsets (clamped to what the log holds). Dry run unless --execute."""
    chosen = [(name, value) for name, value in (("to-datetime", to_datetime), ("shift-by", shift_by),
                                                ("to-offset", to_offset), ("from-file", from_file))
              if value is not None] + ([(how, None)] if how else [])
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --to-earliest, --to-latest, --to-datetime, "
                               "--shift-by, --to-offset, --from-file")
    method, value = chosen[0]
    with _groups(ctx) as service:
        scope = [] if method == "from-file" else _scope(service, group, topics, all_topics)
        plan = _plan(service, ctx, group, scope, method, None if value is None else str(value))
        if execute:
            service.reset_offsets(group, plan, force=force)
        table = Table("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET",
                      title=None if execute else "Dry run: nothing changed (add --execute to apply)")
        for (topic, partition), offset in sorted(plan.items()):
            table.add_row(group, topic, str(partition), str(offset))
        console().print(table)


@groups.command("delete")
@click.argument("group", callback=_group_name)
@click.option("--force", is_flag=True, help="Delete even with active members (they are fenced).")
@click.pass_context
def delete(ctx: click.Context, group: str, force: bool) -> None:
    """Delete GROUP: its members and committed offsets (older table versions keep its history)."""
    with _groups(ctx) as service:
        service.delete(group, force=force)
    click.echo(f"Deleted group {group}.")
