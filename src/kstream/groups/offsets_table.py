"""The group offsets table: a Delta table of committed offsets, written with ``deltalake``.

Layout: ``<cluster>/__consumer_offsets``, partitioned by ``group``. Each
commit replaces its group's partition with the group's complete set of
offsets (an overwrite with a ``group = ...`` predicate), so

- the current snapshot holds exactly one row per (group, topic, partition)
  and one small Parquet file per group: reading a group's offsets opens one
  file, however many commits came before (compaction by construction);
- every Delta version is the state of all groups after one commit, so
  "the offsets group G had committed at version V / time T" is a time-travel
  read of that version;
- a commit may carry a Delta app transaction (app id, version): Delta stores
  the highest version per app id in the same atomic commit, which makes
  replays detectable (:meth:`OffsetsTable.transaction_version`).

Maintenance runs as part of committing: delta-rs writes a checkpoint every
``delta.checkpointInterval`` (100) versions and drops expired log files with
it; every :data:`VACUUM_INTERVAL` versions the committer vacuums data files
older than the history retention. History is readable for that long
(``offsets.history.retention.ms``, default 7 days).

This module only reads and writes the table; validation and fencing live in
:mod:`kstream.groups.service`, which serialises writers of one group.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import DeltaError

from kstream.errors import KStreamError

log = logging.getLogger(__name__)

TABLE_DIR = "__consumer_offsets"
VACUUM_INTERVAL = 500

SCHEMA = pa.schema([
    pa.field("group", pa.string(), nullable=False),
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("leader_epoch", pa.int32()),
    pa.field("metadata", pa.string()),
    pa.field("generation", pa.int32(), nullable=False),
    pa.field("member_id", pa.string()),
    pa.field("committer", pa.string()),
    pa.field("commit_time", pa.timestamp("us", tz="UTC"), nullable=False),
])
FILE_SCHEMA = pa.schema([f for f in SCHEMA if f.name != "group"])  # the group is the partition value


class OffsetsHistoryError(KStreamError):
    """A historical read asked for a version or time the table cannot give."""


@dataclass(frozen=True)
class CommittedOffset:
    """One row of the table: a group's committed position in one partition."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int | None = None
    metadata: str | None = None
    generation: int = -1
    member_id: str | None = None
    committer: str | None = None
    commit_time: dt.datetime | None = None


Offsets = dict[tuple[str, int], CommittedOffset]


def sql_string(value: str) -> str:
    """A SQL string literal (the predicate language of delta-rs)."""
    return "'" + value.replace("'", "''") + "'"


