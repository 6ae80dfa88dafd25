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

delta-rs does not fsync what it writes. :meth:`LakeTable.append` does, before it returns: the
new data files, the commit file and their directories, so that the lake end the tierer then
records in the metadata (and retention trusts) is on disk.

The table's description names the topic and its id; a table of another topic (or of an
earlier incarnation of this one) at the path is refused, as is a directory holding other
files.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import DeltaError

from kstream.errors import ConfigError, KStreamError
from kstream.log.storage import disk
from kstream.log.storage.disk import fsync_dir
from kstream.log.storage.output import output_schema

log = logging.getLogger(__name__)

PARTITION_COLUMN = "partition"
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")  # Delta's timestamp type is microseconds


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
                                f"{str(err).splitlines()[0]}; restore it from a backup") from err
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
            if os.listdir(self.path):
                raise ConfigError(
                    f"option 'tier.delta.path' of topic {self.topic!r}: {self.path} holds files but no Delta "
                    "table; kstream will not write a table among them: name an empty or new directory")
        missing = []
        parent = self.path
        while not os.path.exists(parent):
            missing.append(parent)
            parent = os.path.dirname(parent)
        return missing

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
        commit as its rows). ``info`` goes into the commit's metadata."""
        table = self.open()
        properties = CommitProperties(
            app_transactions=[Transaction(app_id(self.topic_id, p), end) for p, end in sorted(ends.items())],
            custom_metadata={"kstream.operation": "tier", **info})
        failed: list[BaseException] = []
        reader = pa.RecordBatchReader.from_batches(schema, _keeping_error(batches, failed))
        try:
            if table is not None:  # a disk the fault tests fail (read-only, full) fails here first
                disk.check_writable(os.path.join(self.path, "_delta_log"))
            if table is None:
                missing = self._check_new_directory()
                # mode="error": a table another writer made meanwhile is not written into.
                write_deltalake(self.path, reader, mode="error", partition_by=[PARTITION_COLUMN],
                                name=self.topic, description=_description(self.topic, self.topic_id),
                                configuration={"delta.appendOnly": "true"}, commit_properties=properties)
                self._durable(0)
                for directory in missing:  # the entries of the directories delta-rs made
                    fsync_dir(os.path.dirname(directory))
                log.info("made the tier table of %s at %s", self.topic, self.path)
                return 0
            for partition, end in ends.items():
                assert end > self.end_offset(table, partition), (partition, end)
            merge = not set(schema.names) <= set(table.schema().to_arrow().names)  # a typed topic's new column
            write_deltalake(table, reader, mode="append", partition_by=[PARTITION_COLUMN],
                            schema_mode="merge" if merge else None, commit_properties=properties)
        except (DeltaError, OSError) as err:
            if failed:  # reading the log failed (delta-rs wraps it in a DeltaError): raise it as it was
                raise failed[0] from err
            raise TierError(f"tiering topic {self.topic!r} into {self.path} failed: "
                            f"{str(err).splitlines()[0]} (nothing was recorded; the next pass tries again)"
                            ) from err
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
