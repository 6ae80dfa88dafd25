"""docs/GROUPS.md's delta-spark recipe, run in a process of its own (a Delta session needs its own
SQL extension and catalog, which the shared test session must not get).

    python tests/spark/delta_spark_recipe.py JAR_DIR TABLE VERSION

JAR_DIR holds delta-spark's jars (`make delta-spark`); prints one JSON line: the table's rows now
(``current``) and at ``VERSION`` (``at_version``), each row [group, topic, partition, offset],
sorted, and the versions ``DESCRIBE HISTORY`` lists. A failing read exits non-zero with Spark's
error on stderr.
"""

from __future__ import annotations

import glob
import json
import os
import sys

from pyspark.sql import SparkSession


def delta_session(jar_dir: str) -> SparkSession:
    """The recipe's session: delta-spark's jars, its SQL extension and its catalog."""
    jars = sorted(glob.glob(os.path.join(jar_dir, "*.jar")))
    return (SparkSession.builder.master("local[1]").appName("offsets-table")
            .config("spark.jars", ",".join(jars))
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            .config("spark.ui.enabled", "false")
            .getOrCreate())


def rows(frame) -> list[list]:  # type: ignore[no-untyped-def]
    return sorted([r["group"], r["topic"], r["partition"], r["offset"]]
                  for r in frame.select("group", "topic", "partition", "offset").collect())


def main(jar_dir: str, table: str, version: int) -> None:
    spark = delta_session(jar_dir)
    try:
        current = spark.read.format("delta").load(table)
        at_version = spark.read.format("delta").option("versionAsOf", version).load(table)
        history = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").select("version").collect()
        print(json.dumps({"columns": current.columns, "current": rows(current), "at_version": rows(at_version),
                          "versions": sorted(r.version for r in history)}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