class OffsetsTable:
    """The Delta table of one cluster. Safe to share between threads of one process."""

    def __init__(self, cluster_path: str, history_retention_ms: int):
        self.path = os.path.join(cluster_path, TABLE_DIR)
        self._retention_ms = history_retention_ms
        self._table: DeltaTable | None = None
        # (version, group -> its data files) of the last snapshot listed; Delta versions are
        # immutable, so a listing keyed on its version cannot go stale (see _group_files).
        self._files: tuple[int, dict[str, list[str]]] | None = None
        self.created = False

    # -- creating and loading ---------------------------------------------------------

    def ensure_created(self) -> None:
        """Create the table if it does not exist (callers hold the cluster's groups lock)."""
        if self.created:
            return
        if not DeltaTable.is_deltatable(self.path):
            retention = f"interval {max(1, self._retention_ms // 1000)} seconds"
            DeltaTable.create(self.path, SCHEMA, mode="ignore", partition_by=["group"],
                              name="__consumer_offsets", description="kstream committed offsets",
                              configuration={"delta.checkpointInterval": "100",
                                             "delta.logRetentionDuration": retention,
                                             "delta.deletedFileRetentionDuration": retention})
        self.created = True

    def _latest(self) -> DeltaTable | None:
        """The newest snapshot, cached. Delta versions are contiguous, so one stat of the next
        version's log file tells whether anyone committed since; only then is the log listed
        (delta-rs lists all of ``_delta_log`` to update, which grows with the history kept)."""
        table = self._table
        if table is None:
            if not DeltaTable.is_deltatable(self.path):
                return None
            table = self._table = DeltaTable(self.path)
            self.created = True
        elif os.path.exists(os.path.join(self.path, "_delta_log", f"{table.version() + 1:020d}.json")):
            table.update_incremental()
        return table

    def snapshot(self) -> DeltaTable | None:
        """The newest version, to read and then write against (optimistic concurrency)."""
        return self._latest()

    def version(self) -> int:
        table = self._latest()
        return -1 if table is None else table.version()

    # -- reading ----------------------------------------------------------------------

    def read(self, group: str, version: int | None = None,
             timestamp: dt.datetime | None = None) -> Offsets:
        """A group's offsets now, at a table ``version``, or as of ``timestamp``."""
        rows: Offsets = {}
        for row in self.rows(group, version, timestamp).to_pylist():
            committed = CommittedOffset(**row)
            rows[(committed.topic, committed.partition)] = committed
        return rows

    def rows(self, group: str, version: int | None = None, timestamp: dt.datetime | None = None,
             snapshot: DeltaTable | None = None) -> pa.Table:
        """A group's rows (without the ``group`` column) as one Arrow table (from ``snapshot``
        when given)."""
        table = snapshot or self._at(version, timestamp)
        if table is None:
            return FILE_SCHEMA.empty_table()
        parts = []
        for path in self._group_files(table).get(group, ()):
            # One small file per group; pyarrow without threads (and without delta-rs's
            # dataset layer, whose threads abort the interpreter at exit in deltalake 1.6).
            try:
                parts.append(self._read_file(path))
            except FileNotFoundError as exc:
                raise OffsetsHistoryError(
                    f"the group offsets table at version {table.version()} needs {path}, which "
                    f"vacuum removed (history is kept for offsets.history.retention.ms="
                    f"{self._retention_ms})") from exc
        return pa.concat_tables(parts) if parts else FILE_SCHEMA.empty_table()

    def _read_file(self, path: str) -> pa.Table:
        """One data file (a hook: kstream.monitor's evaluation of many groups reuses files it
        has read, which it may since data files are written once)."""
        return read_data_file(path)

    def _group_files(self, table: DeltaTable) -> dict[str, list[str]]:
        """Group -> its data files in ``table``'s version, from one listing of the version's
        add actions, kept for the next call on the same version: a page reading 50 groups
        lists once instead of 50 pruned ``file_uris`` calls (each ~2 ms in delta-rs)."""
        version = table.version()
        cached = self._files
        if cached is not None and cached[0] == version:
            return cached[1]
        actions = pa.table(table.get_add_actions(flatten=True)).select(["path", "partition.group"])
        files: dict[str, list[str]] = {}
        for path, group in zip(actions.column(0).to_pylist(), actions.column(1).to_pylist(), strict=True):
            files.setdefault(group, []).append(_data_file(self.path, path))
        self._files = (version, files)  # one assignment: readers on other threads see old or new
        return files

    def _at(self, version: int | None, timestamp: dt.datetime | None) -> DeltaTable | None:
        if version is None and timestamp is None:
            return self._latest()
        if not DeltaTable.is_deltatable(self.path):
            raise OffsetsHistoryError("no group has committed offsets in this cluster yet, so "
                                      "there is no history to read")
        try:
            if version is not None:
                return DeltaTable(self.path, version=version)
            table = DeltaTable(self.path)
            table.load_as_version(timestamp)  # type: ignore[arg-type]
            return table
        except (DeltaError, OSError, ValueError) as exc:
            when = f"version {version}" if version is not None else f"time {timestamp}"
            raise OffsetsHistoryError(
                f"the group offsets table has no readable state at {when} ({exc}); history "
                f"is kept for offsets.history.retention.ms={self._retention_ms} and starts "
                "at the first commit") from exc

    def groups(self) -> list[str]:
        """Groups with offsets in the current snapshot."""
        table = self._latest()
        if table is None:
            return []
        return sorted({p["group"] for p in table.partitions()})

    def transaction_version(self, app_id: str) -> int | None:
        """The highest app transaction version committed under ``app_id`` (None: none)."""
        table = self._latest()
        return None if table is None else table.transaction_version(app_id)

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        table = self._latest()
        return [] if table is None else table.history(limit)

    # -- writing ---------------------------------------------------------------------

    def write(self, group: str, offsets: Iterable[CommittedOffset] | pa.Table,
              transaction: tuple[str, int] | None = None,
              custom_metadata: Mapping[str, str] | None = None, snapshot: DeltaTable | None = None) -> int:
        """Replace ``group``'s rows with ``offsets`` (objects, or a table of the file columns)
        in one Delta commit; the new version. With ``snapshot`` (from :meth:`snapshot`) the
        commit is made against that version: if another commit changed the group's rows
        since, Delta refuses it (``CommitFailedError``) and nothing is written."""
        self.ensure_created()
        table = snapshot or self._latest()
        assert table is not None
        if not isinstance(offsets, pa.Table):
            now = dt.datetime.now(dt.UTC)
            offsets = pa.Table.from_pylist([{**vars(o), "commit_time": o.commit_time or now} for o in offsets],
                                           schema=FILE_SCHEMA)
        data = offsets.select(FILE_SCHEMA.names).add_column(0, SCHEMA.field("group"),
                                                               pa.array([group] * offsets.num_rows, pa.string()))
        properties = CommitProperties(
            custom_metadata={"kstream.group": group, **(custom_metadata or {})},
            app_transactions=[Transaction(*transaction)] if transaction else None)
        if data.num_rows:
            write_deltalake(table, data.cast(SCHEMA), mode="overwrite",
                            predicate=f'"group" = {sql_string(group)}', commit_properties=properties)
        else:
            table.delete(f'"group" = {sql_string(group)}', commit_properties=properties)
        version = table.version()  # the table object follows its own commits
        if version and version % VACUUM_INTERVAL == 0:
            self.vacuum()
        return version

    def vacuum(self) -> list[str]:
        """Delete data files that no version younger than the history retention uses."""
        table = self._latest()
        if table is None:
            return []
        try:
            removed = table.vacuum(retention_hours=max(0, self._retention_ms // 3_600_000),
                                   dry_run=False, enforce_retention_duration=False)
            table.cleanup_metadata()
        except (DeltaError, OSError) as exc:  # maintenance must never fail a commit
            log.warning("vacuum of %s failed: %s", self.path, exc)
            return []
        return removed


def read_data_file(path: str) -> pa.Table:
    """One of the table's data files (a group's rows, without the group column)."""
    return pq.read_table(_local(path), use_threads=False, schema=FILE_SCHEMA)


def _data_file(table_path: str, path: str) -> str:
    """A data file's local path from an add action's path (a URI, relative to the table
    unless absolute): the percent-escapes of the URI are undone, once."""
    if "://" in path:
        return _local(urllib.parse.unquote(path))
    return os.path.join(table_path, urllib.parse.unquote(path))


def _local(uri: str) -> str:
    return uri[len("file://"):] if uri.startswith("file://") else uri

