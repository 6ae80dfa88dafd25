"""Fault classes of the log cleaner (issue 25): ``clean_sigkill``, ``clean_power_cut``, ``clean_readers``.

Each round makes a small compacted topic (2 partitions, replication 1 or 3, small
segments, a seeded ``delete.retention.ms`` of 50 ms or a day) and runs a keyed writer
(tests/chaos/clean_child.py ``keyed``: puts, tombstones, transactions committed or
aborted) while the cleaner runs: a child cleaning again and again as ``kstream topics
clean`` does, the writers' own auto-clean (``log.retention.check.interval.ms`` of
20-100 ms), or both, seeded.

* ``clean_sigkill``: the writer and the cleaner are SIGKILLed at a random moment, or the
  cleaner kills itself at a seeded step of the segment swap (KSTREAM_CRASH_AT).
* ``clean_power_cut``: the same through the fsync journal; the cleaning process kills
  itself at a seeded step and pass of the swap, the others are killed, and
  :func:`chaos.power_cut.power_cut` builds a state a power loss could leave.
* ``clean_readers``: no fault; a read_committed consumer and the Spark reader's partition
  reader (``kstream.source.partition_reader.read_range``, no Spark) read every partition
  from offset 0 to its LSO again and again while segments are swapped under them.

After a fault: a read before anyone recovers, then one more acknowledged write per
partition, a forced clean, and the final read. :mod:`chaos.compaction_checker` checks every
read against the writes (latest values survive, no resurrected deleted key, nothing aborted
visible, offsets increasing, nothing at or above the cleaner's end removed); the frame walk,
high watermark, stuck LSO and replica checks of :mod:`chaos.checker` apply too.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos.compaction_checker import KeyedHistory, Read, Write
from chaos.harness import READ_PATIENCE_S, TOPIC, Ctx, create_topic, lines, read_back, wait_line
from chaos.power_cut import power_cut
from kstream import Consumer, Producer, TopicPartition
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import faults
from kstream.log.storage.cleaner_checkpoint import read_checkpoint
from kstream.source.partition_reader import read_range
from kstream.source.planning import PartitionRange, bounds

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clean_child.py")
STEPS = ("clean.staged", "clean.swap-decided", "clean.log-replaced", "clean.indexes-replaced")
AFTER = 1_000_000  # write numbers of the acknowledged writes after the fault
_TXN_TIMEOUT_S = 1.3  # past transaction.timeout.ms=1000: a killed writer's transaction expires
_READ_SCHEMA = pa.schema([("offset", pa.int64()), ("key", pa.binary()), ("value", pa.binary())])


def _keyed(ctx: Ctx) -> KeyedHistory:
    return ctx.history.keyed


def _setup(ctx: Ctx, rf: int, journal: bool) -> str:
    """The compacted topic; returns who cleans: "cli" (a child), "auto" (the writer), "both"."""
    ctx.cluster = os.path.join(ctx.work, "cluster")
    cleaner = ctx.rng.choice(("cli", "auto", "both"))
    expire = ctx.rng.random() < 0.5
    options: dict = {"cluster": ctx.cluster, "min.insync.replicas": 2 if rf == 3 else 1,
                     "transaction.max.timeout.ms": 1000,
                     "log.retention.check.interval.ms": 3_600_000 if cleaner == "cli"
                     else ctx.rng.choice((20, 100))}
    config = {"cleanup.policy": "compact", "segment.bytes": ctx.rng.choice(("1024", "2048", "4096")),
              "index.interval.bytes": "256", "min.compaction.lag.ms": "0",
              "min.cleanable.dirty.ratio": ctx.rng.choice(("0.01", "0.3")),
              "delete.retention.ms": "50" if expire else "86400000"}
    create_topic(ctx, options, rf, config, journal)
    ctx.history.keyed = KeyedHistory(tombstones_expire=expire)
    return cleaner


def _spawn(ctx: Ctx, args: list[str], crash_at: str | None = None) -> subprocess.Popen:
    env = ctx.env()
    if crash_at:
        env[faults.CRASH_ENV] = crash_at
    err = open(os.path.join(ctx.work, f"child-{len(ctx.children)}.err"), "wb")
    child = subprocess.Popen([sys.executable, CHILD, *args], stdout=subprocess.PIPE, stderr=err, env=env)
    err.close()
    ctx.children.append(child)
    return child


def _start(ctx: Ctx, cleaner: str, count: int, rate: int, clean_seconds: float, crash_at: str | None
           ) -> tuple[subprocess.Popen, subprocess.Popen | None]:
    """The keyed writer and, unless the writer cleans alone, the cleaning child; ``crash_at``
    goes to whichever cleans (the child when there is one)."""
    writer = _spawn(ctx, ["keyed", ctx.cluster, TOPIC, str(ctx.partitions), "w", str(count), str(rate),
                          str(ctx.seed)], crash_at if cleaner == "auto" else None)
    child = None
    if cleaner != "auto":
        child = _spawn(ctx, ["clean", ctx.cluster, TOPIC, str(clean_seconds), str(ctx.seed)], crash_at)
    # (A writer that cleans may kill itself at its crash point before its first delivery.)
    if not wait_line(writer, "D ", 30) and writer.poll() is None:
        raise RuntimeError("the writer delivered nothing in 30 s")
    return writer, child


def _stop(ctx: Ctx, writer: subprocess.Popen, child: subprocess.Popen | None, crash_at: str | None) -> None:
    """Wait for the seeded crash (at most a few seconds) or a seeded moment, then SIGKILL all."""
    crasher = child if child is not None else writer
    if crash_at:
        deadline = time.monotonic() + 6
        while crasher.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
    else:
        time.sleep(ctx.rng.uniform(0.3, 2.5))
    for process in (writer, child):
        if process is not None and process.poll() is None:
            process.kill()
    _keyed(ctx).add_output(lines(writer))
    if child is not None:
        _keyed(ctx).cleans += sum(line.startswith("K ") for line in lines(child))


def _crash_at(ctx: Ctx) -> str:
    return f"{ctx.rng.choice(STEPS)}:{ctx.rng.randint(1, 4)}"


# -- reads ------------------------------------------------------------------------------------


def read_keyed(ctx: Ctx, p: int, end: int | None = None, pause_every: int = 0
               ) -> tuple[list[tuple[int, bytes, bytes | None]], str | None]:
    """(offset, key, value) a fresh read_committed consumer reads from offset 0 up to ``end``
    (None: the high watermark), and the error that stopped it, if any."""
    consumer = Consumer({"cluster": ctx.cluster, "isolation.level": "read_committed"})
    out: list[tuple[int, bytes, bytes | None]] = []
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0)])
        deadline = time.monotonic() + READ_PATIENCE_S
        while True:
            message = consumer.poll(0.2)
            if message is None:
                reached = consumer.position([TopicPartition(TOPIC, p)])[0].offset
                target = end if end is not None else consumer.get_watermark_offsets(TopicPartition(TOPIC, p))[1]
                if reached >= target:
                    return out, None
                if time.monotonic() > deadline:
                    return out, f"stopped at {reached}, before {target}, after {READ_PATIENCE_S}s"
                continue
            if message.error() is not None:
                return out, str(message.error())
            if end is not None and message.offset() >= end:
                return out, None
            out.append((message.offset(), message.key(), message.value()))
            if end is not None and message.offset() + 1 >= end:
                return out, None
            if pause_every and len(out) % pause_every == 0:
                time.sleep(0.002)  # stretch the pass over a swap
    except Exception as err:  # a failed read is a finding
        return out, f"{type(err).__name__}: {err}"
    finally:
        consumer.close()


def _lso(ctx: Ctx, p: int) -> int:
    opened = Cluster.open(ctx.cluster)
    try:
        return bounds(opened, TOPIC, p, "read_committed")[1]
    finally:
        opened.close()


def read_batch(ctx: Ctx, p: int, end: int) -> tuple[list[tuple[int, bytes, bytes | None]], str | None]:
    """What the Spark reader's partition reader returns for [0, ``end``), read_committed."""
    out: list[tuple[int, bytes, bytes | None]] = []
    split = PartitionRange(ctx.cluster, TOPIC, p, 0, end, fail_on_data_loss=True)
    try:
        for batch in read_range(split, _READ_SCHEMA):
            out += zip(batch.column("offset").to_pylist(), batch.column("key").to_pylist(),
                       batch.column("value").to_pylist(), strict=True)
    except Exception as err:  # a failed read is a finding
        return out, f"{type(err).__name__}: {err}"
    return out, None


