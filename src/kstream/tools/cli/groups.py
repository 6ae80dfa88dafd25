"""`kstream groups`: list, describe (offsets and lag, members, state), reset-offsets,
delete-offsets, delete, and recreate-offsets-table (the way out of a lost offsets table).

Shaped like kafka-consumer-groups.sh: describe prints one row per partition
with CURRENT-OFFSET, LOG-END-OFFSET and LAG (``--members``: one row per
member, ``--state``: one row per group); a group that does not exist is an
error, not an empty table. reset-offsets is a dry run that prints the plan
unless ``--execute`` is given; ``--export`` prints it as Kafka's CSV. A group
is named as an argument (kstream's way) or with ``--group`` (Kafka's), and
``--all-groups`` acts on every group.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import click
from rich.table import Table

from kstream.group_names import check_group_name
from kstream.groups import ConsumerGroups
from kstream.groups.service import GroupDescription
from kstream.log.cluster.cluster import Cluster
from kstream.tools.cli import group_reset
from kstream.tools.cli.common import console
from kstream.tools.cli.group_offsets import delete_group_offsets


@contextmanager
def _groups(ctx: click.Context) -> Iterator[ConsumerGroups]:
    cluster = Cluster.open(ctx.obj["cluster"])
    service = ConsumerGroups(cluster)
    try:
        yield service
    finally:
        service.close()
        cluster.close()


def _group_name(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """GROUP checked before the cluster is opened: a bad name is refused, nothing written."""
    return None if value is None else check_group_name(value, "GROUP")


def _group_names(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(check_group_name(v, "--group") for v in values)


def _chosen(service: ConsumerGroups, group: str | None, more: tuple[str, ...], all_groups: bool,
            must_exist: bool = True) -> list[str]:
    """The groups a command acts on: GROUP and --group ones, or every group with --all-groups.
    With ``must_exist``, a group that does not exist is an error saying how to list groups."""
    named = list(dict.fromkeys(([group] if group else []) + list(more)))
    if all_groups and named:
        raise click.UsageError("give GROUP/--group or --all-groups, not both")
    if all_groups:
        return service.list_groups()
    if not named:
        raise click.UsageError("name a group (GROUP or --group G) or give --all-groups")
    missing = [g for g in named if not service.exists(g)]
    if must_exist and missing:
        raise click.ClickException(
            f"Consumer group {missing[0]!r} does not exist (it has no members and no committed "
            "offsets). List groups with `kstream groups list`.")
    return named


@click.group()
def groups() -> None:
    """List, describe, reset and delete consumer groups (offsets live in a Delta table)."""


@groups.command("list")
@click.option("--state", "states", is_flag=False, flag_value="", default=None, metavar="[S,...]",
              help="Also print each group's state; with a value, only groups in these states "
                   "(e.g. stable,empty; case-insensitive).")
@click.pass_context
def list_(ctx: click.Context, states: str | None) -> None:
    """List groups: those with members or committed offsets.

    Printed as kafka-consumer-groups --list prints them, so its scripts read them: a bare name
    a line (nothing when there is no group); with --state, its printf table: a GROUP STATE
    header (even when no group matches), the group column max(15, longest name) + 10 wide."""
    with _groups(ctx) as service:
        names = service.list_groups()
        if states is None:
            for name in names:
                click.echo(name)
            return
        wanted = {s.strip().lower() for s in states.split(",") if s.strip()}
        rows = [(name, state) for name, state in ((n, service.describe(n).state) for n in names)
                if not wanted or state.lower() in wanted]
        width = max((max(15, len(name)) for name, _ in rows), default=15) + 10
        for name, state in [("GROUP", "STATE"), *rows]:
            click.echo(f"{name:<{width}} {state:<20}")


def _as_json(d: GroupDescription) -> dict[str, object]:
    return {
        "group": d.group_id, "state": d.state, "generation": d.generation, "protocol": d.protocol,
        "members": [{"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                     "pid": m.pid, "kind": m.kind, "assignment": [list(tp) for tp in m.assignment]}
                    for m in d.members],
        "partitions": [{"topic": p.topic, "partition": p.partition, "committed": p.committed,
                        "log_start_offset": p.log_start_offset, "high_watermark": p.high_watermark,
                        "log_end_offset": p.log_end_offset, "lag": p.lag, "owner": p.owner}
                       for p in d.partitions]}


def _offsets_table(d: GroupDescription) -> Table:
    members = {m.member_id: m for m in d.members}
    table = Table("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "HW", "LAG",
                  "CONSUMER-ID", "HOST", "CLIENT-ID")
    for p in d.partitions:
        owner = members.get(p.owner or "")
        table.add_row(d.group_id, p.topic, str(p.partition), "-" if p.committed is None else str(p.committed),
                      str(p.log_end_offset), str(p.high_watermark), "-" if p.lag is None else str(p.lag),
                      p.owner or "-", f"{owner.host}/{owner.pid}" if owner else "-",
                      owner.client_id if owner else "-")
    return table


def _members_table(d: GroupDescription, verbose: bool) -> Table:
    columns = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"] + (["ASSIGNMENT"] if verbose else [])
    table = Table(*columns)
    for m in d.members:
        row = [d.group_id, m.member_id, f"{m.host}/{m.pid}", m.client_id, str(len(m.assignment))]
        if verbose:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in m.assignment:
                by_topic.setdefault(topic, []).append(partition)
            row.append(",".join(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in sorted(by_topic.items()))
                       or "-")
        table.add_row(*row)
    return table


def _state_table(descriptions: list[GroupDescription]) -> Table:
    table = Table("GROUP", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS", "GENERATION", "TOTAL-LAG")
    for d in descriptions:
        table.add_row(d.group_id, d.protocol or "", d.state, str(len(d.members)), str(d.generation),
                      str(d.total_lag))
    return table


@groups.command("describe")
@click.argument("group", required=False, callback=_group_name)
@click.option("--group", "more", multiple=True, callback=_group_names, help="A group (Kafka's spelling).")
@click.option("--all-groups", is_flag=True, help="Describe every group.")
@click.option("--offsets", "view", flag_value="offsets", default=True,
              help="Per partition: committed offset, log end offset, lag (the default).")
@click.option("--members", "view", flag_value="members", help="One row per member.")
@click.option("--state", "view", flag_value="state", help="One row per group: its state.")
@click.option("--verbose", is_flag=True, help="With --members: each member's assigned partitions.")
@click.option("--json", "as_json", is_flag=True,
              help="JSON instead of tables: one document, or a list of them for several groups.")
@click.pass_context
def describe(ctx: click.Context, group: str | None, more: tuple[str, ...], all_groups: bool, view: str,
             verbose: bool, as_json: bool) -> None:
    """GROUP's state, members and, per partition, committed offset, log end offset and lag."""
    with _groups(ctx) as service:
        descriptions = [service.describe(g) for g in _chosen(service, group, more, all_groups)]
    if as_json:
        documents = [_as_json(d) for d in descriptions]
        click.echo(json.dumps(documents[0] if len(documents) == 1 and not all_groups else documents, indent=2))
        return
    out = console()
    if view == "state":
        out.print(_state_table(descriptions))
        return
    for d in descriptions:
        out.print(f"Group: [bold]{d.group_id}[/]  State: {d.state}  Generation: {d.generation}  "
                  f"Assignor: {d.protocol or '-'}  Members: {len(d.members)}  TotalLag: {d.total_lag}")
        if view == "members":
            if d.members:
                out.print(_members_table(d, verbose))
            else:
                out.print(f"Consumer group '{d.group_id}' has no active members.")
        else:
            out.print(_offsets_table(d))


