"""Disk fault classes: a log dir turning read-only, and misdirected writes.

* ``read_only_dir`` (RF=3, min ISR 2): one log dir turns read-only
  (``faults.inject(dir, "EROFS")``: writes, creates and fsyncs fail with EROFS,
  reads work) while an acks=all writer runs. The dir must go offline, the writer
  go on on the survivors without an error, readers keep reading (also during the
  fault); once the disk is read-write again, ``log-dirs online`` and the
  replicator bring it back and the replicas agree.
* ``read_only_rf1``: the same on the RF=1 default: writes fail with a clear error
  naming EROFS and what to do, reads of acknowledged data work, and the partition
  takes writes again after the repair.
* ``misdirected_write_segment`` / ``misdirected_write_index`` (RF=3): an aligned
  4 KiB block of one sealed segment (or offset index) of one replica is written
  over another aligned block of the same or another sealed segment (index) of
  that replica: valid-looking frame data at the wrong place. Every offset is then
  read by seek and the whole log in order: each read is right or a clear
  CorruptBatchError naming file, position and offset; nothing is skipped.
  ``verify_replicas`` must report a damaged segment (in a leader or a follower),
  and must not report a damaged index (it is derived data, a hint).

kstream has no repair path for a corrupt replica yet (DESIGN §3 says one can be
repaired from an in-sync peer): these rounds check that corruption is reported,
not that it is healed.
"""

from __future__ import annotations

import os
import sys
import threading

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos.checker import Ack
from chaos.harness import (
    TOPIC,
    Ctx,
    lines,
    produce_child,
    read_back,
    read_partition,
    record_produce,
    sample_hw,
    setup,
    wait_for_acks,
    write_after,
)
from kstream import Admin, Consumer, Producer, TopicPartition
from kstream.log.storage import faults
from kstream.log.storage import format as fmt

BLOCK = 4096


# -- read-only log dir -------------------------------------------------------------------------


def read_only_round(ctx: Ctx, rf: int) -> None:
    setup(ctx, rf=rf, min_isr=2 if rf == 3 else 1)
    victim = ctx.log_dirs[ctx.rng.randrange(len(ctx.log_dirs))]
    child = produce_child(ctx, "w", 600)
    stop = threading.Event()
    reader = threading.Thread(target=_reader, args=(ctx, stop), daemon=True)
    reader.start()
    wait_for_acks(child, ctx.rng.uniform(0.05, 0.6))
    faults.inject(victim, "EROFS")
    output = lines(child, 60)  # the writer runs to its end on a read-only disk
    record_produce(ctx, output)
    sample_hw(ctx)
    _check_writer(ctx, output, rf)
    with Admin({"cluster": ctx.cluster}) as admin:
        ids = {path: i for i, path in admin.cluster.log_dir_paths().items()}
        online = {i: up for i, _, up in admin.cluster.metadata.log_dirs()}
        if online.get(ids[victim], True):
            ctx.history.write_errors.append(f"log dir {victim} is read-only but still online")
    # Reads of acknowledged data work while the disk is read-only (readers may read it).
    _read_during_fault(ctx)
    stop.set()
    reader.join(10)
    faults.clear(victim)  # remounted read-write
    with Admin({"cluster": ctx.cluster}) as admin:
        admin.set_log_dir_online(ids[victim])
        admin.sync_replicas([TOPIC])
    sample_hw(ctx)
    write_after(ctx)  # the partition takes writes again
    read_back(ctx)


def _reader(ctx: Ctx, stop: threading.Event) -> None:
    consumer = Consumer({"cluster": ctx.cluster, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(ctx.partitions)])
    try:
        while not stop.is_set():
            message = consumer.poll(0.1)
            if message is None:
                continue
            if message.error() is not None:
                ctx.history.read_errors[(TOPIC, message.partition() or 0)] = \
                    f"during the fault: {message.error()}"[:300]
            else:
                ctx.history.reads.append((TOPIC, message.partition(), message.offset(), message.value()))
    finally:
        consumer.close()


def _check_writer(ctx: Ctx, output: list[str], rf: int) -> None:
    """RF=3: no write may fail (two in-sync replicas are left). RF=1: writes fail with an
    error that names EROFS and says what to do."""
    errors = [line for line in output if line.startswith("E ")]
    if rf > 1:
        ctx.history.write_errors.extend(f"the writer failed with 2 healthy replicas left: {e[:200]}"
                                        for e in errors[:3])
        return
    if not errors:
        ctx.history.write_errors.append("RF=1 on a read-only disk: no write failed")
    for e in errors[:1]:  # (the child prints the first 200 characters of an error)
        if "EROFS" not in e:
            ctx.history.write_errors.append(f"RF=1 read-only: the first failed write does not name EROFS: {e}")
    # The next write, in full: offline, naming EROFS and what to do.
    with Producer({"cluster": ctx.cluster, "acks": "all", "linger.ms": 0}) as producer:
        failures: list[str] = []
        producer.produce(TOPIC, b"refused", partition=0,
                         on_delivery=lambda err, msg: failures.append(str(err)))
        producer.flush()
    if not failures or failures[0] == "None":
        ctx.history.write_errors.append("RF=1 read-only: a write was acknowledged on a read-only disk")
        ctx.history.acked.append(Ack(TOPIC, 0, -1, b"refused"))
    elif "EROFS" not in failures[0] or "log-dirs online" not in failures[0]:
        ctx.history.write_errors.append(f"RF=1 read-only error does not name EROFS and what to do: "
                                        f"{failures[0][:300]}")


