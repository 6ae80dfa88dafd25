"""Fault classes of the tierer (issue 24): ``tier_sigkill``, ``tier_power_cut``, ``tier_lake_unwritable``.

Each round makes a tiered topic (2 partitions, replication 1 or 3 seeded, small segments,
``tier.delta.path`` under the round's directory, a seeded ``retention.ms`` of 50-300 ms so
retention deletes what the lake holds, writers' retention checks every 20-100 ms) and runs an
acks=all writer and a transactional writer (committed and aborted transactions), beside a
tiering child (tests/chaos/tier_child.py: forced passes again and again, each followed by
retention on every replica).

* ``tier_sigkill``: everything is SIGKILLed at a seeded moment, or the tiering child kills
  itself at a seeded step and pass (``tier.delta-committed:n``, ``tier.metadata-recorded:n``,
  ``retention.tiered-delete:n``: between the lake end retention trusts and a segment's deletion).
* ``tier_power_cut``: the same through the fsync journal; then
  :func:`chaos.power_cut.power_cut` over the cluster, the log dirs and the lake's directory.
* ``tier_lake_unwritable``: the Delta table's directory fails, seeded, read-only (EROFS) or full
  (ENOSPC, every write, or only fsyncs, after delta-rs wrote the commit) through the faults
  layer (tests run as root, where chmod stops nothing). Meanwhile the passes must fail with a
  TierError naming the table, an acks=all write must still succeed, and nothing the lake lacks
  may be deleted; the fault is lifted and the passes go on.

After the fault: the killed transaction's deadline passes, one more acknowledged write per
partition, one more forced pass and retention in this process, then the checks
(:func:`check_lake`): (1) the Delta table (read with ``deltalake``) has no duplicate
(partition, offset) row, no row at or past its end, and no row nobody wrote (an aborted or a
control record); (2) the union (lake rows below each partition's lake end, the Delta app
transaction, then the log's read_committed records from there) goes to the checker as the
final read: every acknowledged write at its offset, once, nothing aborted; the lake's rows
that the log still holds equal the log's; (3) every replica's log start is at or below the lake
end, and kstream's recorded lake end is at or below the Delta end. Plus the frame walk, high
watermark, stuck LSO and replica checks of :func:`chaos.harness.read_back`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from deltalake import DeltaTable

from chaos.checker import Ack
from chaos.harness import (
    TOPIC,
    Ctx,
    create_topic,
    lines,
    read_back,
    read_partition,
    record_produce,
    record_txn,
    wait_line,
    write_after,
)
from chaos.power_cut import power_cut
from kstream import Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.lake_offsets import LakeOffsets
from kstream.log.storage import faults
from kstream.log.storage.retention import list_segment_bases
from kstream.tiering import Tierer
from kstream.tiering.lake_table import LakeTable

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tier_child.py")
STEPS = ("tier.delta-committed", "tier.metadata-recorded", "retention.tiered-delete")
_TXN_TIMEOUT_S = 1.3  # past transaction.timeout.ms=1000: a killed writer's transaction expires
_WRITTEN = re.compile(rb"^(w-\d+|t\d+-\d+-\d+|after-\d+|during-\d+-\d+)$")  # every value a round writes


def _lake_root(ctx: Ctx) -> str:
    return os.path.join(ctx.work, "lake")


def _table(ctx: Ctx) -> str:
    return os.path.join(_lake_root(ctx), TOPIC)


def _setup(ctx: Ctx, journal: bool) -> int:
    """The tiered topic; returns its replication factor."""
    rf = ctx.rng.choice((1, 3))
    ctx.cluster = os.path.join(ctx.work, "cluster")
    os.makedirs(_lake_root(ctx))  # a mount point: the table below it is made by the first pass
    options: dict = {"cluster": ctx.cluster, "min.insync.replicas": 2 if rf == 3 else 1,
                     "transaction.max.timeout.ms": 1000, "log.retention.check.interval.ms": ctx.rng.choice((20, 100))}
    config = {"segment.bytes": ctx.rng.choice(("2048", "4096")), "index.interval.bytes": "256",
              "retention.ms": str(ctx.rng.choice((50, 100, 300))), "tier.delta.path": _table(ctx)}
    create_topic(ctx, options, rf, config, journal, (_lake_root(ctx),))
    return rf


def _spawn_tierer(ctx: Ctx, crash_at: str | None) -> subprocess.Popen:
    env = ctx.env()
    if crash_at:
        env[faults.CRASH_ENV] = crash_at
    err = open(os.path.join(ctx.work, f"child-{len(ctx.children)}.err"), "wb")
    child = subprocess.Popen([sys.executable, CHILD, "tier", ctx.cluster, TOPIC, str(ctx.seed)],
                             stdout=subprocess.PIPE, stderr=err, env=env)
    err.close()
    ctx.children.append(child)
    return child


def _start(ctx: Ctx, crash_at: str | None) -> tuple[subprocess.Popen, subprocess.Popen, subprocess.Popen]:
    """The acks=all writer, the transactional writer and the tiering child."""
    plain = ctx.spawn("produce", ctx.cluster, TOPIC, str(ctx.partitions), "all", "w", "100000", "600")
    txn = ctx.spawn("txn", ctx.cluster, TOPIC, str(ctx.partitions), "tx-0", f"t{ctx.seed}", "100000", "0")
    tierer = _spawn_tierer(ctx, crash_at)
    if not wait_line(plain, "A ", 30):
        raise RuntimeError("the acks=all writer acknowledged nothing in 30 s")
    return plain, txn, tierer


def _crash_at(ctx: Ctx) -> str:
    return f"{ctx.rng.choice(STEPS)}:{ctx.rng.randint(1, 4)}"


def _stop(ctx: Ctx, children: tuple[subprocess.Popen, ...], crash_at: str | None) -> list[str]:
    """Wait for the tierer's seeded crash (at most 8 s) or a seeded moment, then SIGKILL all;
    returns the tiering child's lines."""
    plain, txn, tierer = children
    if crash_at:
        deadline = time.monotonic() + 8
        while tierer.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
    else:
        time.sleep(ctx.rng.uniform(0.5, 3.0))
    for child in children:
        if child.poll() is None:
            child.kill()
    record_produce(ctx, lines(plain))
    record_txn(ctx, lines(txn))
    return lines(tierer)


