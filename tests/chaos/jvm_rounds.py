"""Fault classes of the Java writer (issue 22): the chaos harness drives io.kstream.spark's
sink protocol (txn.SinkTaskWriter, txn.SinkCommitter) and its append path.

``jvm_sink_power_cut``: a Java sink (tasks and driver of the exactly-once protocol in one JVM,
``SinkChaosProbe``: micro-batches of 2-12 records on seeded partitions, 1-2 task attempts each
on threads of their own, then the commit) and a Python acks=all producer write the same
partitions of an RF=1 topic while read_committed readers record what they see; both writers are
SIGKILLed at a seeded moment (mid-task, mid-commit, between batches) and the power is cut through
the fsync journal, which the JVM records into as Python does (io.kstream.spark.format.PowerJournal).
After the transaction timeout Python's expiry ends what the dead writers left (a commit the cut
rolled back to Committing is rolled forward, open task writes aborted). Checked: every batch
whose commit returned is all there, a batch whose commit did not return is all or nothing,
every acknowledged producer record is there, offsets contiguous, nothing a reader saw is gone.

``jvm_stalled_attempt``, ``jvm_sink_sigkill``, ``jvm_two_queries``, ``jvm_speculation``: below, at
their rounds. Results so far (docs/RELIABILITY.md, issue 22): jvm_sink_power_cut 20 rounds,
jvm_stalled_attempt 20, jvm_sink_sigkill 9, jvm_two_queries 7, jvm_speculation 5; 0 failed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos.harness import TOPIC, Ctx, lines, produce_child, read_back, record_produce, setup, wait_for_acks, wait_line
from chaos.visibility_rounds import read_committed_reader, stop_readers_cut_power_and_expire
from kstream import Admin

TXN_TIMEOUT_MS = 5000  # above a JVM's start-up and a loaded machine's task write
JAVA_OPTIONS = ("--add-opens=java.base/java.nio=ALL-UNNAMED",     # Arrow's memory
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED")   # uninterruptible channels; the journal's fds
_JAVA_START_S = 120  # the first round compiles the probe (javac with Spark's jars: 5-10 s, more when loaded)
_READER_STOP_S = 10


def java_child(ctx: Ctx, probe_path: str, *args: str, stdin: int | None = None) -> subprocess.Popen:
    """A JVM running a probe of jvm/src/test against the kstream jar, with the round's env (journal)."""
    from java_probes import SPARK_JARS, probe_command  # imports pyspark: only when a JVM class runs
    from kstream.jars import jar_path

    jar = jar_path()
    if jar is None:
        raise RuntimeError("no kstream jar: build it (make jar) before the JVM classes")
    command = probe_command(probe_path, *args, classpath=[jar, SPARK_JARS], java_options=JAVA_OPTIONS)
    err = open(os.path.join(ctx.work, f"child-{len(ctx.children)}.err"), "wb")
    child = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE, stderr=err, env=ctx.env(), cwd=ctx.work)
    err.close()
    ctx.children.append(child)
    return child


def record_batches(ctx: Ctx, output: list[str]) -> None:
    """A Java sink's "B batch values" / "C batch" lines: committed, or unknown (all or nothing)."""
    begun: dict[str, list[bytes]] = {}
    for line in output:
        parts = line.split(" ", 2)
        if parts[0] == "B" and len(parts) == 3:
            begun[parts[1]] = [v.encode() for v in parts[2].split(",")]
        elif parts[0] == "C" and len(parts) == 2:
            ctx.history.committed_txns.append(begun.pop(parts[1]))
        elif parts[0] == "E":
            ctx.history.round_problems.append(f"the Java sink failed: {line[:300]}")
    ctx.history.unknown_txns.extend(begun.values())


def jvm_sink_power_cut_round(ctx: Ctx) -> None:
    from java_probes import probe

    ctx.partitions = 3
    setup(ctx, rf=1, journal=True, txn_timeout_ms=TXN_TIMEOUT_MS)
    sink = f"query:{uuid.UUID(int=ctx.rng.getrandbits(128), version=4)}"
    java = java_child(ctx, probe("txn/SinkChaosProbe.java"), "loop", ctx.cluster, TOPIC, str(ctx.partitions),
                      sink, str(ctx.seed), "100000")
    if not wait_line(java, "B ", _JAVA_START_S):
        raise RuntimeError(f"the Java sink never started a batch (see {ctx.work}/child-0.err)")
    producer = produce_child(ctx, "w", 100000, rate=2000)
    stop = threading.Event()
    readers = [threading.Thread(target=read_committed_reader, args=(ctx, p, stop), daemon=True)
               for p in range(ctx.partitions)]
    for thread in readers:
        thread.start()
    wait_for_acks(producer, 0)
    if not wait_line(java, "C ", _JAVA_START_S):  # a loaded machine: the JVM's first batch may be slow
        raise RuntimeError(f"the Java sink never committed a batch (see {ctx.work}/child-0.err)")
    time.sleep(ctx.rng.uniform(0, 2.5))
    victims = [java, producer]
    ctx.rng.shuffle(victims)
    for victim in victims:  # both mid-write: frames written, some not yet fsynced, a commit half done
        victim.kill()
    record_produce(ctx, lines(producer))
    record_batches(ctx, lines(java, work=ctx.work))
    # (The Java writer runs no expiry, docs/JVM_WRITER.md: Python's ends what the dead sink left.)
    stop_readers_cut_power_and_expire(ctx, readers, stop, TXN_TIMEOUT_MS, _READER_STOP_S)
    if not ctx.history.committed_txns:
        ctx.history.round_problems.append("no Java batch committed before the kill: the round tested nothing")


