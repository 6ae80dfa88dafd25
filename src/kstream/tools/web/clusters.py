"""Which clusters a console serves: named paths, checked at start, opened per request.

A console serves one or more clusters, each under a name used in URLs
(``/c/NAME/...``). Names come from ``--cluster PATH`` (the directory's base
name) or ``--cluster NAME=PATH``, or from a TOML file (``[clusters.NAME]
path = "..."``). Every path must already hold a cluster (its
``cluster.properties`` and ``metadata.db``): the console never creates one, and a
missing one is a :class:`ClusterNotFoundError` at start, not at the first page.

Opening is per request (:func:`open_cluster` / :func:`open_groups`): a Cluster
holds a SQLite connection, which is not shared between the server's threads.
Opening the way the CLI's read commands do writes nothing (docs/CLI.md
"read-only commands").
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from kstream.errors import ClusterNotFoundError, ConfigError
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
MAX_CLUSTERS = 64


@dataclass(frozen=True)
class ClusterRef:
    """A served cluster: its URL name and its absolute path."""

    name: str
    path: str


def parse_cluster_option(value: str) -> ClusterRef:
    """``PATH`` (named by its base name) or ``NAME=PATH``."""
    name, sep, path = value.partition("=")
    if not sep:
        path = value
        name = os.path.basename(os.path.normpath(os.path.abspath(value)))
    return _ref(name, path, f"--cluster {value}")


def read_clusters_file(path: str) -> list[ClusterRef]:
    """The clusters of a TOML file: ``[clusters.NAME]`` tables with a ``path`` (relative paths
    are relative to the file's directory)."""
    try:
        with open(path, "rb") as f:
            document = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"--clusters-file {path}: cannot read it ({err})") from err
    tables = document.get("clusters")
    if not isinstance(tables, dict) or not tables:
        raise ConfigError(f'--clusters-file {path}: expected [clusters.NAME] tables with path = "..."')
    refs = []
    for name, table in tables.items():
        if not isinstance(table, dict) or not isinstance(table.get("path"), str):
            raise ConfigError(f'--clusters-file {path}: [clusters.{name}] needs path = "..."')
        where = os.path.join(os.path.dirname(os.path.abspath(path)), table["path"])
        refs.append(_ref(name, where, f"--clusters-file {path} [clusters.{name}]"))
    return refs


def _ref(name: str, path: str, what: str) -> ClusterRef:
    if not _NAME.match(name):
        raise ConfigError(f"{what}: cluster name {name!r} must be 1-64 of A-Z a-z 0-9 . _ -")
    return ClusterRef(name, os.path.abspath(path))


def check_clusters(refs: Sequence[ClusterRef]) -> dict[str, ClusterRef]:
    """The clusters by name, in the given order. Refuses none, too many, a name twice, and a
    path that holds no cluster (nothing is created)."""
    if not refs:
        raise ConfigError("name at least one cluster: --cluster PATH or --clusters-file FILE")
    if len(refs) > MAX_CLUSTERS:
        raise ConfigError(f"{len(refs)} clusters: a console serves at most {MAX_CLUSTERS}")
    by_name: dict[str, ClusterRef] = {}
    for ref in refs:
        if ref.name in by_name:
            raise ConfigError(f"two clusters are named {ref.name!r} ({by_name[ref.name].path} and "
                              f"{ref.path}); name them: --cluster NAME=PATH")
        for needed in (fmt.CLUSTER_PROPERTIES, fmt.METADATA_DB):
            if not os.path.isfile(os.path.join(ref.path, needed)):
                raise ClusterNotFoundError(f"no kstream cluster at {ref.path} (cluster {ref.name!r}: no "
                                           f"{needed}); the console creates none")
        by_name[ref.name] = ref
    return by_name


@contextmanager
def open_cluster(ref: ClusterRef) -> Iterator[Cluster]:
    """The cluster, opened for one request and closed after it."""
    cluster = Cluster.open(ref.path)
    try:
        yield cluster
    finally:
        cluster.close()


@contextmanager
def open_groups(ref: ClusterRef) -> Iterator[ConsumerGroups]:
    """The cluster's consumer groups service (as `kstream groups` opens it), for one request."""
    with open_cluster(ref) as cluster:
        service = ConsumerGroups(cluster)
        try:
            yield service
        finally:
            service.close()