@groups.command("reset-offsets")
@click.argument("group", required=False, callback=_group_name)
@click.option("--group", "more", multiple=True, callback=_group_names, help="A group (Kafka's spelling).")
@click.option("--all-groups", is_flag=True, help="Reset every group.")
@click.option("--topic", "topics", multiple=True, metavar="T[:P,...]", help="Partitions to reset.")
@click.option("--all-topics", is_flag=True, help="Every partition the group has committed.")
@click.option("--to-earliest", "how", flag_value="to-earliest", help="To the log start offset.")
@click.option("--to-latest", "how", flag_value="to-latest", help="To the high watermark.")
@click.option("--to-current", "how", flag_value="to-current",
              help="To the committed offset (the high watermark where none).")
@click.option("--to-datetime", metavar="ISO-8601", help="To the first offset at or after this time.")
@click.option("--by-duration", metavar="PnDTnHnMnS", help="To the first offset at or after now minus this.")
@click.option("--shift-by", type=int, help="Move the committed offset by N (negative: back).")
@click.option("--to-offset", type=int, help="To this offset.")
@click.option("--from-file", type=click.Path(exists=True, dir_okay=False),
              help="CSV of topic,partition,offset (or group,topic,partition,offset), as --export prints.")
@click.option("--execute", is_flag=True, help="Apply the plan (default: dry run, print it).")
@click.option("--dry-run", is_flag=True, help="Print the plan only (the default).")
@click.option("--export", is_flag=True, help="Print the plan as CSV (what --from-file reads).")
@click.option("--force", is_flag=True, help="Reset even with active members (they are fenced).")
@click.pass_context
def reset_offsets(ctx: click.Context, group: str | None, more: tuple[str, ...], all_groups: bool,
                  topics: tuple[str, ...], all_topics: bool, how: str | None, to_datetime: str | None,
                  by_duration: str | None, shift_by: int | None, to_offset: int | None, from_file: str | None,
                  execute: bool, dry_run: bool, export: bool, force: bool) -> None:
    """Reset GROUP's committed offsets (clamped to what the log holds). Dry run unless --execute."""
    chosen = [(name, value) for name, value in (("to-datetime", to_datetime), ("by-duration", by_duration),
                                                ("shift-by", shift_by), ("to-offset", to_offset),
                                                ("from-file", from_file))
              if value is not None] + ([(how, None)] if how else [])
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --to-earliest, --to-latest, --to-current, --to-datetime, "
                               "--by-duration, --shift-by, --to-offset, --from-file")
    if execute and dry_run:
        raise click.UsageError("give one of --execute and --dry-run")
    if by_duration is not None:
        group_reset.parse_duration(by_duration)  # a bad duration is a usage error before any work
    method, value = chosen[0]
    with _groups(ctx) as service:
        names = _chosen(service, group, more, all_groups, must_exist=False)
        plans = {}
        for name in names:
            keys = [] if method == "from-file" else group_reset.scope(service, name, topics, all_topics)
            plans[name] = group_reset.plan(service, ctx, name, keys, method, None if value is None else str(value))
        if execute:
            for name, plan in plans.items():
                service.reset_offsets(name, plan, force=force)
    if export:
        click.echo(group_reset.write_csv(plans), nl=False)
        return
    table = Table("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET",
                  title=None if execute else "Dry run: nothing changed (add --execute to apply)")
    for name, plan in plans.items():
        for (topic, partition), offset in sorted(plan.items()):
            table.add_row(name, topic, str(partition), str(offset))
    console().print(table)


