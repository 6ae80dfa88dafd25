"""`kstream groups reset-offsets`' side of a reset: the domain is :mod:`kstream.groups.offset_reset`
(scope, method, plan, the CSV of --export/--from-file), shared with the console; here its
errors become click's usage errors (exit status 2), and a plan's offsets for a time come
from a Consumer of the cluster named by --cluster."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable

import click

from kstream.client.offsets_at import offsets_at
from kstream.errors import ConfigError
from kstream.groups.offset_reset import METHODS, NO_PARTITIONS, Plan, write_csv
from kstream.groups.offset_reset import parse_duration as _parse_duration
from kstream.groups.offset_reset import plan as _plan
from kstream.groups.offset_reset import scope as _scope
from kstream.groups.service import ConsumerGroups
from kstream.tools.cli.common import cluster_options

__all__ = ["METHODS", "Plan", "parse_duration", "plan", "scope", "write_csv"]


def parse_duration(text: str) -> dt.timedelta:
    """:func:`kstream.groups.offset_reset.parse_duration`, a bad one a usage error of --by-duration."""
    try:
        return _parse_duration(text)
    except ConfigError as err:
        raise click.BadParameter(str(err).removeprefix("--by-duration "), param_hint="--by-duration") from err


def scope(service: ConsumerGroups, group: str, topics: Iterable[str], all_topics: bool) -> list[tuple[str, int]]:
    """:func:`kstream.groups.offset_reset.scope`; neither --topic nor --all-topics is a usage error."""
    topics = list(topics)
    if not topics and not all_topics:
        raise click.UsageError(NO_PARTITIONS)
    return _scope(service, group, topics, all_topics)


def plan(service: ConsumerGroups, ctx: click.Context, group: str, keys: list[tuple[str, int]],
         method: str, value: str | None) -> Plan:
    """:func:`kstream.groups.offset_reset.plan`, with offsets for a time from the cluster of --cluster."""
    return _plan(service, group, keys, method, value, functools.partial(offsets_at, cluster_options(ctx)))
