"""`kstream` entry point: global options and the command groups."""

from __future__ import annotations

import logging
import sys

import click

from kstream.errors import KStreamError
from kstream.tools.cli.backup import backup
from kstream.tools.cli.console import consume, produce
from kstream.tools.cli.dump_log import dump_log
from kstream.tools.cli.groups import groups
from kstream.tools.cli.jar_path import jar_path
from kstream.tools.cli.mirror import mirror
from kstream.tools.cli.offsets import delete_records, get_offsets
from kstream.tools.cli.perf import perf
from kstream.tools.cli.reassign import reassign
from kstream.tools.cli.replication import elect_leaders, log_dirs, replicator, verify_replicas
from kstream.tools.cli.table import table
from kstream.tools.cli.tier import tier
from kstream.tools.cli.topics import topics
from kstream.tools.cli.web import console_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--cluster", envvar="KSTREAM_CLUSTER", default="./data", show_default=True,
              help="Cluster path (its metadata dir); env KSTREAM_CLUSTER.")
@click.option("-v", "--verbose", is_flag=True, help="Log what the storage engine does.")
@click.pass_context
def cli(ctx: click.Context, cluster: str, verbose: bool) -> None:
    """kstream: an embedded, Kafka-style commit log of Arrow record batches."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    ctx.obj = {"cluster": cluster}


def _set_cluster(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """``--cluster`` given after a command (Kafka's tools take --bootstrap-server on every
    command): it names the cluster as the root's option does; given both ways, they must agree."""
    if value is None:
        return
    root = ctx.find_root()
    given_before = root.get_parameter_source("cluster") == click.core.ParameterSource.COMMANDLINE
    if given_before and root.obj["cluster"] != value:
        raise click.UsageError(f"--cluster given twice: {root.obj['cluster']!r} before the command and {value!r} "
                               "after it; give it once")
    root.obj["cluster"] = value


def _accept_cluster_anywhere(command: click.Command) -> None:
    """Add ``--cluster`` to ``command`` and every command under it, but to those that have an
    option of that name already (the console's ``--cluster [NAME=]PATH``, which names several)."""
    if not any("--cluster" in getattr(p, "opts", ()) for p in command.params):
        command.params.append(click.Option(
            ["--cluster"], metavar="PATH", expose_value=False, callback=_set_cluster, is_eager=True,
            help="Cluster path (as `kstream --cluster PATH ...`; default $KSTREAM_CLUSTER or ./data)."))
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _accept_cluster_anywhere(sub)


for command in (backup, topics, groups, produce, consume, get_offsets, delete_records, dump_log, perf, log_dirs,
                replicator, elect_leaders, reassign, verify_replicas, jar_path, console_command, tier, table, mirror):
    _accept_cluster_anywhere(command)
    cli.add_command(command)


def main() -> None:
    """Run the CLI; a KStreamError prints its message (no traceback) and exits 1."""
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except KStreamError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(0)
