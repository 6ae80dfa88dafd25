"""The fault classes: one function per kind of round, registered in :data:`CLASSES`.

Each round sets up a small cluster (:func:`chaos.harness.setup`), runs writers,
applies its fault at a seeded moment, and records what it saw into the round's
history for :mod:`chaos.checker`. Add a class by writing its round here (or in a
module of its own) and naming it in :data:`CLASSES`.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos import disk_rounds, group_rounds
from chaos.checker import Ack, History
from chaos.harness import (
    TOPIC,
    Ctx,
    lines,
    produce_child,
    read_back,
    read_partition,
    record_produce,
    record_txn,
    sample_hw,
    setup,
    wait_for_acks,
    wait_line,
    write_after,
)
from chaos.power_cut import power_cut
from kstream import Admin, Consumer, Producer, TopicPartition
from kstream.log.storage import faults
from kstream.log.storage import format as fmt


def power_cut_round(ctx: Ctx, rf: int) -> None:
    setup(ctx, rf=rf, min_isr=2 if rf == 3 else 1, journal=True)
    child = produce_child(ctx, "w", 100000)
    wait_for_acks(child, ctx.rng.uniform(0.05, 1.2))
    child.kill()
    record_produce(ctx, lines(child))
    power_cut(ctx.cluster, ctx.log_dirs, ctx.journal or "", ctx.seed)
    # Promise: what was acknowledged is readable at once, and after the next writer too.
    read_back(ctx, "before the next write: ")
    first = ctx.history
    ctx.history = History(acked=list(first.acked), hw_samples={})
    write_after(ctx)
    read_back(ctx, "after the next write: ")
    ctx.history.read_errors = {**first.read_errors, **ctx.history.read_errors}
    _merge_first_read(first, ctx.history)


def _merge_first_read(first: History, h: History) -> None:
    """Acknowledged records missing from the read before the next write count as lost too."""
    for ack in first.acked:
        tp = (ack.topic, ack.partition)
        if tp not in first.read_errors and dict(first.final.get(tp, [])).get(ack.offset) != ack.value:
            h.invisible.append(f"{ack.value!r} at {tp[0]}-{tp[1]}@{ack.offset}")
    for tp, samples in first.hw_samples.items():
        h.hw_samples[tp] = [*samples, *h.hw_samples.get(tp, [])]


def sigkill_round(ctx: Ctx) -> None:
    setup(ctx, rf=3, min_isr=2)
    child = produce_child(ctx, "w", 100000)
    stop = threading.Event()
    reader = threading.Thread(target=read_committed_loop, args=(ctx, stop), daemon=True)
    reader.start()
    for _ in range(3):
        wait_for_acks(child, ctx.rng.uniform(0.05, 0.5))
        sample_hw(ctx)
    child.kill()
    record_produce(ctx, lines(child))
    stop.set()
    reader.join(10)
    write_after(ctx)
    read_back(ctx)


def read_committed_loop(ctx: Ctx, stop: threading.Event) -> None:
    """A read_committed consumer recording every record it sees, until ``stop`` is set."""
    consumer = Consumer({"cluster": ctx.cluster, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(ctx.partitions)])
    try:
        while not stop.is_set():
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                ctx.history.reads.append((TOPIC, message.partition(), message.offset(), message.value()))
    finally:
        consumer.close()


def disk_lost_round(ctx: Ctx, under_load: bool) -> None:
    setup(ctx, rf=3, min_isr=2)
    victim = ctx.rng.randrange(3)
    child = produce_child(ctx, "w", 600)
    if under_load:
        wait_for_acks(child, ctx.rng.uniform(0.05, 0.8))
        lose_log_dir(ctx.log_dirs[victim])
        record_produce(ctx, lines(child, 60))
    else:
        record_produce(ctx, lines(child, 60))
        sample_hw(ctx)
        lose_log_dir(ctx.log_dirs[victim])
        read_back(ctx, "quiet, before the next write: ")
        first = ctx.history
        ctx.history = History(acked=list(first.acked), hw_samples={})
        ctx.history.read_errors = dict(first.read_errors)
        write_after(ctx)
        read_back(ctx)
        _merge_first_read(first, ctx.history)
        return
    write_after(ctx)
    read_back(ctx)


def lose_log_dir(log_dir: str) -> None:
    """The disk is gone at once (renamed away, then removed; a writer may still hold files)."""
    os.rename(log_dir, log_dir + ".lost")
    shutil.rmtree(log_dir + ".lost", ignore_errors=True)


def disk_error_round(ctx: Ctx, error: str, only_fsync: bool, rf: int) -> None:
    setup(ctx, rf=rf, min_isr=2 if rf == 3 else 1)
    victim = ctx.rng.randrange(len(ctx.log_dirs))
    child = produce_child(ctx, "w", 600)
    wait_for_acks(child, ctx.rng.uniform(0.05, 0.6))
    faults.inject(ctx.log_dirs[victim], error, only_fsync=only_fsync)
    time.sleep(0.3)
    faults.clear(ctx.log_dirs[victim])  # the disk is repaired (space freed, replaced)
    record_produce(ctx, lines(child, 60))
    with Admin({"cluster": ctx.cluster}) as admin:
        for log_dir_id, path in admin.cluster.log_dir_paths().items():
            if path == ctx.log_dirs[victim]:
                admin.set_log_dir_online(log_dir_id)
        admin.sync_replicas([TOPIC])
    sample_hw(ctx)
    write_after(ctx)  # the partition must take writes again
    read_back(ctx)


def bit_flip_round(ctx: Ctx, target: str) -> None:
    """Flip a bit in a sealed segment or corrupt an index; every offset then reads right or
    raises a clear error: no record is silently skipped or changed."""
    ctx.partitions = 1
    setup(ctx, rf=1, segment_bytes=6000, index_interval=256)
    # Written in-process in seeded batches: the same seed gives the same segments.
    with Producer({"cluster": ctx.cluster, "acks": "all"}) as producer:
        i = 0
        while i < 300:
            values = [f"w-{j}".encode() for j in range(i, i + ctx.rng.randint(1, 9))]
            done = 0
            for r in producer.produce_batch(TOPIC, pa.table({"value": values}), partition=0):
                ctx.history.acked.extend(Ack(TOPIC, 0, r.base_offset + k, values[done + k])
                                         for k in range(r.record_count))
                done += r.record_count
            i += len(values)
    replica = os.path.join(ctx.log_dirs[0], fmt.replica_dir_name(TOPIC, 0))
    sealed = sorted(n for n in os.listdir(replica) if n.endswith(fmt.LOG_SUFFIX))[:-1]
    name = ctx.rng.choice(sealed)
    if target == "index":
        path = os.path.join(replica, name[:-len(fmt.LOG_SUFFIX)] + fmt.OFFSET_INDEX_SUFFIX)
        _corrupt_index(path, os.path.join(replica, name), ctx.rng)
    else:
        path = os.path.join(replica, name)
        with open(path, "r+b") as f:
            data = bytearray(f.read())
            at = ctx.rng.randrange(len(data))
            data[at] ^= 1 << ctx.rng.randrange(8)
            f.seek(0)
            f.write(data)
    values = {a.offset: a.value for a in ctx.history.acked}
    h = ctx.history
    base = fmt.parse_segment_file_name(name) or 0
    following = sorted(n for n in os.listdir(replica) if n.endswith(fmt.LOG_SUFFIX) and n > name)
    end = fmt.parse_segment_file_name(following[0]) if following else base
    hit = [o for o in values if base <= o < (end or base)]  # every offset of the damaged segment
    for offset in sorted(set(hit) | set(ctx.rng.sample(sorted(values), min(10, len(values))))):
        got, error = read_partition(ctx, 0, "read_uncommitted", start=offset, limit=1)
        if got and got[0] != (offset, values[offset]) and not error:
            h.wrong_reads.append(f"asked offset {offset}, got offset {got[0][0]} value {got[0][1]!r}")
        elif got and got[0] != (offset, values[offset]):
            h.wrong_reads.append(f"asked offset {offset}, got {got[0][0]} {got[0][1]!r}, then {error}")
    # The whole log in order: each acknowledged record, up to a clear error; never a gap.
    got, error = read_partition(ctx, 0, "read_uncommitted")
    h.final[(TOPIC, 0)] = got
    if error:
        reached = got[-1][0] + 1 if got else 0
        h.acked = [a for a in h.acked if a.offset < reached]  # after the error: reported, not lost


def _corrupt_index(path: str, segment_path: str, rng: random.Random) -> None:
    """Point one index entry at a later frame (entries stay monotonic: it looks valid), or
    flip a bit in the index: a seek must check the frame it lands on, not trust it."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
    entry = fmt.OFFSET_INDEX_ENTRY.size
    entries = [fmt.OFFSET_INDEX_ENTRY.unpack_from(data, i) for i in range(0, len(data) - entry + 1, entry)]
    with open(segment_path, "rb") as f:
        log = f.read()
    starts, position = [], 0
    while position + fmt.HEADER_SIZE <= len(log):
        starts.append(position)
        position += fmt.unpack_header(log[position:position + fmt.HEADER_SIZE]).frame_size
    if entries and rng.random() < 0.75:
        i = rng.randrange(len(entries))
        rel, pos = entries[i]
        limit = entries[i + 1][1] if i + 1 < len(entries) else len(log)
        later = [s for s in starts if pos < s <= limit and s < len(log)]
        if later:
            fmt.OFFSET_INDEX_ENTRY.pack_into(data, i * entry, rel, later[0])
    elif data:
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
    with open(path, "r+b") as f:
        f.write(data)


