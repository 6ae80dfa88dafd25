"""Fault class of the Real-time Mode sink (issue 22): ``rtm_sink_sigkill``.

A Python writer produces acks=all to the input topic ``t`` (2 partitions, about 40 records/s)
while a Real-time Mode query kstream -> kstream (``tests/chaos/rtm_child.py``: a Python driver
with a Spark session of its own, ``local[2]``, ``kstream.write_real_time``, 5 s batches) writes
one row per source record to topic ``out``. The query's process group (driver and Spark JVM) is
SIGKILLed 1-2 times at a seeded moment 0.5-14 s after it started (inside batch 0, at a batch's
end while Spark writes its offset and commit logs, or in a later batch) and started again on its
checkpoint; the last run goes on until ``out`` holds as many records as the writer acknowledged.
Checked: every acknowledged input record is in ``t`` (the harness's checks), and ``out`` is
exactly one record per input record, matched by source position (each output value is
"<source partition>:<source offset>:<value>"): nothing lost, nothing twice, nothing phantom.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos.harness import TOPIC, Ctx, lines, produce_child, read_back, record_produce, setup, wait_line
from kstream import Admin, Consumer, NewTopic, TopicPartition

RTM_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rtm_child.py")
OUT = "out"
TRIGGER = "5 seconds"  # Real-time Mode's shortest batch: the most batch ends (log writes) per second
RECORDS = (400, 800)
RATE = 40  # records/s: the query keeps up, and a kill lands with rows in flight
KILLS = (1, 2)
KILL_AFTER_S = (0.5, 14.0)  # batch 0 is the first 5 s of a run: a third of the kills land in it
SEGMENT_BYTES = 1 << 20
_SPARK_START_S = 300  # a session's start on a machine five engineers share
_DONE_S = 600
_READ_S = 60


def _spawn(ctx: Ctx, checkpoint: str, expect: int) -> subprocess.Popen:
    """The query child, in a process group of its own (the SIGKILL takes its Spark JVM too)."""
    err = open(os.path.join(ctx.work, f"child-{len(ctx.children)}.err"), "wb")
    child = subprocess.Popen([sys.executable, RTM_CHILD, "run", ctx.cluster, checkpoint, TOPIC, OUT, TRIGGER,
                              str(expect)], stdout=subprocess.PIPE, stderr=err, env=ctx.env(), cwd=ctx.work,
                             start_new_session=True)
    err.close()
    ctx.children.append(child)
    return child


def _kill(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def _logged(checkpoint: str, log: str) -> str:
    directory = os.path.join(checkpoint, log)
    names = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    batches = [n for n in names if n.isdigit()]
    torn = [n for n in names if n.endswith(".tmp")]
    return f"{log} {max(batches, key=int) if batches else '-'}" + (f" +{len(torn)} temp" if torn else "")


def _read_out(ctx: Ctx) -> list[bytes]:
    """Every record of ``out``, read_committed, up to its high watermarks."""
    consumer = Consumer({"cluster": ctx.cluster, "isolation.level": "read_committed"})
    values: list[bytes] = []
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(OUT, p))[1] for p in range(ctx.partitions)}
        consumer.assign([TopicPartition(OUT, p, 0) for p in ends])
        seen = {p: 0 for p in ends}
        deadline = time.monotonic() + _READ_S
        while any(seen[p] < ends[p] for p in ends):
            if time.monotonic() > deadline:
                ctx.history.round_problems.append(f"{OUT} not read to its HWs {ends} in {_READ_S} s: {seen}")
                break
            message = consumer.poll(0.2)
            if message is not None and message.offset() < ends[message.partition()]:
                values.append(message.value())
                seen[message.partition()] = message.offset() + 1
    finally:
        consumer.close()
    return values


def rtm_sink_sigkill_round(ctx: Ctx) -> None:
    ctx.partitions = 2
    setup(ctx, rf=1, segment_bytes=SEGMENT_BYTES)
    with Admin({"cluster": ctx.cluster}) as admin:
        admin.create_topics([NewTopic(OUT, ctx.partitions, 1, config={"segment.bytes": str(SEGMENT_BYTES)})])[
            OUT].result()
    checkpoint = os.path.join(ctx.work, "ck")
    count = ctx.rng.randint(*RECORDS)
    notes = []
    producer = None
    for k in range(ctx.rng.randint(*KILLS)):
        child = _spawn(ctx, checkpoint, 0)
        if not wait_line(child, "S", _SPARK_START_S):
            raise RuntimeError(f"the query never started (see {ctx.work}/child-{len(ctx.children) - 1}.err)")
        if producer is None:
            producer = produce_child(ctx, "a", count, "all", RATE)
        delay = ctx.rng.uniform(*KILL_AFTER_S)
        time.sleep(delay)
        alive = child.poll() is None
        _kill(child)
        out = lines(child, 60, work=ctx.work)
        ended = [line for line in out if line.startswith("P ")]
        notes.append(f"kill {k}: {delay:.1f} s after the start, {len(ended)} batches ended, "
                     f"{_logged(checkpoint, 'offsets')}, {_logged(checkpoint, 'commits')}"
                     + ("" if alive else " (the query had died: " + "; ".join(out[-1:]) + ")"))
        if not alive:
            ctx.history.round_problems.append(f"the query died before kill {k}: {out[-1:]}")
    assert producer is not None
    record_produce(ctx, lines(producer, count / RATE + _DONE_S, work=ctx.work))
    if len(ctx.history.acked) != count:
        ctx.history.round_problems.append(f"the writer acknowledged {len(ctx.history.acked)} of {count} records")
    child = _spawn(ctx, checkpoint, len(ctx.history.acked))
    out = lines(child, _SPARK_START_S + _DONE_S, work=ctx.work)
    if "DONE" not in out:
        ctx.history.round_problems.append(f"the last run did not finish: {out[-1:]} "
                                          f"(see {ctx.work}/child-{len(ctx.children) - 1}.err)")
    read_back(ctx)
    h = ctx.history
    h.eos_input = [f"{p}:{offset}:{value.decode()}".encode()
                   for p in range(ctx.partitions) for offset, value in h.final.get((TOPIC, p), [])]
    h.eos_output = _read_out(ctx)
    with open(os.path.join(ctx.work, "kills.txt"), "w") as f:
        f.write("\n".join(notes) + "\n")
    print(f"  seed {ctx.seed}: " + "; ".join(notes), flush=True)  # where the kills landed, in the run's log
