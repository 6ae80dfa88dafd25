"""The `kstream` command line, in the style of Kafka's tools."""

from kstream.tools.cli.main import main

__all__ = ["main"]
