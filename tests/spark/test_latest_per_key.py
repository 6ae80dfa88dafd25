"""latestPerKey=true: one row per key, its latest visible record below the end, from both readers.

A dict oracle says what each read must return, from what was written (not from either reader):
over the records below the end that read_committed hands out (aborted transactions' records
never count), the last record of each key; a tombstone (null value) removes its key unless
includeTombstones keeps it. Checked on a compacted partition holding updates, tombstones, a
committed and an aborted transaction, before and after the cleaner ran, at ends inside the
partition, and the JVM reader's rows equal the Python reader's, column for column.
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import Any

import pytest
from tests.jvm import cleaned_vectors

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "log", "cleaner"))
from cleaner_helpers import make_compacted, produce, replica_dirs
from jvm_support import JAR, NO_JAR_REASON, READERS, ReadBoth, load, rows

from kstream import Admin, NewTopic, Producer
from kstream.log.cluster.cluster import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.skipif(JAR is None, reason=NO_JAR_REASON)]
TOPIC = cleaned_vectors.TOPIC


def _oracle(written: list[dict[str, Any]], end: int, tombstones: bool = False) -> list[tuple]:
    """(offset, key, value) of each key's latest committed record below ``end``."""
    latest: dict[str, dict[str, Any]] = {}
    for record in written:
        if record["offset"] < end and not record["aborted"]:
            latest[record["key"]] = record
    return sorted((r["offset"], r["key"].encode(), None if r["value"] is None else r["value"].encode())
                  for r in latest.values() if tombstones or r["value"] is not None)


def _records(frame) -> list[tuple]:
    return sorted((r.offset, r.key, r.value) for r in frame.select("offset", "key", "value").collect())


def _write(cluster_path: str, writes: list, written: list[dict[str, Any]]) -> None:
    """cleaned_vectors' writes, with each record's offset read back."""
    before = len(written)
    start = written[-1]["offset"] + 1 if written else 0
    cleaned_vectors._write(cluster_path, writes, written)
    for record, offset in zip(written[before:], cleaned_vectors._offsets(cluster_path, len(written) - before, start),
                              strict=True):
        record["offset"] = offset


def _check_both(spark, cluster_path: str, written: list[dict[str, Any]], ends: list[int]) -> None:
    """Both readers against the oracle at every end (and the HW), with and without tombstones;
    the JVM reader's rows (every column) equal the Python reader's."""
    high_watermark = max(r["offset"] for r in written) + 1
    for end in [*ends, None]:
        options = {} if end is None else {"endingOffsets": f'{{"{TOPIC}": {{"0": {end}}}}}'}
        for tombstones in (False, True):
            if tombstones:
                options["includeTombstones"] = "true"
            frames = {reader: load(spark, cluster_path, reader, subscribe=TOPIC, latestPerKey="true", **options)
                      for reader in READERS}
            want = _oracle(written, high_watermark if end is None else end, tombstones)
            assert _records(frames["python"]) == want, (end, tombstones)
            assert rows(frames["jvm"]) == rows(frames["python"]), (end, tombstones)


def test_both_readers_return_the_latest_record_of_each_key_before_and_after_a_clean(spark, cluster_path):
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, config=cleaned_vectors.CONFIG)])[TOPIC].result()
    written: list[dict[str, Any]] = []
    _write(cluster_path, cleaned_vectors.WRITES, written)
    committed = [r["offset"] for r in written if not r["aborted"]]
    aborted = [r["offset"] for r in written if r["aborted"]]
    # ends: inside the first frame, at a tombstone, inside the aborted transaction, after it
    ends = [2, 8, aborted[0] + 1, aborted[-1] + 3, committed[-4]]
    _check_both(spark, cluster_path, written, ends)
    cluster = Cluster.open(cluster_path)
    try:
        cleaned = cluster.clean_topic(TOPIC, force=True)[0]
    finally:
        cluster.close()
    assert cleaned.records_removed > 0
    _write(cluster_path, cleaned_vectors.LATER_WRITES, written)  # a newer value of k0, another abort
    # after the clean only ends at or past the clean's end are exact: below it the cleaner
    # removed records that were a key's latest there (a compacted topic keeps the latest only)
    _check_both(spark, cluster_path, written, [cleaned.end_offset, cleaned.end_offset + 2])
    jvm = load(spark, cluster_path, "auto", subscribe=TOPIC, latestPerKey="true")
    assert "kstream JVM reader" in jvm._jdf.queryExecution().executedPlan().toString()