# -- real streaming queries (a child process with its own Spark session) --------------------------

QUERY_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "query_child.py")
QUERY_TXN_TIMEOUT_MS = 120_000  # a Spark task's write on a loaded machine stays well inside it
SOURCE_RECORDS = 240
MAX_OFFSETS_PER_TRIGGER = 30  # about 8 micro-batches per query: a kill lands mid-batch or mid-commit
# A kill lands 0.3-3.5 s after the queries started: their ~8 micro-batches take 2-8 s here, so
# most kills land mid-run (0.5-8 s, the first window, let a third land after the end).
KILL_AFTER_S = (0.3, 3.5)
_SPARK_START_S = 300  # a session's start on a machine five engineers share
_QUERY_DONE_S = 600


def _query_cluster(ctx: Ctx, sources: list[str]) -> dict[str, list[bytes]]:
    """The round's cluster: output topic ``t`` (2 partitions) and the source topics, filled."""
    from kstream import NewTopic, Producer

    ctx.partitions = 2
    ctx.cluster = os.path.join(ctx.work, "cluster")
    with Admin({"cluster": ctx.cluster, "transaction.max.timeout.ms": QUERY_TXN_TIMEOUT_MS}) as admin:
        topics = [NewTopic(TOPIC, ctx.partitions, 1), *(NewTopic(s, 2, 1) for s in sources)]
        for future in admin.create_topics(topics).values():
            future.result()
        ctx.log_dirs = list(admin.cluster.log_dir_paths().values())
    values = {s: [f"{s}-{i}".encode() for i in range(SOURCE_RECORDS)] for s in sources}
    with Producer({"cluster": ctx.cluster, "acks": "all"}) as producer:
        for s, records in values.items():
            for i, value in enumerate(records):
                producer.produce(s, value, partition=i % 2)
        producer.flush()
    return values


def _spawn_query(ctx: Ctx, spec: dict) -> subprocess.Popen:
    err = open(os.path.join(ctx.work, f"child-{len(ctx.children)}.err"), "wb")
    child = subprocess.Popen([sys.executable, QUERY_CHILD, "run", ctx.cluster, json.dumps(spec)],
                             stdout=subprocess.PIPE, stderr=err, env=ctx.env(), cwd=ctx.work)
    err.close()
    ctx.children.append(child)
    return child


def run_queries_with_kills(ctx: Ctx, spec: dict, kills: int, kill_after_s: tuple[float, float]) -> list[str]:
    """Run the queries, SIGKILLing their process ``kills`` times at seeded moments after they
    started (each restart resumes from the checkpoints), then once more to the end; what each
    run printed, and a note per kill that landed before the end."""
    notes = []
    for k in range(kills):
        child = _spawn_query(ctx, spec)
        if not wait_line(child, "S", _SPARK_START_S):
            raise RuntimeError(f"the queries never started (see {ctx.work}/child-{len(ctx.children) - 1}.err)")
        time.sleep(ctx.rng.uniform(*kill_after_s))
        alive = child.poll() is None
        child.kill()
        out = lines(child, 60)
        batches = sum(1 for line in out if line.startswith("P "))
        notes.append(f"kill {k}: {'mid-run' if alive and 'DONE' not in out else 'after the end'}, "
                     f"{batches} batches reported")
        if "DONE" in out:
            return notes
    child = _spawn_query(ctx, spec)
    out = lines(child, _SPARK_START_S + _QUERY_DONE_S)
    if "DONE" not in out:
        ctx.history.round_problems.append(f"the last run did not finish: {out[-1:]} "
                                          f"(see {ctx.work}/child-{len(ctx.children) - 1}.err)")
    return notes


