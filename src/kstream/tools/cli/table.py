"""`kstream table get`: look keys up in a compacted topic (kstream's own: Kafka has no lookups).

Prints, for each KEY in order, its latest value a read_committed consumer sees, one line
each, shaped by kafka-console-consumer's formatter properties (``--property
print.key=true,print.offset=true,...``; a typed topic's value prints as JSON). A key with no
value (never written, or deleted by a tombstone) prints ``KEY: no value`` on stderr and the
command then exits 1 (as grep does when nothing matched). ``--as-of PARTITION=OFFSET`` (for
every partition) answers as of those offsets. Read-only: a :class:`kstream.Table`, which
creates nothing.
"""

from __future__ import annotations

import sys

import click

from kstream.client.table import Table
from kstream.tools.cli.common import parse_properties
from kstream.tools.cli.formatter import MessageFormatter


@click.group("table")
def table() -> None:
    """Look keys up in compacted topics (kstream only: Kafka has no key lookups)."""


def _as_of(values: tuple[str, ...]) -> dict[int, int] | None:
    if not values:
        return None
    offsets: dict[int, int] = {}
    for value in values:
        partition, _, offset = value.partition("=")
        if not (partition.strip().isdigit() and offset.strip().isdigit()):
            raise click.BadParameter(f"{value!r}: expected PARTITION=OFFSET (both numbers)", param_hint="--as-of")
        offsets[int(partition)] = int(offset)
    return offsets


@table.command("get")
@click.argument("topic")
@click.argument("keys", nargs=-1, required=True, metavar="KEY...")
@click.option("--as-of", "as_of", multiple=True, metavar="PARTITION=OFFSET",
              help="Answer as of these offsets (one per partition, every partition), not the latest.")
@click.option("--property", "properties", multiple=True, metavar="K=V[,K=V]",
              help="Formatter property, as kafka-console-consumer's: print.key, print.partition, print.offset, "
                   "print.timestamp, print.headers, key.separator, null.literal.")
@click.option("--print-key", is_flag=True, help="Shorthand for --property print.key=true.")
@click.pass_context
def get(ctx: click.Context, topic: str, keys: tuple[str, ...], as_of: tuple[str, ...], properties: tuple[str, ...],
        print_key: bool) -> None:
    """Print the latest value of each KEY (text, as UTF-8) of compacted TOPIC."""
    chosen = {"print.key": "true"} if print_key else {}
    chosen.update(parse_properties(properties, "--property"))
    formatter = MessageFormatter.from_properties(chosen)
    missing = 0
    out = sys.stdout.buffer
    with Table(ctx.obj["cluster"], topic, as_of=_as_of(as_of)) as lookups:
        for key in keys:
            message = lookups.get(key)
            if message is None:
                missing += 1
                click.echo(f"{key}: no value (never written, or deleted)", err=True)
            else:
                formatter.write(message, out)
    out.flush()
    if missing:
        ctx.exit(1)
