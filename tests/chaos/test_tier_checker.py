"""The tierer's chaos checks find what they look for: a clean tiered topic passes; a duplicated
lake row, a row nobody wrote and a lake end kstream recorded ahead of Delta are found."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from chaos import tier_rounds
from chaos.checker import Ack, check
from chaos.harness import Ctx
from kstream import Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.lake_offsets import LakeOffsets


@pytest.fixture
def ctx(tmp_path):
    ctx = Ctx(work=str(tmp_path), seed=1, rng=random.Random("tier-checker"))
    tier_rounds._setup(ctx, journal=False)
    with Producer({"cluster": ctx.cluster, "acks": "all", "linger.ms": 0}) as producer:
        for i in range(300):  # several sealed segments per partition
            value = f"w-{i}".encode()

            def report(err, msg, value=value):
                assert err is None, err
                ctx.history.acked.append(Ack("t", msg.partition(), msg.offset(), value))

            producer.produce("t", value, partition=i % 2, on_delivery=report)
            if i % 2 == 1:
                producer.flush()  # small frames: segments seal
    return ctx


def _verdict(ctx):
    tier_rounds.check_lake(ctx)
    return check(ctx.history)


def test_a_clean_tiered_topic_passes(ctx):
    tier_rounds._tier_pass(ctx, "test")
    verdict = _verdict(ctx)
    assert verdict.ok, verdict.problems
    assert DeltaTable(tier_rounds._table(ctx)).to_pyarrow_table().num_rows > 0  # the lake holds some


def test_a_duplicated_or_unwritten_lake_row_and_a_recorded_end_ahead_of_delta_fail(ctx):
    tier_rounds._tier_pass(ctx, "test")
    path = tier_rounds._table(ctx)
    table = DeltaTable(path).to_pyarrow_table()
    extra = table.slice(0, 1)
    odd = extra.set_column(extra.schema.get_field_index("value"), "value", pa.array([b"\x00\x00ctrl"]))
    write_deltalake(path, pa.concat_tables([extra, odd]), mode="append")
    cluster = Cluster.open(ctx.cluster)
    try:
        info = cluster.topic("t")
        lakes = LakeOffsets(cluster.metadata)
        lakes.record("t", info.topic_id, {1: lakes.end_offset("t", info.topic_id, 1) + 5}, 0)
    finally:
        cluster.close()
    verdict = _verdict(ctx)
    assert not verdict.ok
    assert verdict.duplicated >= 1
    assert any("twice" in p for p in verdict.problems)
    assert any("which no writer wrote" in p for p in verdict.problems)
    assert any("above the Delta end" in p for p in verdict.problems)
