"""Seeded fault rounds against kstream's promises, and the table `make chaos` prints.

    python -m tests.chaos.run                       # every class, 20 rounds each
    python -m tests.chaos.run --class power_cut_rf3 --seed 1234   # replay one round
    python -m tests.chaos.run --rounds 3 --keep     # keep each round's directory

A round builds a small cluster under a temporary directory, runs writers as
child processes (tests/chaos/child.py), applies its fault at a seeded random
moment, then reads everything back and hands the history to
:mod:`tests.chaos.checker`. A failing round prints its seed, its first
problems and the command that replays it. Everything random in a round comes
from its seed, except process timing (where a kill lands); a replay reruns
the same fault plan.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos.checker import Ack, History, Verdict, check
from chaos.power_cut import power_cut, sync_all
from kstream import Admin, Consumer, NewTopic, Producer, TopicPartition
from kstream.log import faults
from kstream.log import format as fmt
from kstream.log.transactions import TransactionStore

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
TOPIC = "t"
ROUND_TIMEOUT_S = 60


class RoundHungError(Exception):
    pass


@dataclass
class Ctx:
    """One round: its directory, cluster, log dirs, seeded rng and history."""

    work: str
    seed: int
    rng: random.Random
    cluster: str = ""
    log_dirs: list[str] = field(default_factory=list)
    partitions: int = 2
    journal: str | None = None
    history: History = field(default_factory=History)
    children: list[subprocess.Popen] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        env = dict(os.environ, KSTREAM_FAULT_INJECTION="1")
        src = os.path.join(os.path.dirname(CHILD), "..", "..", "src")
        env["PYTHONPATH"] = os.path.abspath(src) + os.pathsep + env.get("PYTHONPATH", "")
        if self.journal:
            env[faults.JOURNAL_ENV] = self.journal
        return env

    def spawn(self, *args: str) -> subprocess.Popen:
        err = open(os.path.join(self.work, f"child-{len(self.children)}.err"), "wb")
        child = subprocess.Popen([sys.executable, CHILD, *args], stdout=subprocess.PIPE, stderr=err,
                                 env=self.env())
        err.close()
        self.children.append(child)
        return child


# -- set-up and reading back ---------------------------------------------------------------


def setup(ctx: Ctx, rf: int, min_isr: int = 1, segment_bytes: int = 8192, journal: bool = False,
          index_interval: int = 4096) -> None:
    ctx.cluster = os.path.join(ctx.work, "cluster")
    options: dict = {"cluster": ctx.cluster, "min.insync.replicas": min_isr,
                     "default.replication.factor": rf, "transaction.timeout.ms": 1000}
    if rf > 1:
        ctx.log_dirs = [os.path.join(ctx.work, f"disk{i}") for i in range(3)]
        options["log.dirs"] = ",".join(ctx.log_dirs)
    with Admin(options) as admin:
        admin.create_topics([NewTopic(TOPIC, ctx.partitions, rf, {
            "segment.bytes": str(segment_bytes), "index.interval.bytes": str(index_interval)})])[TOPIC].result()
        if not ctx.log_dirs:
            ctx.log_dirs = list(admin.cluster.log_dir_paths().values())
    if journal:
        ctx.journal = os.path.join(ctx.work, "journal")
        faults.start_journal(ctx.journal)
        sync_all([ctx.cluster, *ctx.log_dirs], ctx.journal)  # what was there before the round is durable
        faults.JOURNAL = None  # the parent's own reads need no journal


def lines(child: subprocess.Popen, timeout: float = 30) -> list[str]:
    """What a child printed (it is waited for, or already dead); a cut last line is dropped."""
    out, _ = child.communicate(timeout=timeout)
    text = (_pending.pop(child.pid, b"") + out).decode(errors="replace")
    with open(os.path.join(_workdir(child), f"out-{child.pid}"),
              "w", encoding="utf-8") as f:
        f.write(text)
    return text.split("\n")[:-1]


def _workdir(child: subprocess.Popen) -> str:
    return os.path.dirname(child.args[3])  # the cluster path's parent: the round's directory


def record_produce(ctx: Ctx, output: list[str]) -> int:
    acked = 0
    for line in output:
        parts = line.split(" ")
        if parts[0] == "A" and len(parts) == 4:
            ctx.history.acked.append(Ack(TOPIC, int(parts[2]), int(parts[3]), parts[1].encode()))
            acked += 1
    return acked


def record_txn(ctx: Ctx, output: list[str]) -> None:
    begun: dict[str, list[bytes]] = {}
    for line in output:
        parts = line.split(" ", 2)
        if parts[0] == "B" and len(parts) == 3:
            begun[parts[1]] = [v.encode() for v in parts[2].split(",")]
        elif parts[0] in ("C", "X") and len(parts) == 3:
            values = begun.pop(parts[1])
            (ctx.history.committed_txns if parts[0] == "C" else ctx.history.aborted_txns).append(values)
    ctx.history.unknown_txns.extend(begun.values())


def kill_all(ctx: Ctx) -> None:
    for child in ctx.children:
        if child.poll() is None:
            child.send_signal(signal.SIGCONT)
            child.kill()
            child.wait()


def sample_hw(ctx: Ctx) -> None:
    with Admin({"cluster": ctx.cluster}) as admin:
        for p in range(ctx.partitions):
            handle = admin.cluster.partition(TOPIC, p)
            try:
                hw = handle.high_watermark()
            finally:
                handle.close()
            ctx.history.hw_samples.setdefault((TOPIC, p), []).append(hw or 0)


def read_partition(ctx: Ctx, p: int, level: str, start: int = 0, limit: int = 1 << 30
                   ) -> tuple[list[tuple[int, bytes]], str | None]:
    """Records a fresh consumer reads from ``start``, and the error that stopped it, if any."""
    consumer = Consumer({"cluster": ctx.cluster, "isolation.level": level})
    out: list[tuple[int, bytes]] = []
    try:
        consumer.assign([TopicPartition(TOPIC, p, start)])
        while len(out) < limit and (message := consumer.poll(0.2)) is not None:
            if message.error() is not None:
                return out, str(message.error())
            out.append((message.offset(), message.value()))
    except Exception as err:  # a failed read is a finding
        return out, f"{type(err).__name__}: {err}"
    finally:
        consumer.close()
    return out, None


def read_back(ctx: Ctx, label: str = "") -> None:
    """The final reads, frame walk, HW, replica check and open transactions into the history."""
    h = ctx.history
    for p in range(ctx.partitions):
        tp = (TOPIC, p)
        h.final[tp], error = read_partition(ctx, p, "read_committed")
        h.final_uncommitted[tp], error2 = read_partition(ctx, p, "read_uncommitted")
        if error or error2:
            h.read_errors[tp] = f"{label}{error or error2}"[:300]
    with Admin({"cluster": ctx.cluster}) as admin:
        store = TransactionStore(admin.cluster.metadata)
        for p in range(ctx.partitions):
            handle = admin.cluster.partition(TOPIC, p)
            try:
                hw = handle.high_watermark()
                h.final_hw[(TOPIC, p)] = hw
                h.hw_samples.setdefault((TOPIC, p), []).append(hw or 0)
                h.frames[(TOPIC, p)] = _frames(handle, hw or 0)
            except Exception as err:
                h.read_errors[(TOPIC, p)] = f"{label}frame walk: {type(err).__name__}: {err}"[:300]
            finally:
                handle.close()
            first_open = store.first_open_offset(TOPIC, p)
            if first_open is not None:
                h.open_lso[(TOPIC, p)] = first_open
        try:
            h.replica_mismatches = [f"{m.topic}-{m.partition} leader {m.leader} vs {m.replica} at "
                                    f"{m.offset}: {m.reason}" for m in admin.verify_replicas([TOPIC])]
        except Exception as err:
            h.replica_mismatches = [f"verify-replicas failed: {type(err).__name__}: {err}"]


def _frames(handle, end: int) -> list[tuple[int, int]]:
    reader = handle.reader()
    frames = []
    try:
        offset = reader.log_start_offset()
        while offset < end:
            got = reader.read(offset, 1 << 20, end_offset=end)
            if not got:
                break
            for frame in got:
                frames.append((frame.header.base_offset, frame.header.base_offset + frame.header.record_count))
            offset = frames[-1][1]
    finally:
        reader.close()
    return frames


def write_after(ctx: Ctx, acks: str = "all") -> None:
    """One more acks=all record per partition (the next writer recovers, reconciles)."""
    with Producer({"cluster": ctx.cluster, "acks": acks, "linger.ms": 0}) as producer:
        for p in range(ctx.partitions):
            value = f"after-{p}".encode()

            def report(err, msg, value=value):
                if err is None:
                    ctx.history.acked.append(Ack(TOPIC, msg.partition(), msg.offset(), value))
                else:
                    ctx.history.write_errors.append(f"the next writer failed on {TOPIC}-{msg.partition()}: "
                                                    f"{str(err)[:200]}")

            producer.produce(TOPIC, value, partition=p, on_delivery=report)
        producer.flush()


def produce_child(ctx: Ctx, tag: str, count: int, acks: str = "all", rate: int = 600) -> subprocess.Popen:
    """A writer of ``count`` records at about ``rate`` a second (rounds stay small)."""
    return ctx.spawn("produce", ctx.cluster, TOPIC, str(ctx.partitions), acks, tag, str(count), str(rate))


def wait_for_acks(child: subprocess.Popen, seconds: float) -> None:
    """Let the child run ``seconds`` after its first acknowledgement (it may finish first)."""
    if child.pid not in _pending:
        _wait_line(child, "A ", 30)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)


# -- the fault classes ----------------------------------------------------------------------


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
    reader = threading.Thread(target=_reader, args=(ctx, stop), daemon=True)
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


def _reader(ctx: Ctx, stop: threading.Event) -> None:
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
        _lose(ctx.log_dirs[victim])
        record_produce(ctx, lines(child, 60))
    else:
        record_produce(ctx, lines(child, 60))
        sample_hw(ctx)
        _lose(ctx.log_dirs[victim])
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


def _lose(log_dir: str) -> None:
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
    if not _wait_line(zombie, "P", 30):
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


def _wait_line(child: subprocess.Popen, want: str, seconds: float) -> bool:
    """Read the child's stdout until a line starting with ``want``; what was read is kept for lines()."""
    deadline = time.monotonic() + seconds
    got = _pending.pop(child.pid, b"")
    assert child.stdout is not None
    os.set_blocking(child.stdout.fileno(), False)
    try:
        while time.monotonic() < deadline:
            chunk = child.stdout.read()
            if chunk:
                got += chunk
                if f"\n{want}".encode() in b"\n" + got:
                    return True
            elif child.poll() is not None:
                return False
            time.sleep(0.02)
        return False
    finally:
        os.set_blocking(child.stdout.fileno(), True)
        _pending[child.pid] = got


