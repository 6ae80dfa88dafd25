"""One partition: its replicas on log dirs, the leader that takes appends, and acks.

A partition is already a list of replicas placed on log dirs; with
replication factor 1 the leader is the only replica. Appends go to the
leader's :class:`PartitionLog` under the partition lock; ``acks=all`` returns
only after the batch is fsynced (the leader is all of the ISR here).
Readers read the leader's log below the high watermark, which for one
replica is its log end offset.
"""

from __future__ import annotations

from collections.abc import Mapping

from kstream.log.lock import PartitionLock
from kstream.log.log_config import LogConfig
from kstream.log.log_reader import LogReader
from kstream.log.metadata import PartitionInfo
from kstream.log.partition_log import AppendResult, EncodedBatch, PartitionLog


class Partition:
    """Append/read handle of one partition in this process. Thread-safe for appends."""

    def __init__(self, info: PartitionInfo, replica_dirs: Mapping[int, str], config: LogConfig,
                 lock_path: str):
        self.info = info
        self.config = config
        self.replica_dirs = dict(replica_dirs)
        self._lock = PartitionLock(lock_path)
        self.leader_dir = self.replica_dirs[info.leader]
        self.leader_log = PartitionLog(self.leader_dir, config, self._lock)

    @property
    def topic(self) -> str:
        return self.info.topic

    @property
    def partition(self) -> int:
        return self.info.partition

    def append(self, batch: EncodedBatch, acks: str = "all") -> AppendResult:
        """Append to the leader; with acks=all, return once the batch is fsynced.

        Raises LogDirOfflineError when the leader's disk fails; nothing is
        acknowledged then, and a failed fsync is never retried.
        """
        result = self.leader_log.append(batch, self.info.leader_epoch)
        if acks == "all":
            self.leader_log.flush()
        else:
            self.leader_log.maybe_flush()
        return result

    def flush(self) -> None:
        self.leader_log.flush()

    def reader(self, check_crcs: bool = True) -> LogReader:
        return LogReader(self.leader_dir, check_crcs=check_crcs)

    def close(self) -> None:
        self.leader_log.close()
        self._lock.close()