def zombie_txn_round(ctx: Ctx, stop_not_kill: bool) -> None:
    """A transactional producer dies (or pauses) mid-transaction past transaction.timeout.ms.

    Dead: nobody calls init_transactions again; readers and other writers must end the
    transaction themselves (no stuck LSO). Paused: another transactional producer runs
    meanwhile, then the zombie wakes and goes on; it must be fenced, its transaction
    all or nothing."""
    setup(ctx, rf=1)
    zombie = ctx.spawn("txn", ctx.cluster, TOPIC, str(ctx.partitions), "tx-z", "z", "3", "30")
    if not wait_line(zombie, "P", 30):
        raise RuntimeError("the zombie never reached its pause")
    zombie.send_signal(signal.SIGSTOP if stop_not_kill else signal.SIGKILL)
    time.sleep(1.3 + ctx.rng.uniform(0, 0.5))  # past transaction.timeout.ms=1000
    if stop_not_kill:
        other = ctx.spawn("txn", ctx.cluster, TOPIC, str(ctx.partitions), "tx-o", "o", "4", "0")
        record_txn(ctx, lines(other, 60))
        zombie.send_signal(signal.SIGCONT)
        os.kill(zombie.pid, signal.SIGUSR1)  # end its sleep: it goes on as if never paused
        record_txn(ctx, lines(zombie, 60))
    else:
        record_txn(ctx, lines(zombie))
        write_after(ctx)  # a plain writer and the readers below touch the partitions
    read_back(ctx)
    if stop_not_kill:
        return
    time.sleep(0.2)
    ctx.history.open_lso.clear()
    read_back(ctx)  # the second look: still open after readers came by?