@groups.command("delete-offsets")
@click.argument("group", required=False, callback=_group_name)
@click.option("--group", "more", multiple=True, callback=_group_names, help="The group (Kafka's spelling).")
@click.option("--topic", "topics", multiple=True, required=True, metavar="T[:P,...]",
              help="Forget the group's offsets of these partitions (all of a topic without :P).")
@click.pass_context
def delete_offsets(ctx: click.Context, group: str | None, more: tuple[str, ...], topics: tuple[str, ...]) -> None:
    """Forget GROUP's committed offsets of some topics (refused for topics its members consume)."""
    with _groups(ctx) as service:
        names = _chosen(service, group, more, False)
        if len(names) != 1:
            raise click.UsageError("delete-offsets acts on one group at a time")
        results = delete_group_offsets(service, names[0], topics)
    click.echo(f"Request succeed for deleting offsets from group {names[0]}.")
    table = Table("TOPIC", "PARTITION", "STATUS")
    for (topic, partition), status in sorted(results.items()):
        table.add_row(topic, str(partition), status)
    console().print(table)


@groups.command("delete")
@click.argument("group", required=False, callback=_group_name)
@click.option("--group", "more", multiple=True, callback=_group_names, help="A group (Kafka's spelling).")
@click.option("--all-groups", is_flag=True, help="Delete every group.")
@click.option("--force", is_flag=True, help="Delete even with active members (they are fenced).")
@click.pass_context
def delete(ctx: click.Context, group: str | None, more: tuple[str, ...], all_groups: bool, force: bool) -> None:
    """Delete GROUP: its members and committed offsets (older table versions keep its history)."""
    with _groups(ctx) as service:
        for name in _chosen(service, group, more, all_groups):
            service.delete(name, force=force)
            click.echo(f"Deleted group {name}.")


@groups.command("recreate-offsets-table")
@click.option("--yes", is_flag=True, help="Confirm: every group loses its committed offsets.")
@click.pass_context
def recreate_offsets_table(ctx: click.Context, yes: bool) -> None:
    """Replace a LOST or UNREADABLE group offsets table by an empty one (restore a backup if
    you have one instead). The old table is moved aside, not deleted; every group then starts
    from auto.offset.reset. Refused while the table is readable."""
    if not yes:
        raise click.UsageError("every group would lose its committed offsets: give --yes to confirm "
                               "(restore __consumer_offsets from a backup instead if you have one)")
    with _groups(ctx) as service:
        aside = service.recreate_offsets_table()
    click.echo(f"Recreated an empty offsets table; the old one is at {aside}.")