def _final_reads(ctx: Ctx, label: str, known: int | None, with_clean_end: bool) -> None:
    """Every partition read by key, and the frame walk, HW, LSO and replica checks of
    :func:`chaos.harness.read_back` (its value reads are dropped: values repeat as tombstones)."""
    keyed = _keyed(ctx)
    for p in range(ctx.partitions):
        records, error = read_keyed(ctx, p)
        clean_end = None
        if with_clean_end:
            opened = Cluster.open(ctx.cluster)
            handle = opened.partition(TOPIC, p)
            try:
                clean_end = read_checkpoint(handle.leader_dir)
            finally:
                handle.close()
                opened.close()
        keyed.reads.append(Read(label, p, records, error, known=known, clean_end=clean_end))
    read_back(ctx, f"{label}: ")
    ctx.history.final, ctx.history.final_uncommitted = {}, {}


def _write_after(ctx: Ctx) -> None:
    """One acknowledged put per partition of an existing key (the next writer recovers)."""
    keyed = _keyed(ctx)
    with Producer({"cluster": ctx.cluster, "acks": "all", "linger.ms": 0}) as producer:
        for p in range(ctx.partitions):
            write = Write(AFTER + p, p, f"k{p}".encode(), f"after-{p}".encode(), None)
            keyed.writes[write.n] = write

            def report(err, msg, write=write):
                if err is None:
                    write.offset, write.state = msg.offset(), "acked"
                else:
                    ctx.history.write_errors.append(f"the next writer failed on {TOPIC}-{write.partition}: "
                                                    f"{str(err)[:200]}")

            producer.produce(TOPIC, write.value, key=write.key, partition=p, on_delivery=report)
        producer.flush()


