"""Shared helpers of the CLI commands."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from kstream.config import option_text
from kstream.errors import ConfigError


def parse_pairs(pairs: tuple[str, ...], what: str) -> dict[str, str]:
    """`k=v` arguments as a dict (:func:`kstream.config.option_text.parse_pairs`, which the
    console's forms use too); a malformed one is a usage error naming it."""
    try:
        return option_text.parse_pairs(pairs, what)
    except ConfigError as err:
        raise click.BadParameter(str(err).removeprefix(f"{what}: "), param_hint=what) from err


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


def console() -> Console:
    """Rich output: the terminal's width, or wide enough for whole tables when piped."""
    terminal = Console()
    return terminal if terminal.is_terminal else Console(width=240)
