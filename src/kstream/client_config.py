"""Split a client's configuration into its own options and the cluster's.

Producer, Consumer and Admin take one dict, as confluent-kafka's do. Besides
their own options it may hold broker-side settings (``log.dirs``, ...): they
are used when the cluster is created (only Admin.create_topics creates one)
and checked against the cluster's stored values afterwards. Where a name
means both (Kafka has the same overlap, e.g. ``compression.type``), the
client's meaning wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kstream.log.cluster import Cluster
from kstream.options import CLUSTER_OPTIONS, Option, parse_options


def client_options(table: Mapping[str, Option], config: Mapping[str, Any] | None,
                   kwargs: Mapping[str, Any], what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A client's parsed options (config dict plus keyword overrides) and the broker-side
    settings among them (checked here, returned unparsed: the cluster compares them with its own)."""
    given = {**(config or {}), **kwargs}
    broker = {k: v for k, v in given.items() if k in CLUSTER_OPTIONS and k not in table}
    own = {k: v for k, v in given.items() if k not in broker}
    parse_options(CLUSTER_OPTIONS, broker, what=what)  # bad settings fail here, before any open or create
    return parse_options(table, own, what=what), broker


def open_client(table: Mapping[str, Option], config: Mapping[str, Any] | None,
                kwargs: Mapping[str, Any], what: str) -> tuple[dict[str, Any], Cluster]:
    """Parse a client's options and open its cluster, which must exist
    (:class:`ClusterNotFoundError` otherwise: clients that read or write never create one)."""
    options, broker = client_options(table, config, kwargs, what)
    return options, Cluster.open(options.get("cluster"), broker)