def _clean(ctx: Ctx) -> None:
    opened = Cluster.open(ctx.cluster)
    try:
        opened.clean_topic(TOPIC, force=True)
    finally:
        opened.close()


def _after_fault(ctx: Ctx) -> None:
    time.sleep(_TXN_TIMEOUT_S)  # the killed writer's open transaction is past its deadline now
    _final_reads(ctx, "before recovery", known=AFTER, with_clean_end=False)
    _write_after(ctx)
    _clean(ctx)
    _final_reads(ctx, "after the next write and a clean", known=None, with_clean_end=True)


# -- the rounds -------------------------------------------------------------------------------


def clean_sigkill_round(ctx: Ctx) -> None:
    cleaner = _setup(ctx, ctx.rng.choice((1, 3)), journal=False)
    crash_at = _crash_at(ctx) if ctx.rng.random() < 0.5 else None
    writer, child = _start(ctx, cleaner, 100000, 400, 60, crash_at)
    _stop(ctx, writer, child, crash_at)
    _after_fault(ctx)


def clean_power_cut_round(ctx: Ctx) -> None:
    cleaner = _setup(ctx, ctx.rng.choice((1, 3)), journal=True)
    crash_at = _crash_at(ctx)
    writer, child = _start(ctx, cleaner, 100000, 400, 60, crash_at)
    _stop(ctx, writer, child, crash_at)
    power_cut(ctx.cluster, ctx.log_dirs, ctx.journal or "", ctx.seed)
    _after_fault(ctx)


def clean_readers_round(ctx: Ctx) -> None:
    cleaner = _setup(ctx, ctx.rng.choice((1, 3)), journal=False)
    count, rate = ctx.rng.randint(500, 1000), 400
    writer, child = _start(ctx, cleaner, count, rate, count / rate + 1, None)
    stop = threading.Event()
    passes: list[Read] = []
    threads = [threading.Thread(target=_passes, args=(ctx, stop, passes, kind, random.Random(f"{ctx.seed}:{kind}")),
                                daemon=True) for kind in ("consumer", "batch")]
    for thread in threads:
        thread.start()
    _keyed(ctx).add_output(lines(writer, 60))
    if child is not None:
        _keyed(ctx).cleans += sum(line.startswith("K ") for line in lines(child, 60))
    stop.set()
    for thread in threads:
        thread.join(20)
        if thread.is_alive():
            raise RuntimeError("a reader did not stop")
    if not passes:
        raise RuntimeError("the readers made no pass")
    _keyed(ctx).reads += passes
    _clean(ctx)
    _final_reads(ctx, "after the round and a clean", known=None, with_clean_end=True)


def _passes(ctx: Ctx, stop: threading.Event, passes: list[Read], kind: str, rng: random.Random) -> None:
    """Read every partition from offset 0 to its LSO (sampled as the pass begins), again and again."""
    number = 0
    while not stop.is_set():
        p = rng.randrange(ctx.partitions)
        end = _lso(ctx, p)
        if kind == "consumer":
            records, error = read_keyed(ctx, p, end=end, pause_every=rng.choice((0, 10, 40)))
        else:
            records, error = read_batch(ctx, p, end)
        passes.append(Read(f"{kind} pass {number}", p, records, error, end=end))
        number += 1
