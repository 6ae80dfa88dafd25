"""Fault class ``read_only_readers``: read-only readers on a cluster with expired transactions.

Two transactional writers and a plain acks=all writer are killed at a seeded moment
(their open transactions expire), and the round leaves, seeded, more unfinished
transactions behind: producers that decided (PrepareCommit / PrepareAbort) and
died before their markers, Spark sink batches decided "Committing" whose driver
died before its markers, and sink task writes no decision names. Once every
deadline passed, read-only readers read everything: a read_committed Consumer per
partition, the console's message browser, Admin list_offsets(read_committed), and
the CLI's ``topics describe`` and ``get-offsets``.

Promises (issue 26): the read-only readers write nothing at all (every file of the
cluster and its log dirs keeps its size and mtime; metadata.db's contents stay the
same), the LSO they report is the high watermark (every outcome is fixed), and what
they see is exactly what a reader sees after a writer passing by ran the expiry
(markers, fencing): a record only the read-only view has is a phantom, one only
the later view has is lost. The checker's usual rules apply to both views.
"""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from click.testing import CliRunner

from chaos.child import round_timeout_ms
from chaos.harness import (
    TOPIC,
    Ctx,
    lines,
    produce_child,
    read_back,
    read_partition,
    record_produce,
    record_txn,
    setup,
    wait_for_acks,
)
from helpers import file_tree, metadata_dump
from kstream import Admin, Producer, TopicPartition
from kstream.admin import IsolationLevel, OffsetSpec
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.sink import COMMITTING, SinkStore, SinkTaskWriter
from kstream.log.transactions.store import TransactionStore

_TIMEOUT_S = 1.3  # past the rounds' transaction.timeout.ms=1000
_MAX_SHOWN = 3  # differences named per problem


def read_only_readers_round(ctx: Ctx) -> None:
    rf = ctx.rng.choice((1, 3))
    setup(ctx, rf=rf, min_isr=2 if rf == 3 else 1)
    writers = [ctx.spawn("txn", ctx.cluster, TOPIC, str(ctx.partitions), f"tx-{i}", f"t{i}s{ctx.seed}", "100000",
                         "0") for i in range(2)]
    plain = produce_child(ctx, "w", 100000, rate=1000)
    wait_for_acks(plain, ctx.rng.uniform(0.05, 0.8))
    for child in (*writers, plain):
        child.kill()
    record_produce(ctx, lines(plain))
    for child in writers:
        record_txn(ctx, lines(child))
    left_open = _unfinished(ctx)
    try:
        time.sleep(_TIMEOUT_S)  # every unfinished transaction is past its deadline (or decided)
        before = _snapshot(ctx)
        seen, high_watermarks = _read_only_views(ctx)
        _compare_snapshots(ctx, before, _snapshot(ctx))
        with Producer({"cluster": ctx.cluster, "transactional.id": "passer-by", "linger.ms": 0,
                       "transaction.timeout.ms": round_timeout_ms(ctx.cluster)}) as writer:
            writer.init_transactions()  # a writer passing by: the expiry writes markers, fences
        read_back(ctx, "after the expiry: ")
    finally:
        for producer in left_open:
            producer.close()
    _compare_views(ctx, seen, high_watermarks)


def _unfinished(ctx: Ctx) -> list[Producer]:
    """Seeded unfinished transactions of every kind; returns their (open) producers."""
    rng, h, left = ctx.rng, ctx.history, []
    cluster = Cluster.open(ctx.cluster)
    try:
        store = TransactionStore.for_cluster(cluster)
        for i in range(rng.randint(1, 2)):  # decided, then "died" before its markers
            producer = Producer({"cluster": ctx.cluster, "transactional.id": f"decided-{i}", "linger.ms": 0,
                                 "transaction.timeout.ms": round_timeout_ms(ctx.cluster)})
            producer.init_transactions()
            producer.begin_transaction()
            values = _write(ctx, producer, f"d{i}")
            commit = rng.random() < 0.5
            store.prepare(f"decided-{i}", store.get(f"decided-{i}").epoch, commit=commit)
            (h.committed_txns if commit else h.aborted_txns).append(values)
            left.append(producer)
        sink = f"stream:/checkpoints/s{ctx.seed}"
        for i in range(rng.randint(1, 3)):  # sink task writes, a batch decision naming some of them
            producer = Producer({"cluster": ctx.cluster, "acks": "all", "enable.idempotence": False,
                                 "linger.ms": 0})
            task = SinkTaskWriter(SinkStore(producer.cluster), sink)
            producer.bind_sink_transaction(task)
            values = _write(ctx, producer, f"s{i}")
            if rng.random() < 0.5:
                with cluster.metadata.transaction() as tx:  # the driver's decision; it "died" before its markers
                    tx.execute("INSERT INTO sink_batches VALUES (?, ?, ?, ?, ?)", (sink, i, COMMITTING, json.dumps(
                        [[task.producer_id, [list(p) for p in sorted(task.partitions)], len(values)]]),
                        int(time.time() * 1000)))
                h.committed_txns.append(values)
            else:
                h.aborted_txns.append(values)  # no decision names it: aborted at its deadline
            left.append(producer)
    finally:
        cluster.close()
    return left