def test_each_partition_is_reduced_in_its_own_task_and_never_cut(spark, cluster_path):
    """Keys spread over three partitions by the producer's partitioner: one Spark partition per
    topic-partition, the latest of every key; options that would cut a partition are refused."""
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("spread", 3, config={"cleanup.policy": "compact"})])["spread"].result()
    latest = {}
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(300):
            key, value = f"key{i % 40}".encode(), f"v{i}".encode()
            producer.produce("spread", value, key=key)
            latest[key] = value
    for reader in READERS:
        frame = load(spark, cluster_path, reader, subscribe="spread", latestPerKey="true")
        assert frame.rdd.getNumPartitions() == 3, reader
        got = frame.select("key", "value").collect()
        assert len(got) == len(latest) and {r.key: r.value for r in got} == latest, reader
    both = ReadBoth(spark, cluster_path)
    for name, value in (("minPartitions", "8"), ("maxRecordsPerPartition", "10")):
        both.error(f"option '{name}' cuts a partition into several Spark tasks", subscribe="spread",
                   latestPerKey="true", **{name: value})
    both.error("option 'includeTombstones' applies to latestPerKey=true reads", subscribe="spread",
               includeTombstones="true")


def test_a_keyless_record_is_refused_naming_its_offset_and_streams_are_refused(spark, cluster_path, tmp_path):
    """Any topic may be read latest-per-key (not only compacted ones), but a record without a key
    has no latest value: both readers fail naming it."""
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("plain", 1)])["plain"].result()
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        producer.produce("plain", b"a", key=b"k")
        producer.produce("plain", b"b", key=b"k")
        producer.flush()
        producer.produce("plain", b"no key")
    both = ReadBoth(spark, cluster_path)
    assert [(r[0], r[1]) for r in both(subscribe="plain", latestPerKey="true", columns="key,value",
                                       endingOffsets='{"plain": {"0": 2}}')[1]] == [(b"k", b"b")]
    both.error("plain-0: the record at offset 2 has no key", subscribe="plain", latestPerKey="true")
    for reader in READERS:
        stream = (spark.readStream.format("kstream").option("cluster", cluster_path).option("reader", reader)
                  .option("subscribe", "plain").option("latestPerKey", "true").load())
        with pytest.raises(Exception, match="option 'latestPerKey' is for batch reads"):
            query = (stream.writeStream.format("memory").queryName(f"refused_{reader}")
                     .option("checkpointLocation", str(tmp_path / reader)).start())
            try:
                query.processAllAvailable()
            finally:
                query.stop()


def test_a_typed_topic_s_tombstone_is_every_value_column_null(spark, cluster_path):
    import pyarrow as pa

    schema = pa.schema([pa.field("name", pa.string()), pa.field("size", pa.int64())])
    make_compacted(cluster_path, "typed", schema=schema)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        table = pa.table({"key": [b"a", b"b", b"a", b"c", b"b"], "name": ["a1", "b1", "a2", "c1", None],
                          "size": [1, 2, 3, 4, None]})
        producer.produce_batch("typed", table)
        producer.flush()
    both = ReadBoth(spark, cluster_path)
    got = both(subscribe="typed", latestPerKey="true", columns="key,name,size")[1]
    assert got == [(b"a", "a2", 3), (b"c", "c1", 4)]
    kept = both(subscribe="typed", latestPerKey="true", includeTombstones="true", columns="key,name,size")[1]
    assert kept == [(b"a", "a2", 3), (b"b", None, None), (b"c", "c1", 4)]


def test_a_stream_joined_to_the_latest_per_key_table_sees_updated_values_in_a_later_micro_batch(
        spark, cluster_path, tmp_path):
    """A stream-static join: Spark plans the static side again for every micro-batch, so a
    latestPerKey read is a snapshot as of each micro-batch's planning (its HW then)."""
    make_compacted(cluster_path, "prices")
    with Admin({"cluster": cluster_path}) as admin:
        admin.create_topics([NewTopic("orders", 1)])["orders"].result()
    produce(cluster_path, [(b"apple", b"1.00"), (b"pear", b"2.00")], topic="prices")
    produce(cluster_path, [(b"apple", b"order-1")], topic="orders")
    for reader in READERS:
        prices = load(spark, cluster_path, reader, subscribe="prices", latestPerKey="true").selectExpr(
            "key", "CAST(value AS STRING) AS price")
        orders = (spark.readStream.format("kstream").option("cluster", cluster_path).option("subscribe", "orders")
                  .option("startingOffsets", "earliest").load()
                  .selectExpr("key", "CAST(value AS STRING) AS order_id", "offset"))
        name = f"priced_{reader}_{int(time.time() * 1000)}"
        query = (orders.join(prices, "key").selectExpr("order_id", "price").writeStream.format("memory")
                 .queryName(name).option("checkpointLocation", str(tmp_path / f"ckpt-{reader}")).start())
        try:
            query.processAllAvailable()
            if reader == "jvm":
                produce(cluster_path, [(b"apple", b"1.50")], topic="prices")
            else:
                produce(cluster_path, [(b"apple", b"1.75")], topic="prices")
            produce(cluster_path, [(b"apple", f"order-2-{reader}".encode())], topic="orders")
            query.processAllAvailable()
        finally:
            query.stop()
        got = sorted(tuple(r) for r in spark.sql(f"SELECT order_id, price FROM {name}").collect())
        first = "1.00" if reader == "jvm" else "1.50"  # the python run starts after the jvm run's update
        later = "1.50" if reader == "jvm" else "1.75"
        assert got == sorted([("order-1", first), (f"order-2-{reader}", later)] +
                             ([("order-2-jvm", "1.50")] if reader == "python" else [])), (reader, got)


