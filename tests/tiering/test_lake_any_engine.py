"""The tiered table is a plain Delta table (issue 24, "Any engine"): deltalake, polars and duckdb
read it and get exactly the rows a kstream read of the same offsets gives (docs/TIERING.md
"Reading the table with other engines"). Spark + delta-spark and a standalone Spark cluster:
tests/spark/test_tiered_table_delta_spark.py and test_tiered_table_standalone.py."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest
from deltalake import DeltaTable
from tier_helpers import LAKE_COLUMNS as COLUMNS
from tier_helpers import SEGMENT_BYTES, kstream_rows, rows_of, tier_all_then_more

PARTITIONS = 3
STAMP_MS = 1_764_000_000_123  # a millisecond stamp: Delta's microseconds must keep it exactly


@pytest.fixture
def tiered(cluster_path, make_topic, tmp_path):
    """(lake path, {partition: lake end}, the kstream read of [0, lake end)): a topic with plain,
    committed and aborted records over many segments, every sealed segment tiered, then more
    records written to the log only."""
    lake = str(tmp_path / "lake" / "t")
    make_topic("t", PARTITIONS, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake})
    ends = tier_all_then_more(cluster_path, "t", PARTITIONS, STAMP_MS)
    want = kstream_rows(cluster_path, "t", ends)
    assert {p for p, *_ in want} == set(range(PARTITIONS))
    assert all(row[5] == STAMP_MS * 1000 for row in want)
    assert any(row[7] for row in want) and any(not row[7] for row in want)  # with and without headers
    return lake, ends, want


def _slice(want: list[tuple], partition: int, low: int, high: int) -> list[tuple]:
    return [row for row in want if row[0] == partition and low <= row[1] < high]


def test_deltalake_reads_the_rows_of_a_kstream_read(tiered, cluster_path):
    lake, ends, want = tiered
    table = DeltaTable(lake)
    assert table.metadata().partition_columns == ["partition"]
    assert rows_of(table.to_pyarrow_table()) == want
    # One kstream partition and an offset range: the partition directory and the offset predicate
    p, low, high = 1, 3, ends[1] - 2
    pruned = table.to_pyarrow_table(filters=[("partition", "=", p), ("offset", ">=", low), ("offset", "<", high)])
    assert rows_of(pruned) == _slice(want, p, low, high) == kstream_rows(cluster_path, "t", {p: high}, {p: low})


def test_polars_reads_the_rows_of_a_kstream_read(tiered):
    lake, ends, want = tiered
    frame = pl.read_delta(lake)
    assert frame.columns == COLUMNS
    assert rows_of(frame.to_arrow()) == want
    p, low, high = 2, 4, ends[2] - 1
    lazy = pl.scan_delta(lake).filter((pl.col("partition") == p) & pl.col("offset").is_between(low, high - 1))
    assert rows_of(lazy.collect().to_arrow()) == _slice(want, p, low, high)


def test_duckdb_reads_the_rows_of_a_kstream_read(tiered):
    """duckdb's own Parquet reader over the files the Delta log lists (its ``delta`` extension,
    ``delta_scan``, must be downloaded from extensions.duckdb.org: docs/TIERING.md), the
    ``partition`` column from the Hive-style directory names Delta writes."""
    lake, ends, want = tiered
    files = DeltaTable(lake).file_uris()
    assert files
    con = duckdb.connect()
    try:
        listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        con.execute(f"CREATE VIEW lake AS SELECT * FROM read_parquet([{listed}], hive_partitioning = true)")
        quoted = ", ".join(f'"{c}"' for c in COLUMNS)
        table = con.sql(f"SELECT {quoted} FROM lake").to_arrow_table()
        assert rows_of(table) == want
        p, low, high = 0, 2, ends[0] - 3
        sliced = con.sql(f'SELECT * FROM lake WHERE "partition" = {p} AND "offset" >= {low} AND "offset" < {high}'
                         ).to_arrow_table()
        assert rows_of(sliced) == _slice(want, p, low, high)
        counts = con.execute('SELECT "partition", count(*), max("offset") FROM lake GROUP BY 1 ORDER BY 1').fetchall()
    finally:
        con.close()
    assert [(int(p), n, top) for p, n, top in counts] == [
        (p, len(_slice(want, p, 0, ends[p])), max(r[1] for r in _slice(want, p, 0, ends[p])))
        for p in range(PARTITIONS)]
