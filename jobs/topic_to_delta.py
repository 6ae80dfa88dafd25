"""Land a topic in a Delta table exactly once, storing the offsets with the output.

    spark-submit --properties-file conf/spark-defaults.conf jobs/topic_to_delta.py \\
        --source events --table /data/tables/events --group events-to-delta \\
        --checkpoint /var/kstream/events-to-delta-cp [--available-now]

Each micro-batch is appended to the table with ``deltalake`` inside
``foreachBatch``, in one Delta commit that carries

- a Delta app transaction: app id = the group and the query's id (from the
  checkpoint), version = the batch id, so a batch Spark replays after a crash
  is skipped, not written twice;
- the batch's end offsets (commit metadata ``kstream.offsets``).

The reader runs with ``group.id``, so the group's offsets follow the table
(committed as each batch finishes; lag and ``kstream groups describe`` work).
Started again, with the same checkpoint or a fresh one, the job starts each
partition at the larger of the group's offset and the table's stored offset:
a crash between the table commit and the group commit duplicates nothing.
The table holds key, value, topic, partition, offset and timestamp (no
transform: the landing table is the record of what the topic held).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from pyspark.sql import DataFrame, SparkSession

from kstream.jars import with_jar
from kstream.log.cluster.cluster import Cluster, resolve_cluster_path
from kstream.source.planning import group_offsets
from kstream.source.read_options import GroupPosition

OFFSETS_KEY = "kstream.offsets"
COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp"]


def stored_offsets(table: str) -> dict[str, dict[str, int]]:
    """The end offsets of the newest table commit that carries them ({} if none)."""
    if not DeltaTable.is_deltatable(table):
        return {}
    for commit in DeltaTable(table).history():
        if OFFSETS_KEY in commit:
            return json.loads(commit[OFFSETS_KEY])
    return {}


def starting_offsets(cluster: str, group: str, table: str, source: str) -> dict[str, dict[str, int]]:
    """Per partition of the source topics, the larger of the group's committed offset and the
    table's stored one; -2 (earliest) where neither has one (JSON startingOffsets name every
    partition, as the Kafka connector requires)."""
    opened = Cluster.open(cluster)
    try:
        start = group_offsets(opened, group, GroupPosition())
        topics = [t.strip() for t in source.split(",") if t.strip()]
        counts = {t: opened.topic(t).num_partitions for t in topics}
    finally:
        opened.close()
    for topic, partitions in stored_offsets(table).items():
        for partition, offset in partitions.items():
            mine = start.setdefault(topic, {})
            mine[partition] = max(mine.get(partition, 0), offset)
    start = {t: ps for t, ps in start.items() if t in counts}
    if not start:
        return {}
    for topic, count in counts.items():
        for partition in range(count):
            start.setdefault(topic, {}).setdefault(str(partition), -2)
    return start


def batch_lander(table: str, app_id: Callable[[], str], start: dict[str, dict[str, int]]
                 ) -> Callable[[DataFrame, int], None]:
    """The foreachBatch function: append a batch with its app transaction and end offsets."""
    offsets = {t: dict(ps) for t, ps in start.items()}
    apps: list[str] = []  # the app id, read once (the query id does not change while it runs)

    def land(frame: DataFrame, batch_id: int) -> None:
        data: pa.Table = frame.select(*COLUMNS).toArrow()
        ends = data.group_by(["topic", "partition"]).aggregate([("offset", "max")]).to_pylist()
        for row in ends:
            offsets.setdefault(row["topic"], {})[str(row["partition"])] = row["offset_max"] + 1
        if not apps:
            apps.append(app_id())
        app = apps[0]
        if DeltaTable.is_deltatable(table):
            if data.num_rows == 0:
                return
            done = DeltaTable(table).transaction_version(app)
            if done is not None and done >= batch_id:
                return  # a replay of a batch already in the table
        write_deltalake(table, data, mode="append", partition_by=["topic"],
                        commit_properties=CommitProperties(
                            app_transactions=[Transaction(app, batch_id)],
                            custom_metadata={OFFSETS_KEY: json.dumps(offsets, sort_keys=True)}))

    return land


def table_rows(table: str) -> int:
    if not DeltaTable.is_deltatable(table):
        return 0
    return sum(pq.read_metadata(path).num_rows for path in DeltaTable(table).file_uris())


def query_id(checkpoint: str) -> str:
    """The streaming query's id, which Spark keeps in the checkpoint (a fresh checkpoint, a new id)."""
    with open(os.path.join(checkpoint, "metadata")) as f:
        return str(json.load(f)["id"])


def run(spark: SparkSession, cluster: str | None, source: str, table: str, group: str, checkpoint: str,
        available_now: bool = False, trigger_ms: int = 0) -> Any:
    """Start the landing query (see the module docstring); returns the StreamingQuery."""
    cluster = resolve_cluster_path(cluster)
    start = starting_offsets(cluster, group, table, source)
    reader = (spark.readStream.format("kstream").option("cluster", cluster).option("subscribe", source)
              .option("group.id", group)
              .option("startingOffsets", json.dumps(start) if start else "earliest"))
    known = {t: {p: o for p, o in ps.items() if o >= 0} for t, ps in start.items()}  # not the -2 fill-ins
    lander = batch_lander(table, lambda: f"{group}:{query_id(checkpoint)}", known)
    writer = reader.load().writeStream.foreachBatch(lander).option("checkpointLocation", checkpoint)
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif trigger_ms:
        writer = writer.trigger(processingTime=f"{trigger_ms} milliseconds")
    return writer.start()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", default=None, help="cluster path (default $KSTREAM_CLUSTER or ./data)")
    parser.add_argument("--source", required=True, help="input topic(s), comma-separated")
    parser.add_argument("--table", required=True, help="Delta table path")
    parser.add_argument("--group", required=True, help="consumer group whose offsets follow the table")
    parser.add_argument("--checkpoint", required=True, help="checkpoint location")
    parser.add_argument("--available-now", action="store_true", help="land what exists, then stop")
    parser.add_argument("--trigger-ms", type=int, default=0, help="processing-time trigger")
    args = parser.parse_args()
    spark = with_jar(SparkSession.builder.appName(f"kstream-to-delta-{args.source}")).getOrCreate()
    query = run(spark, args.cluster, args.source, args.table, args.group, args.checkpoint,
                args.available_now, args.trigger_ms)
    query.awaitTermination()
    rows = table_rows(args.table)
    print(f"table {args.table} holds {rows} records; group {args.group} follows it")


if __name__ == "__main__":
    main()
