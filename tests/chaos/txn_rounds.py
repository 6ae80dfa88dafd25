"""Fault class ``power_cut_txn``: transactions, their markers and their index through a power cut.

Two transactional writers (commit or abort at random) and a plain acks=all writer run
while a read_committed reader polls every partition; all are killed at a seeded moment
and :func:`chaos.power_cut.power_cut` builds a state a power loss could leave: unsynced
frames, transaction index entries and recovery point updates kept, torn or dropped
each on their own. Fresh readers then read everything back (before and after the next
writer), with the LSO and aborted ranges taken from the transaction index files. The
checker requires: every committed transaction whole, no record of an aborted one ever
seen (by the polling reader or after the cut), a transaction of a killed writer all or
nothing, nothing acknowledged lost, no LSO left stuck once transaction.timeout.ms passed.
"""

from __future__ import annotations

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos.checker import History
from chaos.harness import (
    TOPIC,
    Ctx,
    lines,
    produce_child,
    read_back,
    record_produce,
    record_txn,
    setup,
    wait_for_acks,
    write_after,
)
from chaos.power_cut import power_cut
from chaos.rounds import read_committed_loop

_TIMEOUT_S = 1.3  # past the rounds' transaction.timeout.ms=1000: a killed writer's transaction expires


def power_cut_txn_round(ctx: Ctx) -> None:
    rf = ctx.rng.choice((1, 3))
    setup(ctx, rf=rf, min_isr=2 if rf == 3 else 1, journal=True)
    writers = [ctx.spawn("txn", ctx.cluster, TOPIC, str(ctx.partitions), f"tx-{i}", f"t{i}s{ctx.seed}", "100000",
                         "0") for i in range(2)]
    plain = produce_child(ctx, "w", 100000, rate=1000)
    stop = threading.Event()
    reader = threading.Thread(target=read_committed_loop, args=(ctx, stop), daemon=True)
    reader.start()
    wait_for_acks(plain, ctx.rng.uniform(0.1, 1.5))
    for child in (*writers, plain):
        child.kill()
    record_produce(ctx, lines(plain))
    for child in writers:
        record_txn(ctx, lines(child))
    stop.set()
    reader.join(10)
    if reader.is_alive():
        raise RuntimeError("the reader did not stop")
    seen = list(ctx.history.reads)
    power_cut(ctx.cluster, ctx.log_dirs, ctx.journal or "", ctx.seed)
    time.sleep(_TIMEOUT_S)  # the killed writers' open transactions are past their deadline now
    read_back(ctx, "before the next write: ")
    first = ctx.history
    ctx.history = History(acked=list(first.acked), reads=seen, hw_samples={},
                          committed_txns=first.committed_txns, aborted_txns=first.aborted_txns,
                          unknown_txns=first.unknown_txns)
    write_after(ctx)
    read_back(ctx, "after the next write: ")
    h = ctx.history
    h.read_errors = {**first.read_errors, **h.read_errors}
    for ack in first.acked:  # acknowledged records visible before the next write too
        tp = (ack.topic, ack.partition)
        if tp not in first.read_errors and dict(first.final.get(tp, [])).get(ack.offset) != ack.value:
            h.invisible.append(f"{ack.value!r} at {tp[0]}-{tp[1]}@{ack.offset}")
    before = {value for records in first.final.values() for _, value in records}
    for values in first.aborted_txns:  # and no aborted record visible before it either
        shown = [v for v in values if v in before]
        if shown:
            h.wrong_reads.append(f"before the next write, read_committed saw {len(shown)} records of an "
                                 f"aborted transaction, e.g. {shown[0]!r}")
    for values in first.committed_txns:
        missing = [v for v in values if v not in before]
        if missing and not any(tp in first.read_errors for tp in first.final):
            h.wrong_reads.append(f"before the next write, a committed transaction lacks {len(missing)} "
                                 f"records, e.g. {missing[0]!r}")
    for tp, samples in first.hw_samples.items():
        h.hw_samples[tp] = [*samples, *h.hw_samples.get(tp, [])]
