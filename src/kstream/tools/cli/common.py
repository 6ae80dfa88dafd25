"""Shared helpers of the CLI commands."""

from __future__ import annotations

from typing import Any

import click
import pyarrow as pa
from rich.console import Console

from kstream.errors import ConfigError


def parse_pairs(pairs: tuple[str, ...], what: str) -> dict[str, str]:
    """`k=v` arguments as a dict; a malformed one is a usage error naming it."""
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not key=value", param_hint=what)
        result[key.strip()] = value.strip()
    return result


def parse_properties(values: tuple[str, ...], what: str) -> dict[str, str]:
    """``--property`` values as a dict. Each is ``k=v`` as in Kafka's tools, or several
    ``k1=v1,k2=v2`` in one (split at commas only when every piece is a ``k=v``, so
    ``key.separator=,`` stays one pair). Separators keep their spaces."""
    result: dict[str, str] = {}
    for text in values:
        pieces = text.split(",")
        if len(pieces) > 1 and all("=" in p and p.partition("=")[0].strip() for p in pieces):
            chosen = pieces
        else:
            chosen = [text]
        for piece in chosen:
            key, sep, value = piece.partition("=")
            if not sep or not key.strip():
                raise click.BadParameter(f"{piece!r} is not key=value", param_hint=what)
            result[key.strip()] = value
    return result


def pick_topic(argument: str | None, option: str | None) -> str:
    """The topic named as an argument (kstream's way) or by ``--topic`` (Kafka's tools' way)."""
    if argument and option and argument != option:
        raise click.UsageError(f"two topics given: {argument!r} and --topic {option!r}")
    topic = argument or option
    if not topic:
        raise click.UsageError("name the topic: TOPIC or --topic TOPIC")
    return topic


def cluster_options(ctx: click.Context, **extra: Any) -> dict[str, Any]:
    """The client config for the cluster named by --cluster, plus ``extra``."""
    options: dict[str, Any] = {"cluster": ctx.obj["cluster"]}
    options.update({k: v for k, v in extra.items() if v is not None})
    return options


def parse_schema(text: str) -> pa.Schema:
    """A typed topic's schema from `name:type,...` (types: Arrow names, e.g. int64, string,
    float64, bool, binary, timestamp[ms], date32; a trailing `!` makes a column non-null)."""
    fields = []
    for part in text.split(","):
        name, sep, type_name = part.strip().partition(":")
        if not sep or not name:
            raise ConfigError(f"schema column {part!r} is not name:type")
        nullable = not type_name.endswith("!")
        type_name = type_name.rstrip("!")
        try:
            if type_name.startswith("timestamp[") and type_name.endswith("]"):
                data_type = pa.timestamp(type_name[len("timestamp["):-1])
            else:
                data_type = pa.type_for_alias(type_name)
        except ValueError as err:
            raise ConfigError(f"schema column {name!r}: unknown type {type_name!r}") from err
        fields.append(pa.field(name, data_type, nullable=nullable))
    return pa.schema(fields)


def console() -> Console:
    """Rich output: the terminal's width, or wide enough for whole tables when piped."""
    terminal = Console()
    return terminal if terminal.is_terminal else Console(width=240)
