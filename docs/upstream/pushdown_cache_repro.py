"""pyspark 4.3: a Python data source's pushed filters leak into later queries of the same DataFrame.

    PYSPARK_PYTHON=$(which python) python docs/upstream/pushdown_cache_repro.py

Prints "filtered 4", then "all 4" (should be 10): the unfiltered count reuses the
partitions planned for the filtered query (partitions() is not called again).
This is why the kstream reader has no pushFilters: index seeks come from
startingOffsets / endingOffsets / startingTimestamp instead.
"""

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, GreaterThan, InputPartition


class Reader(DataSourceReader):
    def __init__(self):
        self.low = None

    def pushFilters(self, filters):
        self.low = None
        for f in filters:
            if isinstance(f, GreaterThan) and f.attribute == ("x",):
                self.low = f.value
            else:
                yield f

    def partitions(self):
        return [InputPartition(self.low)]

    def read(self, partition):
        low = -1 if partition.value is None else partition.value
        yield from ((i,) for i in range(10) if i > low)


class Source(DataSource):
    @classmethod
    def name(cls):
        return "pushdown_repro"

    def schema(self):
        return "x int"

    def reader(self, schema):
        return Reader()


spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.python.filterPushdown.enabled", "true").getOrCreate())
spark.dataSource.register(Source)
df = spark.read.format("pushdown_repro").load()
print("filtered", df.filter("x > 5").count())
print("all", df.count(), "(expected 10)")
