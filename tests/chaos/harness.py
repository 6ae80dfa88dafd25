"""The chaos harness's machinery: a round's context, child writers, reads and history.

Rounds (:mod:`chaos.rounds`) build on these; :mod:`chaos.run` runs them and prints
the table. Nothing here injects a fault by itself.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos.checker import Ack, History
from chaos.power_cut import sync_all
from kstream import Admin, Consumer, NewTopic, Producer, TopicPartition
from kstream.log.storage import faults
from kstream.log.transactions.store import TransactionStore
from kstream.log.transactions.view import visible_state

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
TOPIC = "t"
ROUND_TIMEOUT_S = 60
READ_PATIENCE_S = 5  # longest a final read waits for records below the HW to arrive


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
          index_interval: int = 4096, txn_timeout_ms: int = 1000) -> None:
    ctx.cluster = os.path.join(ctx.work, "cluster")
    options: dict = {"cluster": ctx.cluster, "min.insync.replicas": min_isr,
                     # every transactional writer asks it (child.round_timeout_ms); Spark task writes have it
                     "transaction.max.timeout.ms": txn_timeout_ms}
    create_topic(ctx, options, rf, {"segment.bytes": str(segment_bytes), "index.interval.bytes": str(index_interval)},
                 journal)


def create_topic(ctx: Ctx, options: dict, rf: int, config: dict[str, str], journal: bool,
                 more_roots: tuple[str, ...] = ()) -> None:
    """The round's topic on ``ctx.cluster`` (``options``: the cluster's; with rf > 1, three log dirs
    of the round's own), and with ``journal`` the fsync journal started, with every file so far
    (the cluster, its log dirs and ``more_roots``) recorded as durable."""
    options = {**options, "default.replication.factor": rf}
    if rf > 1:
        ctx.log_dirs = [os.path.join(ctx.work, f"disk{i}") for i in range(3)]
        options["log.dirs"] = ",".join(ctx.log_dirs)
    with Admin(options) as admin:
        admin.create_topics([NewTopic(TOPIC, ctx.partitions, rf, config=config)])[TOPIC].result()
        if not ctx.log_dirs:
            ctx.log_dirs = list(admin.cluster.log_dir_paths().values())
    if journal:
        ctx.journal = os.path.join(ctx.work, "journal")
        faults.start_journal(ctx.journal)
        sync_all([ctx.cluster, *ctx.log_dirs, *more_roots], ctx.journal)  # what was there before the round is durable
        faults.JOURNAL = None  # the parent's own reads need no journal


def lines(child: subprocess.Popen, timeout: float = 30, work: str | None = None) -> list[str]:
    """What a child printed (it is waited for, or already dead); a cut last line is dropped.
    ``work``: the round's directory, for a child whose fourth argument is not the cluster path."""
    out, _ = child.communicate(timeout=timeout)
    text = (_pending.pop(child.pid, b"") + out).decode(errors="replace")
    with open(os.path.join(work or _workdir(child), f"out-{child.pid}"),
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
        # An empty poll is not the end: the first one after a fault also opens the cluster and
        # rebuilds state, which a loaded machine may not finish in one poll. Read on until the
        # high watermark (read_committed stops earlier at an open transaction: then until a
        # deadline; a stuck LSO is the checker's to report).
        deadline = time.monotonic() + READ_PATIENCE_S
        while len(out) < limit:
            message = consumer.poll(0.2)
            if message is None:
                _low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, p))
                reached = consumer.position([TopicPartition(TOPIC, p)])[0].offset
                if reached >= high or time.monotonic() > deadline:
                    break
                continue
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
        for p in range(ctx.partitions):
            handle = admin.cluster.partition(TOPIC, p)
            first_open = None
            try:
                hw = handle.high_watermark()
                h.final_hw[(TOPIC, p)] = hw
                h.hw_samples.setdefault((TOPIC, p), []).append(hw or 0)
                h.frames[(TOPIC, p)] = _frames(handle, hw or 0)
                # The LSO readers see: from the transaction index files (issue 14). A row of the
                # transaction tables whose partition holds no open transaction in the log (its
                # marker is written, or it never wrote a frame there) holds no reader back; nor
                # does one whose outcome is fixed (decided, or past its deadline): readers apply
                # it without writing it (issue 26), the next writer writes its markers.
                first_open = visible_state(handle.leader_dir, hw or 0, TransactionStore.for_cluster(admin.cluster),
                                           TOPIC, p).first_open
            except Exception as err:
                h.read_errors[(TOPIC, p)] = f"{label}frame walk: {type(err).__name__}: {err}"[:300]
            finally:
                handle.close()
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
        wait_line(child, "A ", 30)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)


# -- the fault classes ----------------------------------------------------------------------


def wait_line(child: subprocess.Popen, want: str, seconds: float, after: str | None = None) -> bool:
    """Read the child's stdout until a line starting with ``want`` (with ``after``: one printed
    after the last line starting with ``after`` so far); what was read is kept for lines()."""
    deadline = time.monotonic() + seconds
    got = _pending.pop(child.pid, b"")
    assert child.stdout is not None
    os.set_blocking(child.stdout.fileno(), False)
    try:
        while time.monotonic() < deadline:
            chunk = child.stdout.read()
            if chunk:
                got += chunk
                text = b"\n" + got
                if after is not None:
                    text = text[max(text.rfind(f"\n{after}".encode()), 0):]
                if f"\n{want}".encode() in text:
                    return True
            elif child.poll() is not None:
                return False
            time.sleep(0.02)
        return False
    finally:
        os.set_blocking(child.stdout.fileno(), True)
        _pending[child.pid] = got


_pending: dict[int, bytes] = {}