def _write(ctx: Ctx, producer: Producer, tag: str) -> list[bytes]:
    values = []
    for j in range(ctx.rng.randint(1, 4)):
        value = f"u{ctx.seed}-{tag}-{j}".encode()
        producer.produce(TOPIC, value, partition=ctx.rng.randrange(ctx.partitions))
        values.append(value)
    producer.flush()
    return values


def _read_only_views(ctx: Ctx) -> tuple[dict, dict]:
    """What the read-only readers saw per partition, and the high watermarks then. Their LSOs
    must be the high watermark: no transaction holds a reader back any more."""
    from kstream.tools.cli.main import cli
    from kstream.tools.web.browser import MAX_RECORDS, BrowseRequest, browse

    h, seen, high_watermarks = ctx.history, {}, {}
    with Admin({"cluster": ctx.cluster}) as admin:
        for p in range(ctx.partitions):
            handle = admin.cluster.partition(TOPIC, p)
            try:
                high_watermarks[p] = handle.high_watermark() or 0
            finally:
                handle.close()
        latest = admin.list_offsets({TopicPartition(TOPIC, p): OffsetSpec.latest() for p in range(ctx.partitions)},
                                    isolation_level=IsolationLevel.READ_COMMITTED)
        for tp, future in latest.items():
            lso, hw = future.result().offset, high_watermarks[tp.partition]
            if lso != hw:
                h.round_problems.append(f"{TOPIC}-{tp.partition}: list_offsets(read_committed) says {lso}, the "
                                        f"high watermark is {hw}")
    for p in range(ctx.partitions):
        records, error = read_partition(ctx, p, "read_committed")
        if error:
            h.read_errors[(TOPIC, p)] = f"read-only reader: {error}"[:300]
        seen[p] = records
        h.reads.extend((TOPIC, p, offset, value) for offset, value in records)
        rows = browse(ctx.cluster, BrowseRequest(TOPIC, p, offset=0, count=MAX_RECORDS))
        shown = [(row.offset, row.value.text.encode()) for row in rows]
        if shown != records[:len(shown)]:
            h.round_problems.append(f"{TOPIC}-{p}: the console's browser showed other records than the consumer")
    for command in (["topics", "describe", TOPIC], ["get-offsets", "--topic", TOPIC]):
        result = CliRunner().invoke(cli, ["--cluster", ctx.cluster, *command])
        if result.exit_code != 0:
            h.round_problems.append(f"kstream {' '.join(command)} failed: {result.output[-300:]}")
    return seen, high_watermarks


def _snapshot(ctx: Ctx) -> tuple[dict, list[str]]:
    """Every file and dir of the cluster and its log dirs and metadata.db's contents."""
    return file_tree(*{ctx.cluster, *ctx.log_dirs}), metadata_dump(ctx.cluster)


def _compare_snapshots(ctx: Ctx, before: tuple[dict, list[str]], after: tuple[dict, list[str]]) -> None:
    files = sorted(k for k in before[0].keys() | after[0].keys() if before[0].get(k) != after[0].get(k))
    if files:
        ctx.history.round_problems.append(f"read-only readers wrote {len(files)} file(s), e.g. "
                                          f"{', '.join(os.path.relpath(f, ctx.work) for f in files[:_MAX_SHOWN])}")
    rows = sorted(set(before[1]) ^ set(after[1]))
    if rows:
        ctx.history.round_problems.append(f"read-only readers changed metadata.db: {len(rows)} row(s), e.g. "
                                          f"{'; '.join(r[:120] for r in rows[:_MAX_SHOWN])}")


def _compare_views(ctx: Ctx, seen: dict, high_watermarks: dict) -> None:
    """The read-only view must be the view after the expiry ran, up to the HW it was taken at."""
    h = ctx.history
    for p, records in seen.items():
        tp = (TOPIC, p)
        if tp in h.read_errors:
            continue
        later = [(offset, value) for offset, value in h.final.get(tp, []) if offset < high_watermarks[p]]
        only_later = sorted(set(later) - set(records))
        only_before = sorted(set(records) - set(later))
        h.invisible.extend(f"{v!r} at {TOPIC}-{p}@{o} (not seen by the read-only reader)" for o, v in only_later)
        h.wrong_reads.extend(f"{v!r} at {TOPIC}-{p}@{o} (seen read-only, gone after the expiry)"
                             for o, v in only_before)
