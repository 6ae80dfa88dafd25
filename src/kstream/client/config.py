"""Split a client's configuration into its own options and the cluster's.

Producer, Consumer and Admin take one dict, as confluent-kafka's do. Besides
their own options it may hold broker-side settings (``log.dirs``, ...): they
are used when the cluster is created (only Admin.create_topics creates one)
and checked against the cluster's stored values afterwards. Where a name
means both (Kafka has the same overlap, e.g. ``compression.type``), the
client's meaning wins.

librdkafka's names go through :mod:`kstream.config.librdkafka` first: those
that mean nothing for an embedded log are accepted and dropped, aliases are
renamed, callbacks (``error_cb``, ``stats_cb``, ``logger``, ...) are checked
and returned among the options under their names (None when not given), with
``oauth`` the :class:`~kstream.client.callbacks.OAuthTokens` schedule (or None).
Options of the other client kind (``group.id`` given to a Producer) are
accepted and ignored, as librdkafka does. Anything else unknown is a ConfigError.

The options also hold ``config``: the client's effective configuration as confluent-kafka's
read-only ``config`` property shows it (:func:`config_dump`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from kstream.client.callbacks import oauth_tokens
from kstream.config.librdkafka import ACCEPTED_NAMES, CALLBACK_NAMES, CALLBACKS, normalize, note_cluster_path
from kstream.config.options import CLUSTER_OPTIONS, CONSUMER_OPTIONS, PRODUCER_OPTIONS, Option, parse_options
from kstream.errors import ConfigError
from kstream.log.cluster.cluster import Cluster, resolve_cluster_path

_CLIENT_NAMES = frozenset(PRODUCER_OPTIONS) | frozenset(CONSUMER_OPTIONS)


def client_options(table: Mapping[str, Option], config: Mapping[str, Any] | None,
                   kwargs: Mapping[str, Any], what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A client's parsed options (config dict plus keyword overrides, callbacks included) and
    the broker-side settings among them (checked here, returned unparsed: the cluster compares
    them with its own)."""
    if config is not None and not isinstance(config, Mapping):
        raise TypeError(f"expected configuration dict, got {type(config).__name__}")
    given = {**(config or {}), **kwargs}
    normalized, callbacks = normalize(given, frozenset(table) | frozenset(CLUSTER_OPTIONS))
    broker = {k: v for k, v in normalized.items() if k in CLUSTER_OPTIONS and k not in table}
    own = {k: v for k, v in normalized.items()
           if k not in broker and (k in table or k not in _CLIENT_NAMES)}
    for name in own:
        if name not in table:
            names = [*table, *sorted(_CLIENT_NAMES - set(table)), *ACCEPTED_NAMES]
            close = difflib.get_close_matches(name, names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(f"unknown option {name!r} for {what}{hint}")
    parse_options(CLUSTER_OPTIONS, broker, what=what)  # bad settings fail here, before any open or create
    options = parse_options(table, own, what=what)
    options.update(dict.fromkeys(CALLBACK_NAMES))
    options.update(callbacks)
    options["oauth"] = oauth_tokens(options["oauth_cb"], given)
    options["config"] = config_dump(table, options, given)
    note_cluster_path(given, resolve_cluster_path(options.get("cluster")), options.get("logger"))
    return options, broker


def open_client(table: Mapping[str, Option], config: Mapping[str, Any] | None,
                kwargs: Mapping[str, Any], what: str) -> tuple[dict[str, Any], Cluster]:
    """Parse a client's options and open its cluster, which must exist
    (:class:`ClusterNotFoundError` otherwise: clients that read or write never create one)."""
    options, broker = client_options(table, config, kwargs, what)
    return options, Cluster.open(options.get("cluster"), broker)


def config_dump(table: Mapping[str, Option], options: Mapping[str, Any], given: Mapping[str, Any]
                ) -> dict[str, str]:
    """The effective configuration as strings, as librdkafka's configuration dump: every option
    of ``table`` that has a value (defaults included), then the other names given (librdkafka
    properties kstream accepts and ignores, as given). Callbacks are not properties: left out."""
    dump = {name: _as_property(options[name]) for name in table
            if options.get(name) is not None and not callable(options[name])}
    for name, value in given.items():
        if name not in dump and name not in CALLBACKS and not callable(value) \
                and not isinstance(value, Mapping):
            dump[name] = _as_property(value)
    return dump


def _as_property(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)
