"""Fault classes of the exactly-once Spark sink's query identity and durability (issue 26).

``sink_reused_checkpoint``: two or three streaming queries, one after another, on one
checkpoint path: each starts on a fresh checkpoint there (``rm -rf`` and a new ``metadata``
with a new query id, as Spark writes it), runs 1-3 micro-batches whose drivers are sometimes
SIGKILLed mid-commit or crash after the sink's commit and before Spark's own (the batch is
then replayed). Every child spells the checkpoint its own way (plain, ``file://``,
``file:``, a trailing slash, ``/./``, relative). Checked: every batch of every query is in
the output exactly once (a reused path used to drop a new query's batches; one checkpoint
spelled two ways used to write a replay twice).

``sink_checkpoint_spelling``: one query, 3-5 batches, every driver and task spelling the
checkpoint at random, a crash or replay at each batch: exactly once.

``sink_beside_acks_all_power_cut``: an acks=all producer and Spark sink tasks (with their
driver's commits) write the same partitions while read_committed readers record what they
see; everything is SIGKILLed at a seeded moment and the power is cut through the fsync
journal. Checked: nothing a reader saw is gone (a sink task's append used to publish the HW
over the producer's frame before its fsync), acknowledged records and committed batches are
all there, a batch whose commit did not return is all or nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos.harness import TOPIC, Ctx, lines, produce_child, read_back, record_produce, setup, wait_for_acks
from chaos.visibility_rounds import read_committed_reader, stop_readers_cut_power_and_expire
from kstream import Admin, NewTopic

SINK_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sink_child.py")
TXN_TIMEOUT_MS = 5000  # above a task child's start-up (it imports pyspark)
_CHILD_S = 60


def _spawn(ctx: Ctx, *args: str) -> subprocess.Popen:
    err = open(os.path.join(ctx.work, f"child-{len(ctx.children)}.err"), "wb")
    child = subprocess.Popen([sys.executable, SINK_CHILD, args[0], ctx.cluster, TOPIC, *args[1:]],
                             stdout=subprocess.PIPE, stderr=err, env=ctx.env(), cwd=ctx.work)
    err.close()
    ctx.children.append(child)
    return child


def _spellings(ctx: Ctx, checkpoint: str) -> list[str]:
    """Ways Spark users write one checkpoint (children run in ``ctx.work``)."""
    return [checkpoint, f"file://{checkpoint}", f"file:{checkpoint}", checkpoint + "/",
            os.path.join(ctx.work, ".", os.path.basename(checkpoint)), os.path.relpath(checkpoint, ctx.work)]


def _new_query(checkpoint: str, query_id: str) -> None:
    """Spark starting a query on a fresh checkpoint: the old one is gone, metadata holds the new id."""
    shutil.rmtree(checkpoint, ignore_errors=True)
    os.makedirs(checkpoint)
    with open(os.path.join(checkpoint, "metadata"), "w") as f:
        f.write(json.dumps({"id": query_id}) + "\n")


def _tasks(ctx: Ctx, checkpoint: str, rows: list[list]) -> list[list]:
    """Run the batch's tasks (1-2 attempts' worth of rows each); their commit messages."""
    split = ctx.rng.randint(0, len(rows))
    parts = [part for part in (rows[:split], rows[split:]) if part]
    children = [_spawn(ctx, "task", ctx.rng.choice(_spellings(ctx, checkpoint)), json.dumps(part)) for part in parts]
    messages = []
    for child in children:
        out = lines(child, _CHILD_S)
        if not out or not out[-1].startswith("T "):
            raise RuntimeError(f"a sink task failed: {out[-1:]}")
        _, sink_id, producer_id, partitions, records = out[-1].split(" ")
        messages.append([sink_id, int(producer_id), json.loads(partitions), int(records)])
    return messages


def _commit(ctx: Ctx, checkpoint: str, batch: int, messages: list[list], kill: bool) -> bool:
    """The driver commits; with ``kill`` it is SIGKILLed at a seeded moment. True if it said so."""
    child = _spawn(ctx, "commit", ctx.rng.choice(_spellings(ctx, checkpoint)), str(batch), json.dumps(messages))
    if kill:
        time.sleep(ctx.rng.uniform(0, 0.25))
        child.kill()
    out = lines(child, _CHILD_S)
    if out and out[-1].startswith("E "):
        ctx.history.round_problems.append(f"batch {batch}: the commit was refused: {out[-1][:200]}")
    return bool(out) and out[-1] == "C"


def _run_batch(ctx: Ctx, checkpoint: str, batch: int, rows: list[list]) -> None:
    """One micro-batch as Spark runs it, with a seeded crash: none, the driver killed mid-commit,
    or a crash after the sink's commit and before Spark's (the batch replays on restart)."""
    fault = ctx.rng.choice(("none", "kill", "replay"))
    done = _commit(ctx, checkpoint, batch, _tasks(ctx, checkpoint, rows), kill=fault == "kill")
    if fault != "none" or not done:  # Spark restarts and runs the batch again: same rows, new attempts
        if not _commit(ctx, checkpoint, batch, _tasks(ctx, checkpoint, rows), kill=False):
            ctx.history.round_problems.append(f"the replay of batch {batch} did not commit")


def _setup(ctx: Ctx) -> None:
    ctx.partitions = 3
    ctx.cluster = os.path.join(ctx.work, "cluster")
    with Admin({"cluster": ctx.cluster, "transaction.max.timeout.ms": TXN_TIMEOUT_MS}) as admin:
        admin.create_topics([NewTopic(TOPIC, ctx.partitions, 1, config={"segment.bytes": "8192"})])[TOPIC].result()
        ctx.log_dirs = list(admin.cluster.log_dir_paths().values())


def queries_round(ctx: Ctx, reuse: bool) -> None:
    _setup(ctx)
    rng = ctx.rng
    checkpoint = os.path.join(ctx.work, "ck")
    expected: list[bytes] = []
    for q in range(rng.randint(2, 3) if reuse else 1):
        _new_query(checkpoint, str(uuid.UUID(int=rng.getrandbits(128), version=4)))
        for batch in range(rng.randint(1, 3) if reuse else rng.randint(3, 5)):
            rows = [[f"q{q}-b{batch}-{i}", rng.randrange(ctx.partitions)] for i in range(rng.randint(4, 20))]
            _run_batch(ctx, checkpoint, batch, rows)
            expected.extend(r[0].encode() for r in rows)
    read_back(ctx)  # (each batch's last commit aborted what its killed attempts left open)
    h = ctx.history
    h.eos_input = expected
    h.eos_output = [value for p in range(ctx.partitions) for _, value in h.final.get((TOPIC, p), [])]
    h.final_uncommitted = {}  # a replay's aborted rows repeat values there, by design


# -- sink_beside_acks_all_power_cut ----------------------------------------------------------------


def beside_acks_all_round(ctx: Ctx) -> None:
    rf = ctx.rng.choice((1, 3))
    setup(ctx, rf=rf, min_isr=2 if rf == 3 else 1, journal=True, txn_timeout_ms=TXN_TIMEOUT_MS)
    checkpoint = os.path.join(ctx.work, "ck")
    _new_query(checkpoint, str(uuid.UUID(int=ctx.rng.getrandbits(128), version=4)))
    producer = produce_child(ctx, "w", 100000, rate=2000)
    stop = threading.Event()
    readers = [threading.Thread(target=read_committed_reader, args=(ctx, p, stop), daemon=True)
               for p in range(ctx.partitions)]
    for thread in readers:
        thread.start()
    wait_for_acks(producer, 0.05)
    batches: list[tuple[list[bytes], bool]] = []
    deadline = time.monotonic() + ctx.rng.uniform(0.3, 1.5)
    batch = 0
    while time.monotonic() < deadline:
        rows = [[f"s{batch}-{i}", ctx.rng.randrange(ctx.partitions)] for i in range(ctx.rng.randint(2, 12))]
        done = _commit(ctx, checkpoint, batch, _tasks(ctx, checkpoint, rows), kill=False)
        batches.append(([r[0].encode() for r in rows], done))
        batch += 1
    producer.kill()  # mid-write: its last frames are written, some not yet fsynced
    record_produce(ctx, lines(producer))
    stop_readers_cut_power_and_expire(ctx, readers, stop, TXN_TIMEOUT_MS)
    h = ctx.history
    for values, done in batches:
        (h.committed_txns if done else h.unknown_txns).append(values)
