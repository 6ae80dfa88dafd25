"""`kstream jar-path`: where the JVM reader's jar is, for ``spark-submit --jars``."""

from __future__ import annotations

import sys

import click

from kstream.jars import jar_path as _jar_path


@click.command("jar-path")
def jar_path() -> None:
    """Print the path of the kstream JVM reader jar (spark-submit --jars $(kstream jar-path))."""
    path = _jar_path()
    if path is None:
        click.echo("no kstream JVM jar was built (no JDK when the package was installed; see "
                   "docs/JVM_READER.md): the Python reader serves every read", err=True)
        sys.exit(1)
    click.echo(path)