def sigstop_writer_round(ctx: Ctx) -> None:
    """SIGSTOP one acks=all writer while another writes; SIGCONT; both finish."""
    setup(ctx, rf=3, min_isr=2)
    a = produce_child(ctx, "a", 500)
    b = produce_child(ctx, "b", 500)
    wait_for_acks(a, ctx.rng.uniform(0.05, 0.5))
    a.send_signal(signal.SIGSTOP)
    sample_hw(ctx)
    time.sleep(ctx.rng.uniform(0.2, 0.8))
    sample_hw(ctx)
    a.send_signal(signal.SIGCONT)
    record_produce(ctx, lines(a, 60))
    record_produce(ctx, lines(b, 60))
    read_back(ctx)


def two_failovers_round(ctx: Ctx) -> None:
    """The leader's disk fails, then the new leader's; the last replica is below min ISR;
    both come back and catch up."""
    setup(ctx, rf=3, min_isr=2)
    child = produce_child(ctx, "w", 800)
    failed = []
    with Admin({"cluster": ctx.cluster}) as admin:
        ids = {path: i for i, path in admin.cluster.log_dir_paths().items()}
        for _ in range(2):
            wait_for_acks(child, ctx.rng.uniform(0.05, 0.4))
            leader = admin.cluster.topic(TOPIC).partitions[0].leader
            path = next(p for p, i in ids.items() if i == leader)
            faults.inject(path, "EIO")
            failed.append(path)
            sample_hw(ctx)
        record_produce(ctx, lines(child, 60))
        for path in failed:
            faults.clear(path)
            admin.set_log_dir_online(ids[path])
        admin.sync_replicas([TOPIC])
    sample_hw(ctx)
    write_after(ctx)
    read_back(ctx)


