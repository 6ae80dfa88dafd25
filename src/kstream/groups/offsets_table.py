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

A cluster where no group ever committed has no table, and reading it creates
nothing. Once the table is made, the cluster's metadata holds a durable mark
(counter :data:`CREATED_COUNTER`, set after the table's first version is
written), so a table that goes missing or unreadable later is a fault,
:class:`OffsetsTableLostError`, never read as "no commits" (every group would
restart from ``auto.offset.reset``) and never replaced by a fresh empty table.
:meth:`OffsetsTable.recreate` is the operator's way out when no backup exists.

This module only reads and writes the table; validation and fencing live in
:mod:`kstream.groups.service`, which serialises writers of one group.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import DeltaError
from deltalake.schema import Field, PrimitiveType

from kstream.errors import ClusterError, KStreamError
from kstream.log.cluster.metadata import Metadata
from kstream.log.storage.disk import fsync_dir

log = logging.getLogger(__name__)

TABLE_DIR = "__consumer_offsets"
CREATED_COUNTER = "offsets_table_created"
"""Counter in the cluster's metadata, non-zero once the offsets table has been made."""
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
    # The topic's incarnation the offset is for (TopicInfo.topic_id): a topic deleted and
    # created again has a new id, and the old rows no longer count. Added after the first
    # release: tables made before get the column at their next commit (ensure_created), and
    # their older rows read as null, "written before topic ids were recorded".
    pa.field("topic_id", pa.string()),
])
FILE_SCHEMA = pa.schema([f for f in SCHEMA if f.name != "group"])  # the group is the partition value


class OffsetsHistoryError(KStreamError):
    """A historical read asked for a version or time the table cannot give."""


class OffsetsTableLostError(ClusterError):
    """The offsets table is known to exist (a group committed) but is missing or unreadable:
    a fault, never "no group has committed" (which would restart every group from
    ``auto.offset.reset``)."""


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
    topic_id: str | None = None  # None: committed before kstream recorded topic ids


Offsets = dict[tuple[str, int], CommittedOffset]


def sql_string(value: str) -> str:
    """A SQL string literal (the predicate language of delta-rs)."""
    return "'" + value.replace("'", "''") + "'"


