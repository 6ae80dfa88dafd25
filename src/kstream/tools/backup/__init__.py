"""`kstream backup`: a consistent copy of a live cluster that is itself a cluster
(:func:`backup_cluster`; docs/OPERATIONS.md)."""

from kstream.tools.backup.cluster_backup import BackupReport, PartitionCopy, backup_cluster

__all__ = ["BackupReport", "PartitionCopy", "backup_cluster"]
