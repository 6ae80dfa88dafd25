"""Fault class ``backup_live``: `kstream backup` taken at a seeded moment of a live run.

Two transactional writers (commit or abort at random) and a plain acks=all writer run
(RF=1, or RF=3 with min ISR 2: the seed picks); at a seeded moment the round notes what
each writer had said so far and runs `kstream backup` while they go on, then kills
them. The backup, opened as a cluster, must hold every record acknowledged before the
backup started, at its offset, once; every transaction committed before it whole;
no record of an aborted transaction (one aborted after the cut was open at the cut,
so the backup ends it aborted too); any other transaction all or nothing; contiguous
frames, in-sync replicas that agree, and no LSO stuck once ``transaction.timeout.ms``
passed. Checked before the backup's first write and after it (tests/chaos/checker.py).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from click.testing import CliRunner

from chaos import harness, sink_rounds
from chaos.checker import History
from chaos.harness import TOPIC, Ctx, lines, produce_child, read_back, record_produce, setup, wait_for_acks, write_after
from kstream.log.cluster.cluster import Cluster
from kstream.tools.cli.main import cli

_TIMEOUT_S = 1.3  # past the rounds' transaction.timeout.ms=1000: open transactions expire in the backup
_MAX_BATCHES = 50  # a bound on the sink query's micro-batches in one round


def backup_live_round(ctx: Ctx) -> None:
    rf = ctx.rng.choice((1, 3))
    setup(ctx, rf=rf, min_isr=2 if rf == 3 else 1)
    writers = [ctx.spawn("txn", ctx.cluster, TOPIC, str(ctx.partitions), f"tx-{i}", f"t{i}s{ctx.seed}", "100000",
                         "0") for i in range(2)]
    plain = produce_child(ctx, "w", 100000, rate=1000)
    wait_for_acks(plain, ctx.rng.uniform(0.1, 1.0))
    said = {child.pid: _lines_so_far(child) for child in (*writers, plain)}  # before the backup starts
    backup = os.path.join(ctx.work, "backup")
    result = CliRunner().invoke(cli, ["--cluster", ctx.cluster, "backup", backup])
    wait_for_acks(plain, ctx.rng.uniform(0, 0.3))  # the writers go on after it
    for child in (*writers, plain):
        child.kill()
    record_produce(ctx, lines(plain)[:said[plain.pid]])
    for child in writers:
        _record_txn_at_cut(ctx.history, lines(child), said[child.pid])
    if result.exit_code != 0:
        raise RuntimeError(f"kstream backup failed: {result.output[-500:]}")
    _check_backup(ctx, backup, _TIMEOUT_S)


def backup_sink_round(ctx: Ctx) -> None:
    """The same with Spark's exactly-once sink (its driver and task processes without Spark,
    tests/chaos/sink_rounds.py) committing micro-batches beside an acks=all writer: a batch
    committed before the backup started is in it whole, any other all or nothing."""
    rf = ctx.rng.choice((1, 3))
    setup(ctx, rf=rf, min_isr=2 if rf == 3 else 1, txn_timeout_ms=sink_rounds.TXN_TIMEOUT_MS)
    checkpoint = os.path.join(ctx.work, "ck")
    sink_rounds._new_query(checkpoint, str(uuid.UUID(int=ctx.rng.getrandbits(128), version=4)))
    plain = produce_child(ctx, "w", 100000, rate=1000)
    batches: list[tuple[list[bytes], float | None]] = []  # values, when its commit returned
    stop = threading.Event()

    def run_batches() -> None:
        batch = 0
        while not stop.is_set() and batch < _MAX_BATCHES:
            rows = [[f"s{ctx.seed}-{batch}-{i}", ctx.rng.randrange(ctx.partitions)]
                    for i in range(ctx.rng.randint(2, 12))]
            try:
                messages = sink_rounds._tasks(ctx, checkpoint, rows)
                done = sink_rounds._commit(ctx, checkpoint, batch, messages, kill=False)
            except Exception as err:  # a failed batch is a finding
                ctx.history.round_problems.append(f"sink batch {batch}: {type(err).__name__}: {str(err)[:200]}")
                return
            batches.append(([r[0].encode() for r in rows], time.monotonic() if done else None))
            batch += 1

    driver = threading.Thread(target=run_batches, daemon=True)
    driver.start()
    deadline = time.monotonic() + 120
    while not batches and driver.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(ctx.rng.uniform(0, 2.0))  # a seeded moment of the query's run
    said = _lines_so_far(plain)
    started = time.monotonic()
    backup = os.path.join(ctx.work, "backup")
    result = CliRunner().invoke(cli, ["--cluster", ctx.cluster, "backup", backup])
    stop.set()
    driver.join(180)
    if driver.is_alive():
        raise RuntimeError("the sink's batches did not stop")
    plain.kill()
    record_produce(ctx, lines(plain)[:said])
    for values, committed_at in batches:
        done_before = committed_at is not None and committed_at < started
        (ctx.history.committed_txns if done_before else ctx.history.unknown_txns).append(values)
    if result.exit_code != 0:
        raise RuntimeError(f"kstream backup failed: {result.output[-500:]}")
    _check_backup(ctx, backup, sink_rounds.TXN_TIMEOUT_MS / 1000 + 0.3)


def _check_backup(ctx: Ctx, backup: str, timeout_s: float) -> None:
    """Read the backup as the round's cluster (past the transaction timeout), before and after
    its first write, into the history for the checker."""
    ctx.cluster = backup  # from here on the round reads the backup
    copy = Cluster.open(backup)
    try:
        ctx.log_dirs = list(copy.log_dir_paths().values())
    finally:
        copy.close()
    time.sleep(timeout_s)
    read_back(ctx, "the backup, before its first write: ")
    first = ctx.history
    ctx.history = History(acked=list(first.acked), hw_samples={}, committed_txns=first.committed_txns,
                          aborted_txns=first.aborted_txns, unknown_txns=first.unknown_txns,
                          round_problems=first.round_problems)
    write_after(ctx)
    read_back(ctx, "the backup, after its first write: ")
    h = ctx.history
    h.read_errors = {**first.read_errors, **h.read_errors}
    for ack in first.acked:  # acknowledged before the backup: visible in it before any write too
        tp = (ack.topic, ack.partition)
        if tp not in first.read_errors and dict(first.final.get(tp, [])).get(ack.offset) != ack.value:
            h.invisible.append(f"{ack.value!r} at {tp[0]}-{tp[1]}@{ack.offset}")
    before = {value for records in first.final.values() for _, value in records}
    for values in first.aborted_txns:
        if any(v in before for v in values):
            h.wrong_reads.append(f"before the backup's first write, read_committed saw a record of an aborted "
                                 f"transaction, e.g. {values[0]!r}")
    for values in first.unknown_txns:
        shown = [v for v in values if v in before]
        if shown and len(shown) != len(values):
            h.wrong_reads.append(f"before the backup's first write, a transaction was half visible: "
                                 f"{len(shown)} of {len(values)}")
    for values in first.committed_txns:
        missing = [v for v in values if v not in before]
        if missing:
            h.wrong_reads.append(f"before the backup's first write, a committed transaction lacks {len(missing)} "
                                 f"records, e.g. {missing[0]!r}")
    for tp, samples in first.hw_samples.items():
        h.hw_samples[tp] = [*samples, *h.hw_samples.get(tp, [])]


def _lines_so_far(child) -> int:
    """How many whole lines the child has printed by now (kept for lines(), as wait_line keeps them)."""
    assert child.stdout is not None
    got = harness._pending.pop(child.pid, b"")
    os.set_blocking(child.stdout.fileno(), False)
    try:
        got += child.stdout.read() or b""
    finally:
        os.set_blocking(child.stdout.fileno(), True)
        harness._pending[child.pid] = got
    return got.count(b"\n")


def _record_txn_at_cut(h: History, output: list[str], cut: int) -> None:
    """A transactional writer's history as the backup must show it: committed before the cut
    (its "C" line printed before the backup started) whole; aborted at any time never (one
    aborted after the cut was open at it); any other all or nothing."""
    begun: dict[str, list[bytes]] = {}
    for number, line in enumerate(output):
        parts = line.split(" ", 2)
        if parts[0] == "B" and len(parts) == 3:
            begun[parts[1]] = [v.encode() for v in parts[2].split(",")]
        elif parts[0] in ("C", "X") and len(parts) == 3 and parts[1] in begun:
            values = begun.pop(parts[1])
            if parts[0] == "X":
                h.aborted_txns.append(values)
            elif number < cut:
                h.committed_txns.append(values)
            else:
                h.unknown_txns.append(values)
    h.unknown_txns.extend(begun.values())