_pending: dict[int, bytes] = {}


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
}


# -- running rounds -------------------------------------------------------------------------


def run_round(name: str, seed: int, keep: bool = False) -> tuple[Verdict, float, str]:
    """Run one round; returns its verdict, seconds, and its directory (removed unless ``keep``)."""
    work = tempfile.mkdtemp(prefix=f"chaos-{name}-{seed}-")
    ctx = Ctx(work=work, seed=seed, rng=random.Random(f"{name}:{seed}"))
    saved = (faults.ENABLED, faults.JOURNAL)
    faults.ENABLED = True
    started = time.monotonic()

    def hung(*_):
        raise RoundHungError(f"round did not finish in {ROUND_TIMEOUT_S}s")

    previous = signal.signal(signal.SIGALRM, hung) if threading.current_thread() is threading.main_thread() else None
    if previous is not None:
        signal.alarm(ROUND_TIMEOUT_S)
    try:
        CLASSES[name](ctx)
        verdict = check(ctx.history)
    except Exception as err:  # a crash of the round is a failed round
        verdict = check(ctx.history)
        verdict.problems.insert(0, f"round raised {type(err).__name__}: {str(err)[:300]}")
    finally:
        if previous is not None:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
        kill_all(ctx)
        faults.ENABLED, faults.JOURNAL = saved
    seconds = time.monotonic() - started
    if not keep and verdict.ok:
        shutil.rmtree(work, ignore_errors=True)
    return verdict, seconds, work