def _clean_rounds():
    """tests/chaos/clean_rounds.py: the log cleaner's classes (issue 25)."""
    return __import__("chaos.clean_rounds", fromlist=["_"])


def _tier_rounds():
    """tests/chaos/tier_rounds.py: the tierer's classes (issue 24)."""
    return __import__("chaos.tier_rounds", fromlist=["_"])


def _mirror_rounds():
    """tests/chaos/mirror_rounds.py: the mirror's classes (issue 23; they start a Kafka broker)."""
    return __import__("chaos.mirror_rounds", fromlist=["_"])


def _sink_rounds():
    """tests/chaos/sink_rounds.py, loaded when one of its classes runs (it imports pyspark)."""
    return __import__("chaos.sink_rounds", fromlist=["_"])


def _jvm_rounds():
    """tests/chaos/jvm_rounds.py: the Java writer's classes (issue 22; they need the kstream jar)."""
    return __import__("chaos.jvm_rounds", fromlist=["_"])


CLASSES: dict[str, Callable[[Ctx], None]] = {
    "power_cut_rf1": lambda ctx: power_cut_round(ctx, 1),
    "power_cut_rf3": lambda ctx: power_cut_round(ctx, 3),
    "sigkill": sigkill_round,
    "disk_lost_quiet": lambda ctx: disk_lost_round(ctx, under_load=False),
    "disk_lost_load": lambda ctx: disk_lost_round(ctx, under_load=True),
    "eio_fsync": lambda ctx: disk_error_round(ctx, "EIO", True, rf=3),
    "enospc_rf3": lambda ctx: disk_error_round(ctx, "ENOSPC", False, rf=3),
    "enospc_rf1": lambda ctx: disk_error_round(ctx, "ENOSPC", False, rf=1),
    "bit_flip_segment": lambda ctx: bit_flip_round(ctx, "segment"),
    "bad_index": lambda ctx: bit_flip_round(ctx, "index"),
    "zombie_txn_dead": lambda ctx: zombie_txn_round(ctx, stop_not_kill=False),
    "zombie_txn_paused": lambda ctx: zombie_txn_round(ctx, stop_not_kill=True),
    "sigstop_writer": sigstop_writer_round,
    "two_failovers": two_failovers_round,
    "sigstop_group_member": group_rounds.sigstop_group_member_round,
    "zombie_sink_attempt": group_rounds.zombie_sink_attempt_round,
    "read_only_dir": lambda ctx: disk_rounds.read_only_round(ctx, rf=3),
    "read_only_rf1": lambda ctx: disk_rounds.read_only_round(ctx, rf=1),
    "misdirected_write_segment": lambda ctx: disk_rounds.misdirected_write_round(ctx, "segment"),
    "misdirected_write_index": lambda ctx: disk_rounds.misdirected_write_round(ctx, "index"),
    "power_cut_readers": lambda ctx: __import__("chaos.visibility_rounds", fromlist=["_"]).power_cut_readers_round(ctx),
    "power_cut_txn": lambda ctx: __import__("chaos.txn_rounds", fromlist=["_"]).power_cut_txn_round(ctx),
    "sink_reused_checkpoint": lambda ctx: _sink_rounds().queries_round(ctx, reuse=True),
    "sink_checkpoint_spelling": lambda ctx: _sink_rounds().queries_round(ctx, reuse=False),
    "sink_beside_acks_all_power_cut": lambda ctx: _sink_rounds().beside_acks_all_round(ctx),
    "read_only_readers": lambda ctx: __import__("chaos.read_only_rounds", fromlist=["_"]).read_only_readers_round(ctx),
    "backup_live": lambda ctx: __import__("chaos.backup_rounds", fromlist=["_"]).backup_live_round(ctx),
    "backup_sink": lambda ctx: __import__("chaos.backup_rounds", fromlist=["_"]).backup_sink_round(ctx),
    "clean_sigkill": lambda ctx: _clean_rounds().clean_sigkill_round(ctx),
    "clean_power_cut": lambda ctx: _clean_rounds().clean_power_cut_round(ctx),
    "clean_readers": lambda ctx: _clean_rounds().clean_readers_round(ctx),
    "tier_sigkill": lambda ctx: _tier_rounds().tier_sigkill_round(ctx),
    "tier_power_cut": lambda ctx: _tier_rounds().tier_power_cut_round(ctx),
    "tier_lake_unwritable": lambda ctx: _tier_rounds().tier_lake_unwritable_round(ctx),
    "mirror_sigkill_in": lambda ctx: _mirror_rounds().sigkill_round(ctx, into_kstream=True),
    "mirror_sigkill_out": lambda ctx: _mirror_rounds().sigkill_round(ctx, into_kstream=False),
    "mirror_sigkill_out_eos": lambda ctx: _mirror_rounds().sigkill_round(ctx, into_kstream=False, exactly_once=True),
    "mirror_broker_restart": lambda ctx: _mirror_rounds().broker_restart_round(ctx),
    "mirror_logdir_lost": lambda ctx: _mirror_rounds().logdir_lost_round(ctx),
    "jvm_sink_power_cut": lambda ctx: _jvm_rounds().jvm_sink_power_cut_round(ctx),
    "jvm_sink_sigkill": lambda ctx: _jvm_rounds().jvm_sink_sigkill_round(ctx),
    "jvm_two_queries": lambda ctx: _jvm_rounds().jvm_two_queries_round(ctx),
    "jvm_stalled_attempt": lambda ctx: _jvm_rounds().jvm_stalled_attempt_round(ctx),
    "jvm_speculation": lambda ctx: _jvm_rounds().jvm_speculation_round(ctx),
    "rtm_sink_sigkill": lambda ctx: __import__("chaos.rtm_rounds", fromlist=["_"]).rtm_sink_sigkill_round(ctx),
}

# Classes slower than the harness's ROUND_TIMEOUT_S: real Spark queries, restarted several times.
ROUND_TIMEOUTS_S: dict[str, int] = {
    "jvm_sink_sigkill": 1800,
    "jvm_two_queries": 1800,
    "jvm_stalled_attempt": 600,
    "jvm_speculation": 1800,
    "rtm_sink_sigkill": 1800,
}