def test_updates_and_a_tombstone_after_a_clean_against_the_cleaned_part(spark, cluster_path):
    """The JVM reader's first pass reads only the dirty part (from the cleaner's end offset, its
    cleaner-offset-checkpoint): keys written both below and above the clean's end, a tombstone
    above it for a key whose value lies below it, keys only below and only above it. Both readers
    against the dict oracle, with and without tombstones; with the checkpoint damaged or unreadable
    both fail naming it; with it gone, a full first pass."""
    make_compacted(cluster_path, "mixed")
    written: dict[bytes, bytes | None] = {}
    first = [(f"k{i}".encode(), f"v{i}-{n}".encode()) for n in range(3) for i in range(30)]
    produce(cluster_path, first, topic="mixed")
    cluster = Cluster.open(cluster_path)
    try:
        cleaned = cluster.clean_topic("mixed", force=True)[0]
    finally:
        cluster.close()
    assert cleaned.cleaned and cleaned.records_removed > 0 and cleaned.end_offset > 30
    later = ([(f"k{i}".encode(), f"new{i}".encode()) for i in range(0, 30, 3)]  # updated above the end
             + [(b"k1", None), (b"k4", None)]  # tombstones above the end of keys cleaned below it
             + [(f"fresh{i}".encode(), b"f") for i in range(5)] + [(b"k7", b"again")])
    produce(cluster_path, later, topic="mixed")
    for key, value in first + later:
        written[key] = value

    def check() -> None:
        for tombstones in (False, True):
            want = sorted((k, v) for k, v in written.items() if tombstones or v is not None)
            options = {"includeTombstones": "true"} if tombstones else {}
            for reader in READERS:
                frame = load(spark, cluster_path, reader, subscribe="mixed", latestPerKey="true", **options)
                got = sorted((r.key, r.value) for r in frame.select("key", "value").collect())
                assert got == want, (reader, tombstones)

    check()
    checkpoint = os.path.join(replica_dirs(cluster_path, "mixed")[0], "cleaner-offset-checkpoint")
    assert int(open(checkpoint).read()) == cleaned.end_offset
    both = ReadBoth(spark, cluster_path)
    with open(checkpoint, "w") as f:
        f.write("damaged\n")
    both.error(rf"the log cleaner's checkpoint {re.escape(checkpoint)} holds 'damaged', not an offset: kstream "
               r"writes it whole, so it was damaged or edited, .* delete it", subscribe="mixed", latestPerKey="true")
    os.remove(checkpoint)
    os.mkdir(checkpoint)  # there, but unreadable
    both.error(rf"the log cleaner's checkpoint {re.escape(checkpoint)} cannot be read", subscribe="mixed",
               latestPerKey="true")
    os.rmdir(checkpoint)
    check()  # missing: never cleaned, all dirty


def test_records_written_again_after_a_truncation_below_the_cleaner_end_are_read_as_dirty(spark, cluster_path):
    """A truncation below the cleaner's end (an unclean leader election, a follower cut back to
    where it agrees with the leader) lowers the checkpoint first: the new records written at the
    cut offsets are dirty, so the JVM reader's first pass reads them and each key comes out once,
    with its latest value (before the fix: the old cleaned row and the new one, both)."""
    make_compacted(cluster_path, "cut", config={"unclean.leader.election.enable": "true"})
    produce(cluster_path, [(f"k{i % 5}".encode(), f"a{i}".encode()) for i in range(40)] + [(b"tail", b"x")],
            topic="cut")
    cluster = Cluster.open(cluster_path)
    try:
        cleaned = cluster.clean_topic("cut", force=True)[0]
        handle = cluster.partition("cut", 0)
        try:
            with handle.lock:
                handle.refresh_locked()
                cut = cleaned.end_offset - 3  # (each record its own frame: a frame boundary)
                handle.on_replica(handle.info.leader, lambda log: log.truncate_to_locked(cut))
                handle.lock.write_high_watermark(cut)
        finally:
            handle.close()
    finally:
        cluster.close()
    assert cleaned.cleaned and cleaned.end_offset == 40
    new = [(f"k{i}".encode(), f"new{i}".encode()) for i in range(5)] + [(b"tail2", b"y")]
    produce(cluster_path, new, topic="cut")
    want = {}  # the dict oracle: the full read, folded in offset order
    for r in sorted(load(spark, cluster_path, "python", subscribe="cut").select("offset", "key", "value").collect()):
        want[r.key] = r.value
    assert {k: want[k] for k, _ in new} == dict(new)
    for reader in READERS:
        got = [(r.key, r.value) for r in load(spark, cluster_path, reader, subscribe="cut", latestPerKey="true")
               .select("key", "value").collect()]
        assert sorted(got) == sorted(want.items()), reader
