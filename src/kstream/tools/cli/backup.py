"""`kstream backup DEST`: a consistent copy of the live cluster that is itself a cluster."""

from __future__ import annotations

import click

from kstream.errors import KStreamError
from kstream.tools.backup import backup_cluster
from kstream.tools.cli.common import console


@click.command("backup")
@click.argument("destination", metavar="DEST", type=click.Path(file_okay=False))
@click.pass_context
def backup(ctx: click.Context, destination: str) -> None:
    """Copy the cluster into DEST (a new or empty dir) while producers, consumers and Spark
    jobs run; the copy is a cluster: open it with `kstream --cluster DEST ...`.

    Every record below each partition's high watermark (printed) is in the backup, with
    the metadata, transaction state and consumer group offsets as of one instant; records
    appended meanwhile may be in it too. Nothing is written to the source. Restore: point
    --cluster (or $KSTREAM_CLUSTER) at DEST, or `kstream --cluster DEST backup PATH` to copy
    it where you want it. See docs/OPERATIONS.md."""
    try:
        report = backup_cluster(ctx.obj["cluster"], destination)
    except KStreamError as err:  # with what is left at DEST, when the copy was cut short
        raise click.ClickException(" ".join([str(err), *getattr(err, "__notes__", [])])) from err
    out = console()
    out.print(f"Backed up {report.source} to {report.destination}: {len(report.topics)} topic(s), "
              f"{len(report.partitions)} partition(s), {report.bytes_copied} bytes copied; consumer offsets "
              f"table {'copied' if report.offsets_table else 'absent (no group has committed)'}.", highlight=False)
    if report.dropped_topics:
        out.print(f"Being deleted at the backup, so deleted in it too: {', '.join(report.dropped_topics)}",
                  highlight=False)
    out.print("Log dirs of the backup: " + ", ".join(f"{i}={p}" for i, p in report.log_dirs), highlight=False)
    if report.partitions:
        out.print(f"{'TOPIC':<30} {'PARTITION':>9} {'HIGH-WATERMARK':>15} {'LOG-END-OFFSET':>15} {'REPLICAS':>8}",
                  highlight=False)
        for p in report.partitions:
            out.print(f"{p.topic:<30} {p.partition:>9} {p.high_watermark:>15} {p.log_end_offset:>15} {p.replicas:>8}",
                      highlight=False)
    out.print("Every record below a partition's HIGH-WATERMARK is in the backup; records from there to its "
              "LOG-END-OFFSET were appended during the backup and become visible once a writer uses the backup.",
              highlight=False)
