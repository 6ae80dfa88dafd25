"""Makes `format("kstream")` work with no register call: Spark registers a top-level
module named `pyspark_<name>` that exposes `DefaultSource` by itself."""

from kstream.data_source import KStreamDataSource as DefaultSource

__all__ = ["DefaultSource"]