def _tier_pass(ctx: Ctx, label: str) -> None:
    """A forced pass and retention on every replica, in this process."""
    opened = Cluster.open(ctx.cluster)
    try:
        Tierer(opened).run([TOPIC], force=True)
        for p in range(ctx.partitions):
            handle = opened.partition(TOPIC, p)
            try:
                for replica_log in handle.logs.values():
                    replica_log.apply_retention()
            finally:
                handle.close()
    except Exception as err:  # a pass that fails after recovery is a finding
        ctx.history.round_problems.append(f"{label}: the forced tier pass failed: {type(err).__name__}: "
                                          f"{str(err)[:300]}")
    finally:
        opened.close()


def _lake_ends(ctx: Ctx) -> tuple[dict[int, int], dict[int, int], dict[int, list[int]]]:
    """(Delta end, kstream's recorded end, each replica's first segment base) per partition."""
    opened = Cluster.open(ctx.cluster)
    try:
        info = opened.topic(TOPIC)
        table = LakeTable(_table(ctx), info.name, info.topic_id)
        delta = table.open()
        delta_ends = {p: 0 if delta is None else table.end_offset(delta, p) for p in range(ctx.partitions)}
        recorded = {p: end.end_offset for p, end in LakeOffsets(opened.metadata).ends(info.name, info.topic_id).items()}
        starts = {}
        for p in range(ctx.partitions):
            handle = opened.partition(info, p)
            try:
                starts[p] = [list_segment_bases(directory)[0] for directory in handle.replica_dirs.values()]
            finally:
                handle.close()
        return delta_ends, recorded, starts
    finally:
        opened.close()


