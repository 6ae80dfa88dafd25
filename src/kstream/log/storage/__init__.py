"""One replica's files: the format, frames, records, segments, indexes, the ``.txnindex``,
the recovery point, the lock/HW file, durable small files and the disk layer (fsync).

The bottom room of the engine: no SQLite, no ISR, nothing about groups or Spark.
"""
