"""Fault class ``power_cut_readers``: what read_committed readers saw must survive a power cut.

An acks=all writer (RF=1, or RF=3 with min ISR 2; the seed picks) runs while one
read_committed reader per partition polls as fast as it can and records every
record it is handed into the round's history. The writer is killed at a seeded
moment, the readers stop, :func:`chaos.power_cut.power_cut` builds a state a power
loss could leave, and fresh readers read everything back (before and after the
next writer). The checker's phantom rule then requires that every record a reader
saw is still there at the same offset: the high watermark must never have covered
an acks=all record that was not yet fsynced on min.insync.replicas replicas.
"""

from __future__ import annotations

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos.checker import History
from chaos.harness import TOPIC, Ctx, lines, produce_child, read_back, record_produce, setup, wait_for_acks, write_after
from chaos.power_cut import power_cut
from kstream import Admin, Consumer, TopicPartition
from kstream.log.transactions.expiry import expire

_READER_STOP_S = 10


def power_cut_readers_round(ctx: Ctx) -> None:
    rf = ctx.rng.choice((1, 3))
    setup(ctx, rf=rf, min_isr=2 if rf == 3 else 1, journal=True)
    child = produce_child(ctx, "w", 100000, rate=2000)
    stop = threading.Event()
    readers = [threading.Thread(target=read_committed_reader, args=(ctx, p, stop), daemon=True)
               for p in range(ctx.partitions)]
    for reader in readers:
        reader.start()
    wait_for_acks(child, ctx.rng.uniform(0.05, 1.2))
    child.kill()  # mid-write: its last batches are written, some not yet fsynced
    record_produce(ctx, lines(child))
    stop.set()
    for reader in readers:
        reader.join(_READER_STOP_S)
        if reader.is_alive():
            raise RuntimeError("a reader did not stop")
    seen = list(ctx.history.reads)
    power_cut(ctx.cluster, ctx.log_dirs, ctx.journal or "", ctx.seed)
    read_back(ctx, "before the next write: ")
    first = ctx.history
    # The next writer recovers and reconciles; what readers saw must still be there.
    ctx.history = History(acked=list(first.acked), reads=seen, hw_samples={})
    write_after(ctx)
    read_back(ctx, "after the next write: ")
    ctx.history.read_errors = {**first.read_errors, **ctx.history.read_errors}
    h = ctx.history
    for ack in first.acked:  # acknowledged records must also be visible before the next write
        tp = (ack.topic, ack.partition)
        if tp not in first.read_errors and dict(first.final.get(tp, [])).get(ack.offset) != ack.value:
            h.invisible.append(f"{ack.value!r} at {tp[0]}-{tp[1]}@{ack.offset}")
    for topic, partition, offset, value in seen:  # and what readers saw, before it too
        if dict(first.final.get((topic, partition), [])).get(offset) != value:
            h.wrong_reads.append(f"a reader saw {value!r} at {topic}-{partition}@{offset} during the round; "
                                 "a fresh reader after the power cut does not")
            break  # one is enough to fail the round; the count is in the phantoms of the final check
    for tp, samples in first.hw_samples.items():
        h.hw_samples[tp] = [*samples, *h.hw_samples.get(tp, [])]


def read_committed_reader(ctx: Ctx, partition: int, stop: threading.Event) -> None:
    """Poll one partition read_committed until ``stop``; every record handed out goes into
    the history (the checker's phantom rule checks each against the final reads)."""
    consumer = Consumer({"cluster": ctx.cluster, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(TOPIC, partition, 0)])
    try:
        while not stop.is_set():
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                ctx.history.reads.append((TOPIC, message.partition(), message.offset(), message.value()))
    finally:
        consumer.close()


def stop_readers_cut_power_and_expire(ctx: Ctx, readers: list[threading.Thread], stop: threading.Event,
                                      txn_timeout_ms: int, reader_stop_s: float = 10) -> None:
    """After the writers were killed: stop the read_committed readers, cut the power through
    the journal, wait out the transaction timeout and run Python's expiry (a commit the cut rolled
    back to Committing is rolled forward, open task writes of a dead sink aborted), then read the
    cluster back. ``ctx.history.reads`` keeps what the readers saw before the cut."""
    stop.set()
    for thread in readers:
        thread.join(reader_stop_s)
        if thread.is_alive():
            raise RuntimeError("a reader did not stop")
    seen = list(ctx.history.reads)
    power_cut(ctx.cluster, ctx.log_dirs, ctx.journal or "", ctx.seed)
    time.sleep(txn_timeout_ms / 1000 + 0.2)
    with Admin({"cluster": ctx.cluster}) as admin:
        expire(admin.cluster)
    read_back(ctx)
    ctx.history.reads = seen