def _check_floor(ctx: Ctx, label: str) -> tuple[dict[int, int], dict[int, int]]:
    """Invariant (3): nothing deleted locally that the lake lacks; the recorded end never ahead
    of Delta. Returns the Delta ends and the offset every replica holds from (its highest start)."""
    delta_ends, recorded, starts = _lake_ends(ctx)
    for p in range(ctx.partitions):
        for start in starts[p]:
            if start > delta_ends[p]:
                ctx.history.round_problems.append(
                    f"{label}: {TOPIC}-{p}: a replica's log starts at {start}, above the lake end "
                    f"{delta_ends[p]}: offsets {delta_ends[p]}..{start - 1} are in neither")
        if recorded.get(p, 0) > delta_ends[p]:
            ctx.history.round_problems.append(f"{label}: {TOPIC}-{p}: kstream recorded lake end {recorded[p]}, "
                                              f"above the Delta end {delta_ends[p]}")
    return delta_ends, {p: max(found) for p, found in starts.items()}


def check_lake(ctx: Ctx) -> None:
    """The lake and union checks (see the module docstring) into the round's history."""
    h = ctx.history
    delta_ends, log_starts = _check_floor(ctx, "after recovery")
    read_back(ctx)  # frames, HW, open transactions, replicas; its reads from 0 are replaced below
    try:
        rows = DeltaTable(_table(ctx)).to_pyarrow_table(columns=["partition", "offset", "value"]).to_pylist() \
            if os.path.exists(os.path.join(_table(ctx), "_delta_log")) else []
    except Exception as err:
        h.round_problems.append(f"the lake cannot be read: {type(err).__name__}: {str(err)[:300]}")
        return
    lake: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(ctx.partitions)}
    seen: set[tuple[int, int]] = set()
    for row in rows:
        p, offset, value = row["partition"], row["offset"], row["value"]
        if (p, offset) in seen:
            h.round_problems.append(f"the lake holds {TOPIC}-{p}@{offset} twice")
        seen.add((p, offset))
        if offset >= delta_ends.get(p, 0):
            h.round_problems.append(f"the lake holds {TOPIC}-{p}@{offset}, at or past its end {delta_ends.get(p)}")
        if value is None or not _WRITTEN.match(value):
            h.round_problems.append(f"the lake holds {value!r} at {TOPIC}-{p}@{offset}, which no writer wrote "
                                    "(a control record?)")
        lake.setdefault(p, []).append((offset, value))
    for p in range(ctx.partitions):
        tp = (TOPIC, p)
        end = delta_ends[p]
        in_lake = sorted(lake.get(p, []))
        log_committed, error = read_partition(ctx, p, "read_committed", start=end)
        log_uncommitted, error2 = read_partition(ctx, p, "read_uncommitted", start=end)
        if error or error2:
            h.read_errors[tp] = f"log from the lake end {end}: {error or error2}"[:300]
        h.final[tp] = [*in_lake, *log_committed]
        h.final_uncommitted[tp] = [*in_lake, *log_uncommitted]
        if log_committed and log_committed[0][0] < end:
            h.round_problems.append(f"{TOPIC}-{p}: a read from the lake end {end} began at {log_committed[0][0]}")
        # The lake's rows the log still holds are the log's rows.
        if log_starts[p] >= end:
            continue
        local, error = read_partition(ctx, p, "read_committed", start=log_starts[p], limit=end - log_starts[p])
        below = {o: v for o, v in local if o < end}
        if not error:
            differ = [(o, v) for o, v in in_lake if o >= log_starts[p] and below.get(o) != v]
            differ += [(o, v) for o, v in below.items() if (o, v) not in set(in_lake)]
            if differ:
                h.round_problems.append(f"{TOPIC}-{p}: the lake and the log differ below the lake end {end}, "
                                        f"e.g. {differ[0]}")