def _check_exactly_once(ctx: Ctx, inputs: dict[str, list[bytes]], notes: list[str]) -> None:
    read_back(ctx)
    h = ctx.history
    h.eos_input = [v for values in inputs.values() for v in values]
    h.eos_output = [value for p in range(ctx.partitions) for _, value in h.final.get((TOPIC, p), [])]
    h.final_uncommitted = {}  # a killed attempt's aborted rows repeat values there, by design
    with open(os.path.join(ctx.work, "kills.txt"), "w") as f:
        f.write("\n".join(notes) + "\n")
    print(f"  seed {ctx.seed}: " + "; ".join(notes), flush=True)  # where the faults landed, in the run's log


def _query(ctx: Ctx, name: str, source: str, writer: str, **more) -> dict:
    return {"name": name, "source": source, "sink": TOPIC, "writer": writer,
            "checkpoint": os.path.join(ctx.work, f"ck-{name}"), "max_offsets": MAX_OFFSETS_PER_TRIGGER, **more}


def jvm_sink_sigkill_round(ctx: Ctx) -> None:
    """A streaming query kstream -> kstream with writer=jvm, SIGKILLed 1-3 times at seeded moments
    (mid-batch, mid-commit) and restarted from its checkpoint until done: output == input."""
    inputs = _query_cluster(ctx, ["in0"])
    spec = {"queries": [_query(ctx, "q0", "in0", "jvm")]}
    notes = run_queries_with_kills(ctx, spec, ctx.rng.randint(1, 3), KILL_AFTER_S)
    _check_exactly_once(ctx, inputs, notes)


def jvm_two_queries_round(ctx: Ctx) -> None:
    """Two streaming queries (writer=jvm, the second jvm or python by the seed) writing one topic
    from sources of their own, killed together and restarted 1-2 times: each query's output
    exactly once, offsets contiguous, every frame one writer's (the checker's frame walk)."""
    inputs = _query_cluster(ctx, ["in0", "in1"])
    spec = {"queries": [_query(ctx, "q0", "in0", "jvm"), _query(ctx, "q1", "in1", ctx.rng.choice(("jvm", "python")))]}
    notes = run_queries_with_kills(ctx, spec, ctx.rng.randint(1, 2), KILL_AFTER_S)
    _check_exactly_once(ctx, inputs, notes)


# -- a stalled task attempt (a speculative copy's loser, a paused executor) ------------------------

STALL_TXN_TIMEOUT_MS = 600_000  # the zombie is fenced by the commit, never by a timeout


def jvm_stalled_attempt_round(ctx: Ctx) -> None:
    """Per batch (1-3), a Java task attempt is SIGSTOPped after a seeded number of its appends
    (one frame per record), between two appends (inside one it holds the partition lock and every
    writer of the partition waits for it: a paused lock holder is not fenceable); a second
    attempt of the same task (a speculative copy: the same records) runs to its end, the Java
    driver commits the batch with the copy's message, then the first attempt is woken (SIGCONT).
    It must be refused at its next append (FencedError) and nothing it wrote may be visible:
    read_committed output == the batches' records once each, nothing a read_committed reader saw
    during the round gone."""
    from java_probes import probe

    source = probe("txn/SinkChaosProbe.java")
    ctx.partitions = 2
    setup(ctx, rf=1, txn_timeout_ms=STALL_TXN_TIMEOUT_MS)
    sink = f"query:{uuid.UUID(int=ctx.rng.getrandbits(128), version=4)}"
    stop = threading.Event()
    readers = [threading.Thread(target=read_committed_reader, args=(ctx, p, stop), daemon=True)
               for p in range(ctx.partitions)]
    for thread in readers:
        thread.start()
    expected: list[bytes] = []
    h = ctx.history
    try:
        for batch in range(ctx.rng.randint(1, 3)):
            rows = [[f"b{batch}-{i}", ctx.rng.randrange(ctx.partitions)] for i in range(ctx.rng.randint(4, 16))]
            expected.extend(r[0].encode() for r in rows)
            rows_json = json.dumps(rows)
            stall = ctx.rng.randint(0, len(rows))  # 0: before its first frame; len(rows): after its last
            zombie = java_child(ctx, source, "attempt", ctx.cluster, TOPIC, sink, str(batch), rows_json, str(stall),
                                stdin=subprocess.PIPE)
            if not wait_line(zombie, "W", _JAVA_START_S):
                raise RuntimeError(f"batch {batch}: the first attempt never reached its stall")
            zombie.send_signal(signal.SIGSTOP)  # paused outside the partition lock (inside, it would stop every writer)
            copy = java_child(ctx, source, "attempt", ctx.cluster, TOPIC, sink, str(batch), rows_json, "-1")
            out = lines(copy, _JAVA_START_S, work=ctx.work)
            if not out or not out[-1].startswith("T "):
                raise RuntimeError(f"batch {batch}: the copy failed: {out[-1:]}")
            commit = java_child(ctx, source, "commit", ctx.cluster, sink, str(batch), out[-1][2:])
            done = lines(commit, _JAVA_START_S, work=ctx.work)
            if done[-1:] != ["C"]:
                raise RuntimeError(f"batch {batch}: the commit said {done[-1:]}")
            zombie.send_signal(signal.SIGCONT)
            assert zombie.stdin is not None
            zombie.stdin.write(b"go\n")
            zombie.stdin.flush()
            woke = lines(zombie, _JAVA_START_S, work=ctx.work)
            after = woke[woke.index("W") + 1:]
            if stall < len(rows):
                if any(line.startswith("A ") for line in after):
                    h.round_problems.append(f"batch {batch}: the woken attempt appended after the commit: {after[:3]}")
                if not after or not after[-1].startswith("F ") or "FencedError" not in after[-1]:
                    h.round_problems.append(f"batch {batch}: the woken attempt was not fenced: {after[-2:]}")
    finally:
        stop.set()
        for thread in readers:
            thread.join(_READER_STOP_S)
    read_back(ctx)
    h.eos_input = expected
    h.eos_output = [value for p in range(ctx.partitions) for _, value in h.final.get((TOPIC, p), [])]
    h.final_uncommitted = {}  # the zombie's aborted frames repeat the copy's values, by design