def _read_during_fault(ctx: Ctx) -> None:
    for p in range(ctx.partitions):
        got, error = read_partition(ctx, p, "read_committed")
        if error:
            ctx.history.read_errors[(TOPIC, p)] = f"while read-only: {error}"[:300]
        seen = dict(got)
        for ack in ctx.history.acked:
            if ack.partition == p and seen.get(ack.offset) != ack.value:
                ctx.history.invisible.append(f"{ack.value!r} at {TOPIC}-{p}@{ack.offset} (while read-only)")


# -- misdirected writes ------------------------------------------------------------------------


def misdirected_write_round(ctx: Ctx, target: str) -> None:
    ctx.partitions = 1
    setup(ctx, rf=3, min_isr=2, segment_bytes=16384, index_interval=256)
    _write_seeded(ctx, 600)
    with Admin({"cluster": ctx.cluster}) as admin:
        paths = admin.cluster.log_dir_paths()
        info = admin.cluster.topic(TOPIC).partitions[0]
        replica = ctx.rng.choice(sorted(info.replicas))
    replica_dir = os.path.join(paths[replica], fmt.replica_dir_name(TOPIC, 0))
    segments = sorted((n for n in os.listdir(replica_dir) if n.endswith(fmt.LOG_SUFFIX)),
                      key=lambda n: fmt.parse_segment_file_name(n) or 0)[:-1]  # sealed only
    suffix = fmt.LOG_SUFFIX if target == "segment" else fmt.OFFSET_INDEX_SUFFIX
    files = [os.path.join(replica_dir, n[:-len(fmt.LOG_SUFFIX)] + suffix) for n in segments]
    files = [f for f in files if os.path.getsize(f) > 0]
    changed, damaged = _misdirect(files, ctx.rng)
    h = ctx.history
    values = {a.offset: a.value for a in h.acked}
    base = fmt.parse_segment_file_name(os.path.basename(damaged)[:-len(suffix)] + fmt.LOG_SUFFIX) or 0
    later = [fmt.parse_segment_file_name(n) or 0 for n in segments]
    end = min([b for b in later if b > base], default=max(values) + 1)
    wanted = {o for o in values if base <= o < end} | set(ctx.rng.sample(sorted(values), 20))
    for offset in sorted(wanted):
        got, error = read_partition(ctx, 0, "read_uncommitted", start=offset, limit=1)
        if got and got[0] != (offset, values[offset]):
            h.wrong_reads.append(f"asked offset {offset}, got {got[0][0]} {got[0][1]!r}"
                                 + (f", then {error}" if error else ""))
        elif not got and (target == "index" or not _clear_corruption(error)):
            # (A damaged index is only a hint gone wrong: the data is intact, every read works.)
            h.wrong_reads.append(f"asked offset {offset}: nothing, and no clear error ({error})")
    got, error = read_partition(ctx, 0, "read_uncommitted")
    h.final[(TOPIC, 0)] = got
    if error:
        if target == "index" or not _clear_corruption(error):
            h.wrong_reads.append(f"reading in order stopped without a clear corruption error: {error}")
        reached = got[-1][0] + 1 if got else 0
        h.acked = [a for a in h.acked if a.offset < reached]  # after the error: reported, not lost
    with Admin({"cluster": ctx.cluster}) as admin:
        mismatches = admin.verify_replicas([TOPIC])
    found = [f"leader {m.leader} vs {m.replica} at {m.offset}: {m.reason}" for m in mismatches]
    if target == "segment" and changed:
        if not any(replica in (m.leader, m.replica) for m in mismatches):
            h.replica_mismatches.append(f"verify_replicas did not report the misdirected write in "
                                        f"{damaged} (replica {replica}); it reported {found}")
    else:
        h.replica_mismatches.extend(found)  # an index is a hint: nothing to report


def _write_seeded(ctx: Ctx, count: int) -> None:
    """``count`` acks=all records in seeded batches: the same seed gives the same segments."""
    with Producer({"cluster": ctx.cluster, "acks": "all"}) as producer:
        i = 0
        while i < count:
            values = [f"w-{j}".encode() for j in range(i, i + ctx.rng.randint(1, 9))]
            done = 0
            for r in producer.produce_batch(TOPIC, pa.table({"value": values}), partition=0):
                ctx.history.acked.extend(Ack(TOPIC, 0, r.base_offset + k, values[done + k])
                                         for k in range(r.record_count))
                done += r.record_count
            i += len(values)


def _misdirect(files: list[str], rng) -> tuple[bool, str]:
    """Write an aligned block of one file over an aligned block of the same or another.

    The write lands where a disk would put it: inside the target's allocated block, so
    the target's size does not change (bytes past the source's end read as zeros).
    Returns whether any byte changed, and the damaged file.
    """
    source, dest = rng.choice(files), rng.choice(files)
    src_blocks = (os.path.getsize(source) + BLOCK - 1) // BLOCK
    dst_size = os.path.getsize(dest)
    dst_blocks = (dst_size + BLOCK - 1) // BLOCK
    src_block, dst_block = rng.randrange(src_blocks), rng.randrange(dst_blocks)
    if source == dest and src_block == dst_block and src_blocks > 1:
        dst_block = (src_block + 1 + rng.randrange(src_blocks - 1)) % src_blocks
    with open(source, "rb") as f:
        f.seek(src_block * BLOCK)
        block = f.read(BLOCK).ljust(BLOCK, b"\0")
    at = dst_block * BLOCK
    block = block[:dst_size - at]
    with open(dest, "r+b") as f:
        f.seek(at)
        old = f.read(len(block))
        f.seek(at)
        f.write(block)
    return old != block, dest


def _clear_corruption(error: str | None) -> bool:
    """A corruption report names the file, the position and the offset."""
    return error is not None and "position" in error and fmt.LOG_SUFFIX in error and "offset" in error
