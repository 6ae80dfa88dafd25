"""`kstream log-dirs`, `replicator`, `elect-leaders`, `verify-replicas` (`reassign`: reassign.py)."""

from __future__ import annotations

import time

import click
from rich.table import Table

from kstream.admin import Admin
from kstream.tools.cli.common import cluster_options, console


@click.group("log-dirs")
def log_dirs() -> None:
    """Describe log dirs, shut one down (move all its leaders off), bring one back."""


@log_dirs.command("describe")
@click.pass_context
def describe(ctx: click.Context) -> None:
    """Each log dir: id, path, online, replicas, leaders, bytes."""
    with Admin(cluster_options(ctx)) as admin:
        table = Table("Id", "Path", "Online", "Replicas", "Leaders", "Size")
        for d in admin.describe_log_dirs():
            table.add_row(str(d.id), d.path, "yes" if d.online else "NO", str(d.replicas), str(d.leaders),
                          f"{d.size_bytes:,}")
        console().print(table)


@log_dirs.command("shutdown")
@click.argument("log_dir_id", type=int)
@click.pass_context
def shutdown(ctx: click.Context, log_dir_id: int) -> None:
    """Controlled shutdown: take LOG_DIR_ID offline and move every partition off it at once."""
    with Admin(cluster_options(ctx)) as admin:
        started = time.perf_counter()
        moved = admin.take_log_dir_offline(log_dir_id)
        click.echo(f"Log dir {log_dir_id} is offline; {moved} partition(s) moved off it in "
                   f"{time.perf_counter() - started:.3f} s.")


@log_dirs.command("online")
@click.argument("log_dir_id", type=int)
@click.pass_context
def online(ctx: click.Context, log_dir_id: int) -> None:
    """Bring LOG_DIR_ID back (repaired, or an empty replacement disk); replicas refill from leaders."""
    with Admin(cluster_options(ctx)) as admin:
        admin.set_log_dir_online(log_dir_id)
        click.echo(f"Log dir {log_dir_id} is online; partitions whose last in-sync replica is there "
                   "lead from it again, and its other replicas rejoin the ISR once caught up "
                   "(run `kstream replicator` to do it now).")


@click.command()
@click.option("--topic", "topics", multiple=True, help="Only these topics (default: all).")
@click.option("--once", is_flag=True, help="One pass, then exit (default: repeat every --interval-ms).")
@click.option("--interval-ms", type=int, default=1000, show_default=True)
@click.pass_context
def replicator(ctx: click.Context, topics: tuple[str, ...], once: bool, interval_ms: int) -> None:
    """Catch up out-of-sync replicas on online log dirs and return them to the ISR."""
    with Admin(cluster_options(ctx)) as admin:
        while True:
            counts = admin.sync_replicas(list(topics) or None)
            click.echo(f"{counts['partitions_lagging']} partition(s) lagging, "
                       f"{counts['replicas_rejoined']} replica(s) back in the ISR")
            if once:
                return
            time.sleep(interval_ms / 1000)


@click.command("elect-leaders")
@click.option("--topic", "topics", multiple=True, help="Only these topics (default: all).")
@click.pass_context
def elect_leaders(ctx: click.Context, topics: tuple[str, ...]) -> None:
    """Preferred leader election: each partition's first replica leads again where in sync."""
    with Admin(cluster_options(ctx)) as admin:
        click.echo(f"{admin.elect_preferred_leaders(list(topics) or None)} partition(s) changed leader.")


@click.command("verify-replicas")
@click.option("--topic", "topics", multiple=True, help="Only these topics (default: all).")
@click.pass_context
def verify_replicas(ctx: click.Context, topics: tuple[str, ...]) -> None:
    """Compare in-sync replicas with their leader frame by frame up to the high watermark."""
    with Admin(cluster_options(ctx)) as admin:
        mismatches = admin.verify_replicas(list(topics) or None)
    for m in mismatches:
        click.echo(f"{m.topic}-{m.partition}: replica {m.replica} differs from leader {m.leader} "
                   f"at offset {m.offset}: {m.reason}")
    if mismatches:
        raise click.ClickException(f"{len(mismatches)} replica(s) differ")
    click.echo("All in-sync replicas match their leaders.")