def replay_command(name: str, seed: int) -> str:
    return f"python -m tests.chaos.run --class {name} --seed {seed}"


def main(argv: list[str] | None = None) -> int:
    logging.getLogger("kstream").setLevel(logging.ERROR)  # recoveries are expected here
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="classes", action="append", choices=sorted(CLASSES))
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, help="run this one seed (replay)")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep every round's directory")
    args = parser.parse_args(argv)
    names = args.classes or list(CLASSES)
    seeds = [args.seed] if args.seed is not None else list(range(args.first_seed, args.first_seed + args.rounds))
    header = f"{'class':<18} {'rounds':>6} {'failed':>6} {'acked':>7} {'lost':>5} {'dup':>4} " \
             f"{'phantom':>7} {'stuckLSO':>8} {'seconds':>7}"
    rows, failures = [], 0
    for name in names:
        total = Verdict()
        failed, seconds = 0, 0.0
        for seed in seeds:
            verdict, took, work = run_round(name, seed, args.keep)
            seconds += took
            for attr in ("acknowledged", "lost", "duplicated", "phantom", "stuck_lso"):
                setattr(total, attr, getattr(total, attr) + getattr(verdict, attr))
            if not verdict.ok:
                failed += 1
                print(f"FAIL {name} seed {seed} (kept in {work}): replay with: {replay_command(name, seed)}")
                for problem in verdict.problems[:4]:
                    print(f"    {problem}")
                sys.stdout.flush()
        failures += failed
        rows.append(f"{name:<18} {len(seeds):>6} {failed:>6} {total.acknowledged:>7} {total.lost:>5} "
                    f"{total.duplicated:>4} {total.phantom:>7} {total.stuck_lso:>8} {seconds:>7.1f}")
        print(rows[-1], flush=True)
    print()
    print(header)
    for row in rows:
        print(row)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