class OffsetsTable:
    """The Delta table of one cluster. Safe to share between threads of one process."""

    def __init__(self, cluster_path: str, history_retention_ms: int, metadata: Metadata | None = None):
        self.path = os.path.join(cluster_path, TABLE_DIR)
        self._metadata = metadata  # where the table's "created" mark lives (None: no mark kept)
        self._retention_ms = history_retention_ms
        self._table: DeltaTable | None = None
        # (version, group -> its data files) of the last snapshot listed; Delta versions are
        # immutable, so a listing keyed on its version cannot go stale (see _group_files).
        self._files: tuple[int, dict[str, list[str]]] | None = None
        self.created = False  # ensure_created() ran in this object (the mark is set)

    # -- creating and loading ---------------------------------------------------------

    def ensure_created(self) -> None:
        """Create the table if no group ever committed (callers hold the cluster's groups
        lock); OffsetsTableLostError if it was made once and is gone now."""
        if self.created:
            return
        if not DeltaTable.is_deltatable(self.path):
            if self._known_to_exist():
                raise self._lost("is missing")
            self._create()
        self._mark_created()
        self._add_topic_id()
        self.created = True

    def _add_topic_id(self) -> None:
        """Give a table made before the ``topic_id`` column existed that column (a Delta
        schema change; its data files without it read the column as null)."""
        table = self._latest()
        assert table is not None
        if "topic_id" in table.schema().to_arrow().names:
            return
        try:
            table.alter.add_columns(
                Field("topic_id", PrimitiveType("string"), nullable=True),
                commit_properties=CommitProperties(custom_metadata={"kstream.operation": "add-column-topic_id"}))
        except DeltaError:
            table.update_incremental()  # another committer added it first?
            if "topic_id" not in table.schema().to_arrow().names:
                raise

    def _create(self) -> None:
        retention = f"interval {max(1, self._retention_ms // 1000)} seconds"
        DeltaTable.create(self.path, SCHEMA, mode="ignore", partition_by=["group"],
                          name="__consumer_offsets", description="kstream committed offsets",
                          configuration={"delta.checkpointInterval": "100",
                                         "delta.logRetentionDuration": retention,
                                         "delta.deletedFileRetentionDuration": retention})

    def _mark_created(self) -> None:
        """Set the durable mark, after the table's first version exists: a crash between the
        two leaves a table without a mark (found by its files), never a mark without one."""
        if self._metadata is not None and not self._metadata.counter(CREATED_COUNTER):
            self._metadata.next_counter(CREATED_COUNTER)

    def _known_to_exist(self) -> bool:
        """Was the table made? The metadata's mark says so, or data files in its directory
        (a table made before the mark existed, which lost ``_delta_log``). An empty
        directory, or one with only an empty ``_delta_log``, is a creation cut short."""
        if self._metadata is not None and self._metadata.counter(CREATED_COUNTER):
            return True
        try:
            names = os.listdir(self.path)
        except FileNotFoundError:
            return False
        return any(name != "_delta_log" for name in names)

    def _lost(self, what: str) -> OffsetsTableLostError:
        return OffsetsTableLostError(
            f"the group offsets table {self.path} {what}, but groups have committed offsets "
            "to it: kstream will not read that as \"no commits\" (every group would restart "
            "from auto.offset.reset) nor start an empty table over it. Restore it from a "
            "backup (the whole directory, _delta_log included); without one, `kstream groups "
            "recreate-offsets-table --yes` moves it aside and starts an empty table, and every "
            "group then starts from auto.offset.reset (or `kstream groups reset-offsets`)")

    def _latest(self) -> DeltaTable | None:
        """The newest snapshot, cached; None if no group ever committed. Delta versions are
        contiguous, so one stat of the next version's log file tells whether anyone committed
        since; only then is the log listed (delta-rs lists all of ``_delta_log`` to update,
        which grows with the history kept); a second stat checks the cached version's file is
        still there. OffsetsTableLostError if the table was made and is now missing or
        unreadable."""
        table = self._table
        try:
            if table is None:
                if not DeltaTable.is_deltatable(self.path):
                    if self._known_to_exist():
                        raise self._lost("is missing (no readable _delta_log)")
                    return None
                table = self._table = DeltaTable(self.path)
            elif os.path.exists(self._log_file(table.version() + 1)):
                table.update_incremental()
            elif not os.path.exists(self._log_file(table.version())):
                # The version this process knows is gone: the log was lost under it (a write
                # against it would start a log of one version), or others committed so much
                # since that it expired. Load afresh, which tells the two apart.
                self._table, self._files = None, None
                return self._latest()
        except (DeltaError, OSError, ValueError) as exc:
            raise self._lost(f"is unreadable ({str(exc).splitlines()[0]})") from exc
        return table

    def _log_file(self, version: int) -> str:
        return os.path.join(self.path, "_delta_log", f"{version:020d}.json")

    def recreate(self) -> str:
        """The operator's way out of a lost table with no backup: move what is left of it
        aside (never deleted: ``<table>.lost-<time>``) and make a new empty table. Refused
        (KStreamError) for a readable table or a cluster that never had one. Returns the
        path the old table was moved to (callers hold the cluster's groups lock)."""
        self._table, self._files = None, None
        try:
            found = self._latest()
        except OffsetsTableLostError:
            pass  # lost or unreadable: what this is for
        else:
            state = ("is readable" if found is not None
                     else "was never made (no group has committed offsets in this cluster)")
            raise KStreamError(f"the group offsets table {self.path} {state}: nothing to recreate; "
                               "to move groups' offsets use `kstream groups reset-offsets`")
        aside = f"{self.path}.lost-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        if os.path.lexists(self.path):
            os.rename(self.path, aside)
            fsync_dir(os.path.dirname(self.path))
        self._create()
        self._mark_created()
        self.created = True
        log.warning("group offsets table %s recreated empty; the damaged one is %s", self.path, aside)
        return aside

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
        """One data file (a hook: kstream.tools.monitor's evaluation of many groups reuses files it
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
            if self._known_to_exist():
                raise self._lost("is missing (no readable _delta_log)")
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