# -- speculation in a real Spark job (a standalone cluster: executors on two hosts) ---------------

SPECULATION_CONF = {
    "spark.speculation": "true",
    "spark.speculation.interval": "100ms",
    "spark.speculation.quantile": "0.5",       # one of a batch's two tasks done
    "spark.speculation.multiplier": "1.5",
    "spark.speculation.minTaskRuntime": "200ms",
    "spark.cores.max": "2",
    "spark.executor.cores": "1",
    "spark.executor.memory": "512m",
}
STRAGGLER_MS = (2000, 5000)


def kill_an_executor(ctx: Ctx, workers: list[subprocess.Popen]) -> str:
    """SIGKILL the executor JVM of a worker (seeded) now, if it runs one; what was done."""
    worker = ctx.rng.choice(workers)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        if parent == worker.pid and b"CoarseGrainedExecutorBackend" in command:
            os.kill(int(entry), signal.SIGKILL)
            return f"executor {entry} of worker {worker.pid} SIGKILLed"
    return f"worker {worker.pid} ran no executor when the kill came"


def jvm_speculation_round(ctx: Ctx) -> None:
    """A streaming query (writer=jvm) on a standalone cluster (tests/chaos/standalone.py: two
    executors on two hosts) with spark.speculation on and tiny thresholds; in every micro-batch
    the first attempt of one partition's task (seeded) sleeps 2-5 s before its first row, after
    its writer registered: Spark runs a copy on the other executor, the copy's write is
    committed, the straggler is killed by Spark or writes late and is fenced. At a seeded moment
    0.5-8 s after the query started, one executor (seeded worker) is SIGKILLed: Spark runs its
    tasks again on the other or on the executor its worker starts anew. Output == input
    multiset; at least one copy must have run (else the round tested nothing)."""
    from chaos import standalone

    src = os.path.abspath(os.path.join(os.path.dirname(QUERY_CHILD), "..", "..", "src"))
    url, processes = standalone.start(ctx.work, src)
    try:
        inputs = _query_cluster(ctx, ["in0"])
        markers = os.path.join(ctx.work, "attempts")
        os.makedirs(markers)
        conf = {**SPECULATION_CONF, "spark.executorEnv.PYTHONPATH": src,
                "spark.executorEnv.PYSPARK_PYTHON": sys.executable}
        query = _query(ctx, "q0", "in0", "jvm", slow_first_attempt_ms=ctx.rng.randint(*STRAGGLER_MS),
                       slow_partition=ctx.rng.randrange(2), markers=markers)
        child = _spawn_query(ctx, {"master": url, "conf": conf, "queries": [query]})
        if not wait_line(child, "S", _SPARK_START_S):
            raise RuntimeError(f"the query never started (see {ctx.work}/child-{len(ctx.children) - 1}.err)")
        time.sleep(ctx.rng.uniform(0.5, 8.0))
        notes = [kill_an_executor(ctx, processes[1:])]
        out = lines(child, _QUERY_DONE_S)
        if "DONE" not in out:
            ctx.history.round_problems.append(f"the query did not finish: {out[-1:]} (see {ctx.work}/child-"
                                              f"{len(ctx.children) - 1}.err)")
        copies = sorted(name for name in os.listdir(markers) if not name.endswith("-a0"))
        notes.append(f"task attempts > 0 (speculative copies or retries): {copies}")
        if not copies:
            ctx.history.round_problems.append("no speculative copy ran: the round tested nothing")
        _check_exactly_once(ctx, inputs, notes)
    finally:
        standalone.stop(processes)
