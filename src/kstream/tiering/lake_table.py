"""One tiered topic's Delta table: made, checked, appended to with idempotent commits.

The table (``tier.delta.path``) is a plain Delta table any engine reads: the columns a
Spark read of the topic gives (``key, value`` or a typed topic's own columns, then ``topic,
partition, offset, timestamp, timestampType, headers``), partitioned by ``partition`` (each
kstream partition's commits add files to its own directory, a reader of one partition or of
an offset range per partition prunes to it, and kstream partitions are few: hundreds, not
millions), with ``delta.appendOnly`` set (the lake is history: rows are never updated).

Each commit carries a Delta app transaction per kstream partition: app id
:func:`app_id` (topic id and partition) and version = the partition's new lake end offset.
Delta stores the highest version per app id in the same atomic commit as the rows, so the
lake end of a partition is read from the Delta log (:meth:`LakeTable.end_offset`) and a
commit is never made twice: a restarted tierer starts from there.

The data files are written by :meth:`LakeTable.append` itself (pyarrow), fsynced with their
directories, and only then committed with deltalake's transaction API (add actions with their
statistics); delta-rs then writes the commit file, which the tierer fsyncs with ``_delta_log``
before it returns, so that the lake end the tierer then records in the metadata (and retention
trusts) is on disk, and a power cut that keeps a commit file keeps every file it names whole.
A commit file (or a checkpoint) a power cut tore is set aside by :meth:`LakeTable.recover`.

The table's description names the topic and its id; a table of another topic (or of an
earlier incarnation of this one) at the path is refused, as is a directory holding other
files.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import os
import re
import time
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake import Field as DeltaField
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import DeltaError
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

from kstream.errors import ConfigError, KStreamError
from kstream.log.storage import disk
from kstream.log.storage.disk import fsync_dir
from kstream.log.storage.output import output_schema

log = logging.getLogger(__name__)

PARTITION_COLUMN = "partition"
OFFSET_COLUMN = "offset"
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")  # Delta's timestamp type is microseconds
FILES_KEY = "kstream.files"
"""The commit metadata key holding how many data files a tier commit adds (a commit file a
power cut tore is told by it: :meth:`LakeTable.recover`)."""

TARGET_FILE_BYTES = 100 << 20
"""A data file is closed and another begun past this many bytes (delta-rs's default target)."""
ROW_GROUP_ROWS = 1 << 20
ROW_GROUP_BYTES = 64 << 20
"""A Parquet row group holds at most this many rows, or about this many bytes of Arrow data."""
INDEXED_COLUMNS = 32
"""Columns with min/max statistics per file: the first 32, Delta's default
(``delta.dataSkippingNumIndexedCols``), plus ``offset`` always."""
STRING_STAT_CHARS = 32


class TierError(KStreamError):
    """The tierer cannot go on: the topic's table is unusable or disagrees with kstream."""


def app_id(topic_id: str, partition: int) -> str:
    """The Delta app id of one partition's tier commits (the topic id: a topic created again
    under the same name is another history)."""
    return f"kstream.tier/{topic_id}/{partition}"


def lake_schema(value_schema: pa.Schema | None) -> pa.Schema:
    """The table's columns for a topic: the reader's output schema with Delta's timestamp type."""
    return pa.schema([pa.field(f.name, TIMESTAMP_TYPE, f.nullable) if f.name == "timestamp" else f
                      for f in output_schema(value_schema)])


def _description(topic: str, topic_id: str) -> str:
    return f"kstream topic {topic!r} tiered by kstream (topic id {topic_id})"


class LakeTable:
    """The Delta table of one topic. One writer at a time (the tierer holds the topic's tier
    lock); readers of the table need nothing from kstream."""

    def __init__(self, path: str, topic: str, topic_id: str):
        self.path = path
        self.topic = topic
        self.topic_id = topic_id
        self._table: DeltaTable | None = None

    def exists(self) -> bool:
        return DeltaTable.is_deltatable(self.path)

    def open(self) -> DeltaTable | None:
        """The table, checked to be this topic's, brought up to date; None when the path holds
        none yet (the first :meth:`append` makes it)."""
        if self._table is None:
            if not self.exists():
                return None
            try:
                table = DeltaTable(self.path)
            except (DeltaError, OSError) as err:
                raise TierError(f"the tier table of topic {self.topic!r} at {self.path} is unreadable: "
                                f"{str(err).splitlines()[0]}. If a power cut tore its newest commit or checkpoint, the "
                                "tierer's next pass sets that aside (run `kstream tier run`); otherwise restore the "
                                "table from a backup") from err
            self._check_owner(table)
            self._table = table
        else:
            self._table.update_incremental()
        return self._table

    def _check_new_directory(self) -> list[str]:
        """Before the table is made: the path is a new or empty directory; returns the
        directories that do not exist yet (delta-rs makes them), deepest first."""
        if os.path.exists(self.path):
            if not os.path.isdir(self.path):
                raise ConfigError(f"option 'tier.delta.path' of topic {self.topic!r}: {self.path} is a file, "
                                  "not a directory; name a directory for the topic's Delta table")
            if any(not _leftover(self.path, name) for name in os.listdir(self.path)):
                raise ConfigError(
                    f"option 'tier.delta.path' of topic {self.topic!r}: {self.path} holds files but no Delta "
                    "table; kstream will not write a table among them: name an empty or new directory")
        missing = []
        parent = self.path
        while not os.path.exists(parent):
            missing.append(parent)
            parent = os.path.dirname(parent)
        return missing

    def recover(self) -> int | None:
        """Set aside the newest commit file when a power cut tore it (returns its version; None:
        it is whole). A commit is fsynced before the tierer records its lake end or writes the
        next commit, so only the newest can be torn, and nothing trusts it: the lake ends where
        the commit before it left it, and the next pass copies that range again. The file is
        renamed ``NNN.json.torn`` (no Delta reader lists it). The tierer calls this under the
        topic's tier lock, before it opens the table."""
        log_dir = os.path.join(self.path, "_delta_log")
        try:
            names = os.listdir(log_dir)
        except (FileNotFoundError, NotADirectoryError):
            return None
        self._recover_checkpoint(log_dir, names)
        versions = [int(name[:20]) for name in names if _COMMIT_NAME.fullmatch(name)]
        if not versions:
            return None
        version = max(versions)
        commit = os.path.join(log_dir, f"{version:020d}.json")
        with open(commit, "rb") as f:
            problem = _torn(f.read())
        if problem is None:
            return None
        try:
            disk.check_writable(log_dir)
            os.rename(commit, commit + ".torn")
            fsync_dir(log_dir)
        except OSError as err:
            raise TierError(f"{self.path}: commit {version} of the tier table of topic {self.topic!r} was torn "
                            f"by a crash ({problem}) and cannot be set aside: {err}; the next pass tries "
                            "again") from err
        self._table = None
        log.warning("%s: commit %d of the tier table of %s was torn by a crash before the tierer made it "
                    "durable (%s); set aside as %s.torn, the next pass copies its rows again",
                    self.path, version, self.topic, problem, commit)
        return version

    def _recover_checkpoint(self, log_dir: str, names: list[str]) -> None:
        """Set aside the newest checkpoint (and ``_last_checkpoint``) when a power cut tore it:
        delta-rs writes one after every 100th commit and fsyncs neither; the tierer fsyncs them
        after the commit (:meth:`_sync_checkpoint`), and a reader without them replays the
        JSON commits, all still there."""
        checkpoints = sorted(name for name in names if _CHECKPOINT_NAME.fullmatch(name))
        torn = []
        if checkpoints and not _readable_parquet(os.path.join(log_dir, checkpoints[-1])):
            torn.append(checkpoints[-1])
        last = os.path.join(log_dir, LAST_CHECKPOINT)
        if os.path.exists(last):
            try:
                with open(last, "rb") as f:
                    named = int(json.loads(f.read())["version"])
            except (ValueError, KeyError, TypeError):
                named = None
            if named is None or any(name.startswith(f"{named:020d}.") for name in torn) or not any(
                    name.startswith(f"{named:020d}.") for name in checkpoints):
                torn.append(LAST_CHECKPOINT)
        if not torn:
            return
        try:
            disk.check_writable(log_dir)
            for name in torn:
                os.rename(os.path.join(log_dir, name), os.path.join(log_dir, name + ".torn"))
            fsync_dir(log_dir)
        except OSError as err:
            raise TierError(f"{self.path}: the tier table's checkpoint {', '.join(torn)} was torn by a crash and "
                            f"cannot be set aside: {err}; the next pass tries again") from err
        self._table = None
        log.warning("%s: the tier table's checkpoint %s was torn by a crash before the tierer made it "
                    "durable; set aside (.torn), readers replay the commits", self.path, ", ".join(torn))

    def _sync_checkpoint(self, version: int) -> None:
        """fsync the checkpoint delta-rs wrote after commit ``version``, if it wrote one."""
        log_dir = os.path.join(self.path, "_delta_log")
        prefix = f"{version:020d}.checkpoint"
        written = [name for name in os.listdir(log_dir) if name.startswith(prefix) and name.endswith(".parquet")]
        if not written:
            return
        for name in written:
            _fsync_file(os.path.join(log_dir, name))
        if os.path.exists(os.path.join(log_dir, LAST_CHECKPOINT)):
            _fsync_file(os.path.join(log_dir, LAST_CHECKPOINT))
        fsync_dir(log_dir)

    def _check_owner(self, table: DeltaTable) -> None:
        description = table.metadata().description or ""
        if description != _description(self.topic, self.topic_id):
            raise TierError(
                f"{self.path} (tier.delta.path of topic {self.topic!r}) is a Delta table kstream did not make "
                f"for this topic (its description: {description!r}; this topic's id is {self.topic_id}): "
                "another topic's table, or one of a topic deleted and created again under this name. "
                "Give the topic a table of its own (an empty or new directory)")

    def end_offset(self, table: DeltaTable, partition: int) -> int:
        """The partition's lake end as the Delta log says (0: nothing tiered yet)."""
        version = table.transaction_version(app_id(self.topic_id, partition))
        return 0 if version is None else int(version)

    def append(self, batches: Iterable[pa.RecordBatch], schema: pa.Schema, ends: Mapping[int, int],
               info: Mapping[str, str]) -> int:
        """Append ``batches`` in one Delta commit that also sets each partition's lake end
        (``ends``: partition -> new end offset, each above the table's); returns the new table
        version, durable on disk. The first append makes the table (version 0, in the same
        commit as its rows). ``info`` goes into the commit's metadata.

        The data files are written here (pyarrow) and fsynced with their directories before
        deltalake commits them (its transaction API, with the add actions and their
        statistics): a power cut after the commit file reached the disk finds every file it
        names whole. The commit file and ``_delta_log`` are fsynced after it."""
        table = self.open()
        failed: list[BaseException] = []
        try:
            disk.check_writable(os.path.join(self.path, "_delta_log"))  # a failing lake disk fails here first
            if table is None:
                missing = self._check_new_directory()
                os.makedirs(self.path, exist_ok=True)
                for directory in reversed(missing):  # their entries, before anything names them
                    fsync_dir(os.path.dirname(directory))
                table_schema = schema
            else:
                for partition, end in ends.items():
                    assert end > self.end_offset(table, partition), (partition, end)
                table_schema = pa.schema(table.schema().to_arrow())
                added = [f for f in schema if f.name not in table_schema.names]
                if added:  # a typed topic's new column: a commit of its own first (rows come after)
                    table.alter.add_columns([DeltaField.from_arrow(f.with_nullable(True)) for f in added],
                                            commit_properties=CommitProperties(
                                                custom_metadata={"kstream.operation": "tier.add-columns"}))
                    table.update_incremental()
                    self._durable(table.version())
                    table_schema = pa.schema(table.schema().to_arrow())
            actions = _write_files(self.path, _keeping_error(batches, failed), schema, table_schema)
            properties = CommitProperties(
                app_transactions=[Transaction(app_id(self.topic_id, p), end) for p, end in sorted(ends.items())],
                custom_metadata={"kstream.operation": "tier", **info, FILES_KEY: len(actions)})
            if table is None:
                # mode="error": a table another writer made meanwhile is not written into.
                create_table_with_add_actions(
                    self.path, DeltaSchema.from_arrow(schema), actions, mode="error",
                    partition_by=[PARTITION_COLUMN], name=self.topic,
                    description=_description(self.topic, self.topic_id),
                    configuration={"delta.appendOnly": "true"}, commit_properties=properties)
                self._durable(0)
                fsync_dir(self.path)  # the entry of _delta_log
                log.info("made the tier table of %s at %s", self.topic, self.path)
                return 0
            changes: list[AddAction | RemoveAction] = [*actions]  # (only adds: the table is append-only)
            table.create_write_transaction(changes, mode="append", schema=table_schema,
                                           partition_by=[PARTITION_COLUMN], commit_properties=properties)
        except (DeltaError, OSError) as err:
            if failed:  # reading the log failed: raise it as it was
                raise failed[0] from err
            raise TierError(f"tiering topic {self.topic!r} into {self.path} failed: "
                            f"{str(err).splitlines()[0]} (nothing was recorded; the next pass tries again)"
                            ) from err
        table.update_incremental()
        version = table.version()
        self._durable(version)
        return version

    def sync_commits(self, first: int, last: int) -> None:
        """Make commits ``first``..``last`` durable (their files, then the commit files): a
        commit that landed in a pass whose fsync failed (a full disk) is in the table, but not
        on disk for sure; the lake end it holds may be recorded (and trusted by retention) only
        after this. TierError when an fsync fails again."""
        for version in range(max(first, 0), last + 1):
            if os.path.exists(os.path.join(self.path, "_delta_log", f"{version:020d}.json")):
                self._durable(version)  # (an absent one: old, cleaned up after a checkpoint)

    def _durable(self, version: int) -> None:
        try:
            self._sync_commit(version)  # (a TierError is not an OSError: it goes up as it is)
        except OSError as err:
            raise TierError(
                f"tiering topic {self.topic!r} into {self.path}: commit {version} landed but could not be "
                f"made durable: {err} (nothing was recorded; the next pass makes it durable before it "
                "records it)") from err

    def _sync_commit(self, version: int) -> None:
        """fsync what commit ``version`` added: its data files and their directories, then the
        commit file and ``_delta_log`` (a power cut keeps either the whole commit or none of
        what the metadata will say it holds)."""
        log_dir = os.path.join(self.path, "_delta_log")
        commit = os.path.join(log_dir, f"{version:020d}.json")
        directories = set()
        with open(commit, encoding="utf-8") as f:
            for line in f:
                add = json.loads(line).get("add")
                if add is not None:
                    path = os.path.join(self.path, urllib.parse.unquote(add["path"]))
                    size = os.path.getsize(path) if os.path.exists(path) else None
                    if size != add.get("size", size):  # a crash of the machine before this fsync
                        raise TierError(
                            f"{self.path}: commit {version} names {add['path']} of {add['size']} bytes, but "
                            f"the file {'is missing' if size is None else f'has {size}'}: the machine "
                            "crashed before the tierer made the commit durable. kstream recorded nothing "
                            "past the version before it, so the log still holds those offsets: restore "
                            f"the table to version {version - 1} (or remove it to copy everything again)")
                    _fsync_file(path)
                    directories.add(os.path.dirname(path))
        for directory in directories:
            fsync_dir(directory)
        fsync_dir(self.path)  # a new partition=N directory's entry
        _fsync_file(commit)
        fsync_dir(log_dir)
        self._sync_checkpoint(version)


class _DataFile:
    """One Parquet data file being written: row groups of at most :data:`ROW_GROUP_ROWS`
    rows (or :data:`ROW_GROUP_BYTES`), its statistics gathered as they go."""

    def __init__(self, root: str, partition: int, schema: pa.Schema, indexed: list[str]):
        self.relative = f"{PARTITION_COLUMN}={partition}/part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        self.path = os.path.join(root, self.relative)
        self.partition = partition
        self.indexed = indexed
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._sink = pa.OSFile(self.path, "wb")
        self._writer = pq.ParquetWriter(self._sink, schema, compression="snappy")
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = self._pending_bytes = 0
        self.rows = 0
        self.low: dict[str, object] = {}
        self.high: dict[str, object] = {}
        self.nulls: dict[str, int] = {}

    def add(self, batch: pa.RecordBatch) -> None:
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self._pending_bytes += batch.nbytes
        if self._pending_rows >= ROW_GROUP_ROWS or self._pending_bytes >= ROW_GROUP_BYTES:
            self._flush()

    def written_bytes(self) -> int:
        return self._sink.tell()

    def _flush(self) -> None:
        if not self._pending:
            return
        group = pa.Table.from_batches(self._pending)
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        self._writer.write_table(group, row_group_size=group.num_rows)
        self.rows += group.num_rows
        for name in self.indexed:
            column = group.column(name)
            self.nulls[name] = self.nulls.get(name, 0) + column.null_count
            if column.null_count == len(column):
                continue
            bounds = pc.min_max(column)
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            if name not in self.low or low < self.low[name]:
                self.low[name] = low
            if name not in self.high or high > self.high[name]:
                self.high[name] = high

    def close(self) -> AddAction:
        """Write the rest and the footer; the file's add action (not fsynced yet)."""
        self._flush()
        self._writer.close()
        self._sink.close()
        stats = {"numRecords": self.rows,
                 "minValues": {n: v for n, v in ((n, _stat(v, True)) for n, v in self.low.items()) if v is not None},
                 "maxValues": {n: v for n, v in ((n, _stat(v, False)) for n, v in self.high.items())
                               if v is not None},
                 "nullCount": self.nulls}
        return AddAction(self.relative, os.path.getsize(self.path), {PARTITION_COLUMN: str(self.partition)},
                         int(time.time() * 1000), True, json.dumps(stats, separators=(",", ":")))


def _stat(value: object, low: bool) -> object:
    """A column's min (``low``) or max as Delta's statistics hold it (None: leave it out)."""
    if isinstance(value, datetime.datetime):  # milliseconds, as delta-rs and Delta Spark write them
        if not low and value.microsecond % 1000:  # the max rounded up: still an upper bound
            value += datetime.timedelta(microseconds=1000 - value.microsecond % 1000)
        return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.") + \
            f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str) and len(value) > STRING_STAT_CHARS:
        return value[:STRING_STAT_CHARS] if low else None  # a prefix bounds the min, not the max
    return value


def _indexed(schema: pa.Schema) -> list[str]:
    """The data columns with min/max statistics: the first :data:`INDEXED_COLUMNS` (Delta's
    ``delta.dataSkippingNumIndexedCols`` default) of the types Delta keeps bounds for; the
    offset always (readers find a file's offsets in them)."""
    names = [f.name for f in schema][:INDEXED_COLUMNS]
    if OFFSET_COLUMN in schema.names and OFFSET_COLUMN not in names:
        names.append(OFFSET_COLUMN)
    return [n for n in names if _bounded(schema.field(n).type)]


def _bounded(kind: pa.DataType) -> bool:
    return (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_string(kind)
            or pa.types.is_large_string(kind) or pa.types.is_date(kind)
            or (pa.types.is_timestamp(kind) and kind.tz is not None))


def _write_files(root: str, batches: Iterable[pa.RecordBatch], schema: pa.Schema,
                 table_schema: pa.Schema) -> list[AddAction]:
    """Write ``batches`` into new data files under ``root`` (one or more per kstream partition,
    each at most about :data:`TARGET_FILE_BYTES`), fsync each and then the directories, and
    return their add actions (in the files' order). The partition column is not stored in
    the files (Delta keeps it in the add action), as delta-rs does."""
    data_schema = schema.remove(schema.get_field_index(PARTITION_COLUMN))
    indexed = [n for n in _indexed(table_schema.remove(table_schema.get_field_index(PARTITION_COLUMN)))
               if n in data_schema.names]
    open_files: dict[int, _DataFile] = {}
    closed: list[_DataFile] = []
    actions: list[AddAction] = []
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            parts = batch.column(PARTITION_COLUMN)
            first = parts[0].as_py()
            groups = [(first, batch)] if pc.all(pc.equal(parts, first)).as_py() else [
                (p, batch.filter(pc.equal(parts, p))) for p in pc.unique(parts).to_pylist()]
            for partition, rows in groups:
                rows = rows.drop_columns([PARTITION_COLUMN])
                current = open_files.get(partition)
                if current is None:
                    current = open_files[partition] = _DataFile(root, partition, data_schema, indexed)
                current.add(rows)
                if current.written_bytes() >= TARGET_FILE_BYTES:
                    actions.append(current.close())
                    closed.append(open_files.pop(partition))
        for partition in sorted(open_files):
            actions.append(open_files[partition].close())
            closed.append(open_files.pop(partition))
    except BaseException:
        for current in open_files.values():  # (files left behind are named by no commit)
            try:
                current.close()
            except Exception:
                pass
        raise
    directories = set()
    for current in closed:
        _fsync_file(current.path)
        directories.add(os.path.dirname(current.path))
    for directory in sorted(directories):
        fsync_dir(directory)
    if directories:
        fsync_dir(root)  # a new partition=N directory's entry
    return actions


_COMMIT_NAME = re.compile(r"\d{20}\.json")
_CHECKPOINT_NAME = re.compile(r"\d{20}\.checkpoint(\.\d+\.\d+)?\.parquet")
LAST_CHECKPOINT = "_last_checkpoint"


def _readable_parquet(path: str) -> bool:
    try:
        pq.read_table(path)  # (small: the table's file list)
        return True
    except (OSError, pa.ArrowException):
        return False
_LEFTOVER_FILE = re.compile(r"part-\d{5}-[0-9a-f-]{36}-c000\.snappy\.parquet")


def _torn(content: bytes) -> str | None:
    """What is wrong with a commit file's ``content`` (None: whole): each line one JSON action;
    a tier commit's ``commitInfo`` says how many files it adds (:data:`FILES_KEY`)."""
    if not content.strip():
        return "it is empty"
    adds = 0
    info = None
    for number, line in enumerate(content.split(b"\n")):
        try:
            action = json.loads(line)
        except ValueError:
            return f"line {number + 1} is not JSON"
        adds += "add" in action
        info = action.get("commitInfo", info)
    if info is None:
        return "it has no commitInfo"
    want = info.get(FILES_KEY)
    if want is not None and adds != int(want):
        return f"it adds {adds} files of the {want} its commitInfo names"
    return None


def _leftover(root: str, name: str) -> bool:
    """Whether ``name`` in a table directory that holds no table yet is what a first append
    killed before its commit leaves: ``partition=N`` directories of data files, a
    ``_delta_log`` holding no commit (a commit a power cut tore, set aside)."""
    path = os.path.join(root, name)
    if name == "_delta_log" and os.path.isdir(path):
        return not any(_COMMIT_NAME.fullmatch(n) for n in os.listdir(path))
    if re.fullmatch(rf"{PARTITION_COLUMN}=\d+", name) and os.path.isdir(path):
        return all(_LEFTOVER_FILE.fullmatch(n) for n in os.listdir(path))
    return False


def _keeping_error(batches: Iterable[pa.RecordBatch], failed: list[BaseException]) -> Iterator[pa.RecordBatch]:
    """``batches``, noting an error raised while making them (a corrupt frame, a lost log dir)
    in ``failed`` before it goes up through delta-rs, which keeps only its text."""
    try:
        yield from batches
    except BaseException as err:
        failed.append(err)
        raise


def _fsync_file(path: str) -> None:
    """fsync through the disk layer (the fault tests' power-cut journal sees it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        disk.fsync(fd)
    finally:
        os.close(fd)
