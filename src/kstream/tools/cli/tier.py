"""`kstream tier run`: copy tiered topics' sealed segments into their Delta tables."""

from __future__ import annotations

import logging
import time

import click

from kstream.errors import KStreamError
from kstream.log.cluster.cluster import Cluster
from kstream.tiering import PartitionTiered, Tierer
from kstream.tools.cli.common import cluster_options

log = logging.getLogger(__name__)


@click.group()
def tier() -> None:
    """Tier topics' history into Delta tables (topic config tier.delta.path; docs/TIERING.md)."""


@tier.command("run")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC",
              help="Only this tiered topic (repeatable; default: every topic with tier.delta.path).")
@click.option("--once", is_flag=True, help="One pass, then exit (default: a pass every --interval-ms until Ctrl-C).")
@click.option("--interval-ms", type=click.IntRange(100, 24 * 3600 * 1000), default=10_000, show_default=True,
              help="Time between the passes of a continuous run.")
@click.option("--force", is_flag=True,
              help="Copy every sealed segment now, not only partitions due by tier.lag.ms / tier.lag.bytes.")
@click.pass_context
def run(ctx: click.Context, topics: tuple[str, ...], once: bool, interval_ms: int, force: bool) -> None:
    """Copy the committed records of sealed segments (below the HW and the LSO; aborted
    transactions and control frames dropped) into each tiered topic's Delta table, with
    idempotent commits: a run killed at any moment and started again neither loses nor
    duplicates a row. A partition is copied when due: its oldest untiered sealed segment waited
    tier.lag.ms, or its untiered segments hold tier.lag.bytes (--force: now). Retention then
    deletes only segments the table holds."""
    cluster = Cluster.open(cluster_options(ctx)["cluster"])
    try:
        tierer = Tierer(cluster)
        names = list(topics) or None
        while True:
            try:
                results = tierer.run(names, force=force)
                if not results:
                    click.echo("no tiered topics (set a topic's tier.delta.path to tier it)")
                for done in results:
                    _report(done)
            except KStreamError as err:
                if once:
                    raise
                log.error("tier pass failed (the next pass tries again): %s", err)
                click.echo(f"error: {err}", err=True)
            if once:
                return
            time.sleep(interval_ms / 1000)
    finally:
        cluster.close()


def _report(done: PartitionTiered) -> None:
    where = f"{done.topic}-{done.partition}"
    if done.commits:
        click.echo(f"{where}: tiered offsets {done.start_offset}..{done.end_offset - 1}: {done.records} record(s) "
                   f"in {done.commits} commit(s), table version {done.delta_version}")
    else:
        click.echo(f"{where}: lake end {done.end_offset}; {done.waiting}")