def _after_fault(ctx: Ctx) -> None:
    time.sleep(_TXN_TIMEOUT_S)  # the killed writer's open transaction is past its deadline now
    write_after(ctx)
    _tier_pass(ctx, "after recovery")
    check_lake(ctx)


# -- the rounds -------------------------------------------------------------------------------


def tier_sigkill_round(ctx: Ctx) -> None:
    _setup(ctx, journal=False)
    crash_at = _crash_at(ctx) if ctx.rng.random() < 0.5 else None
    children = _start(ctx, crash_at)
    tier_lines = _stop(ctx, children, crash_at)
    failed = [line for line in tier_lines if line.startswith("F ")]
    if failed:
        ctx.history.round_problems.append(f"a tier pass failed with no fault: {failed[0][:300]}")
    _after_fault(ctx)


def tier_power_cut_round(ctx: Ctx) -> None:
    _setup(ctx, journal=True)
    crash_at = _crash_at(ctx) if ctx.rng.random() < 0.5 else None
    children = _start(ctx, crash_at)
    _stop(ctx, children, crash_at)
    power_cut(ctx.cluster, [*ctx.log_dirs, _lake_root(ctx)], ctx.journal or "", ctx.seed)
    _after_fault(ctx)


def tier_lake_unwritable_round(ctx: Ctx) -> None:
    _setup(ctx, journal=False)
    error, only_fsync = ctx.rng.choice((("EROFS", False), ("ENOSPC", False), ("ENOSPC", True)))
    children = _start(ctx, None)
    plain, txn, tierer = children
    if not wait_line(tierer, "T ", 30):
        raise RuntimeError("the tierer copied nothing in 30 s (the table is made by the first copy)")
    time.sleep(ctx.rng.uniform(0.1, 0.8))
    faults.inject(_table(ctx), error, only_fsync=only_fsync)
    try:
        time.sleep(0.6)
        _write_during(ctx, 0)
        _check_floor(ctx, f"while the lake fails with {error}")
        time.sleep(0.6)
        _write_during(ctx, 1)
        _check_floor(ctx, f"while the lake fails with {error}")
    finally:
        faults.clear(_table(ctx))  # space freed, the mount made writable again
    # a pass that copies after the last failed one; a loaded machine may take seconds to start it
    wait_line(tierer, "T ", 30, after="F ")
    time.sleep(ctx.rng.uniform(0.4, 1.0))
    for child in children:
        if child.poll() is None:
            child.kill()
    record_produce(ctx, lines(plain))
    record_txn(ctx, lines(txn))
    tier_lines = lines(tierer)
    failed = [line for line in tier_lines if line.startswith("F ")]
    want = os.strerror(getattr(__import__("errno"), error))
    if not failed:
        ctx.history.round_problems.append(f"no tier pass failed while the lake failed with {error}")
    for line in failed:
        if not line.startswith("F TierError: ") or _table(ctx) not in line or want not in line:
            ctx.history.round_problems.append(f"a pass failed without a clear TierError naming the table and "
                                              f"{want!r}: {line[:300]}")
            break
    after = tier_lines[tier_lines.index(failed[-1]) + 1:] if failed else []
    if failed and not any(line.startswith("T ") for line in after):
        ctx.history.round_problems.append("no pass copied anything after the lake's fault was lifted")
    _after_fault(ctx)


def _write_during(ctx: Ctx, n: int) -> None:
    """One acknowledged acks=all write per partition while the lake fails: writers keep working."""
    with Producer({"cluster": ctx.cluster, "acks": "all", "linger.ms": 0}) as producer:
        for p in range(ctx.partitions):
            value = f"during-{n}-{p}".encode()

            def report(err, msg, value=value):
                if err is None:
                    ctx.history.acked.append(Ack(TOPIC, msg.partition(), msg.offset(), value))
                else:
                    ctx.history.write_errors.append(f"a writer failed while the lake failed: {str(err)[:200]}")

            producer.produce(TOPIC, value, partition=p, on_delivery=report)
        producer.flush()
