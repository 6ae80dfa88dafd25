"""Fault classes of consumer groups and the exactly-once sink (issue 10: zombies).

``sigstop_group_member``: 2-3 group members (child processes, :mod:`chaos.group_child`)
consume with commit-after-process; one is SIGSTOPped at a seeded moment (or stops
itself in the middle of an offset commit), stays stopped past session.timeout.ms and
is SIGCONTed. Checked: the others rebalance within session.timeout.ms + a margin and
take its partitions over; its resumed commit is refused (a commit of its old member
id never lands after it was expired); it rejoins and every member leaves cleanly;
committed offsets never go back across the Delta table's versions; every record
below the final committed offset was delivered to some member.

``zombie_sink_attempt``: exactly-once Spark output without Spark. Two attempts of a
micro-batch's task write the same rows (a seeded multiset) through the sink's
task-attempt classes, as sink/writer.py's ``write_task`` does; the driver commits
one. The other (the zombie) is paused (sometimes SIGSTOPped) part-way and goes on
appending after the commit, to partitions it wrote and to new ones, or is SIGKILLed
mid-write; some rounds replay the batch after a driver crash (after the commit, or
SIGKILL in the middle of it). Checked: read_committed output is exactly the input
multiset; the zombie's appends after the commit are refused; no open transaction
holds an LSO once every attempt stopped and transaction.timeout.ms passed.

A SIGSTOP lands where the process holds no partition or group lock (between
appends, inside the slow Delta write of a commit, or at a random moment of a
member that spends its time polling): a process stopped while it holds a flock
stops that partition's or group's writers like a stopped broker would.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos.checker import Ack, History
from chaos.harness import TOPIC, Ctx, read_back, wait_line
from chaos.harness import lines as child_lines
from kstream import Admin, NewTopic, Producer
from kstream.errors import FencedError
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.sink import SinkStore, TaskWrites

GROUP_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "group_child.py")
GROUP = "g"
SESSION_MS = 1500
REBALANCE_MARGIN_S = 6.0
TXN_TIMEOUT_MS = 2000


def _setup(ctx: Ctx, partitions: int, txn_timeout_ms: int = 1000) -> None:
    ctx.partitions = partitions
    ctx.cluster = os.path.join(ctx.work, "cluster")
    with Admin({"cluster": ctx.cluster, "transaction.max.timeout.ms": txn_timeout_ms}) as admin:
        admin.create_topics([NewTopic(TOPIC, partitions, 1, config={"segment.bytes": "8192"})])[TOPIC].result()
        ctx.log_dirs = list(admin.cluster.log_dir_paths().values())


def _spawn(ctx: Ctx, *args: str, stdin: bool = False) -> subprocess.Popen:
    err = open(os.path.join(ctx.work, f"child-{len(ctx.children)}.err"), "wb")
    child = subprocess.Popen([sys.executable, GROUP_CHILD, args[0], ctx.cluster, *args[1:]],
                             stdout=subprocess.PIPE, stderr=err, env=ctx.env(),
                             stdin=subprocess.PIPE if stdin else subprocess.DEVNULL)
    err.close()
    ctx.children.append(child)
    return child


def _wait(condition: Callable[[], bool], seconds: float, tick: Callable[[], None] | None = None) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if tick is not None:
            tick()
        if condition():
            return True
        time.sleep(0.05)
    return False


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def _read_lines(path: str) -> list[str]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().split("\n")[:-1]


# -- sigstop_group_member ---------------------------------------------------------------------


def sigstop_group_member_round(ctx: Ctx) -> None:
    _setup(ctx, partitions=4)
    h = ctx.history
    producer = Producer({"cluster": ctx.cluster, "acks": "all", "linger.ms": 0})
    produced = [0]

    def produce(count: int = 8) -> None:
        for _ in range(count):
            value = f"r-{produced[0]}".encode()
            producer.produce(TOPIC, value, partition=produced[0] % ctx.partitions,
                             on_delivery=functools.partial(_report, h, value))
            produced[0] += 1
        producer.flush()

    groups = ConsumerGroups(Cluster.open(ctx.cluster))
    coordinator = groups.coordinator
    try:
        produce(40)
        count = ctx.rng.choice((2, 3))
        outs = [os.path.join(ctx.work, f"member-{i}.out") for i in range(count)]
        flags = [os.path.join(ctx.work, f"member-{i}.pause") for i in range(count)]
        members = [_spawn(ctx, "member", GROUP, TOPIC, outs[i], f"m{i}", flags[i], str(SESSION_MS))
                   for i in range(count)]

        def stable(n: int, without: str | None = None) -> bool:
            group = coordinator.describe(GROUP)
            return (group is not None and group.state == "Stable" and len(group.members) == n
                    and all(m.member_id != without for m in group.members)
                    and sum(len(m.assignment) for m in group.members) == ctx.partitions)

        def working() -> bool:
            return stable(count) and all(any(x.startswith("R ") for x in _read_lines(o)) for o in outs)

        if not _wait(working, 40, lambda: produce(4)):
            raise RuntimeError(f"the {count} members never all consumed in a stable group")
        victim = ctx.rng.randrange(count)
        group = coordinator.describe(GROUP)
        assert group is not None
        old_id = next(m.member_id for m in group.members if m.pid == members[victim].pid)
        mid_commit = ctx.rng.random() < 0.5
        if mid_commit:  # it stops itself inside its next write to the offsets table
            open(flags[victim], "w").close()
            if not _wait(lambda: "paused" in _read_lines(outs[victim]) and _stopped(members[victim].pid),
                         20, lambda: produce(2)):
                raise RuntimeError("the member never paused mid-commit")
        else:
            _wait(lambda: False, ctx.rng.uniform(0, 0.6), lambda: produce(1))
            members[victim].send_signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        # The group: the others expire it and take its partitions over in time.
        if not _wait(lambda: stable(count - 1, without=old_id), SESSION_MS / 1000 + REBALANCE_MARGIN_S):
            h.round_problems.append(f"the group did not rebalance within session.timeout.ms + "
                                    f"{REBALANCE_MARGIN_S}s of member {old_id} stopping "
                                    f"({'mid-commit' if mid_commit else 'anywhere'}): {coordinator.describe(GROUP)}")
        rebalanced = time.monotonic() - stopped_at
        if rebalanced < SESSION_MS / 1000 * 0.9:
            h.round_problems.append(f"member {old_id} was expired {rebalanced:.2f}s after it stopped, "
                                    f"before session.timeout.ms")
        expired_version = groups.table.version()
        produce(16)
        if not _wait(lambda: _all_committed(groups, ctx), 20, lambda: produce(0)):
            h.round_problems.append("the remaining members did not commit everything while one was stopped")
        _wait(lambda: False, ctx.rng.uniform(0, 0.8))  # stays stopped a little longer
        members[victim].send_signal(signal.SIGCONT)
        if mid_commit and not _wait(lambda: any(x.startswith(f"F {old_id}") for x in _read_lines(outs[victim])), 15):
            h.round_problems.append(f"member {old_id}'s commit resumed after it was expired was not fenced")
        produce(16)
        if not _wait(lambda: stable(count) and _all_committed(groups, ctx), 30, lambda: produce(0)):
            h.round_problems.append(f"after SIGCONT, the group did not get back to {count} members "
                                    f"with everything committed: {coordinator.describe(GROUP)}")
        for child in members:
            child.send_signal(signal.SIGTERM)
        for i, child in enumerate(members):
            try:
                code = child.wait(30)
            except subprocess.TimeoutExpired:
                code = None
            if code != 0 or _read_lines(outs[i])[-1:] != ["EXIT"]:
                h.round_problems.append(f"member {i} did not leave cleanly (exit {code}); see {ctx.work}")
        _check_group(ctx, groups, outs, old_id, expired_version)
    finally:
        producer.close()
        groups.close()
        groups.cluster.close()
    read_back(ctx)


def _report(h: History, value: bytes, err, msg) -> None:
    if err is None:
        h.acked.append(Ack(TOPIC, msg.partition(), msg.offset(), value))
    else:
        h.write_errors.append(f"produce failed: {str(err)[:200]}")


def _all_committed(groups: ConsumerGroups, ctx: Ctx) -> bool:
    committed = groups.committed(GROUP)
    return all(committed.get((TOPIC, p)) is not None and committed[(TOPIC, p)].offset == groups.ends(TOPIC, p)[1]
               for p in range(ctx.partitions))


def _check_group(ctx: Ctx, groups: ConsumerGroups, outs: list[str], old_id: str, expired_version: int) -> None:
    """The table's history: offsets never go back, no commit of the expired member lands after
    its expiry; every record below the final committed offset was handed to some member."""
    h = ctx.history
    previous: dict[tuple[str, int], tuple[int, str | None]] = {}
    for version in range(groups.table.version() + 1):
        rows = groups.committed(GROUP, version=version)
        for (topic, partition), row in sorted(rows.items()):
            h.group_offsets.setdefault((GROUP, topic, partition), []).append(row.offset)
            if version > expired_version and row.member_id == old_id \
                    and previous.get((topic, partition)) != (row.offset, row.member_id):
                h.round_problems.append(f"a commit of expired member {old_id} landed at table version "
                                        f"{version}: {topic}-{partition} -> {row.offset}")
            previous[(topic, partition)] = (row.offset, row.member_id)
    delivered = set()
    for out in outs:
        for line in _read_lines(out):
            parts = line.split(" ")
            if parts[0] == "R" and len(parts) == 5:
                delivered.add((int(parts[2]), int(parts[3])))
    final = groups.committed(GROUP)
    for ack in h.acked:
        row = final.get((ack.topic, ack.partition))
        if row is not None and ack.offset < row.offset and (ack.partition, ack.offset) not in delivered:
            h.undelivered.append(f"{ack.value!r} at {ack.topic}-{ack.partition}@{ack.offset}")


# -- zombie_sink_attempt ----------------------------------------------------------------------


def zombie_sink_attempt_round(ctx: Ctx) -> None:
    _setup(ctx, partitions=3, txn_timeout_ms=TXN_TIMEOUT_MS)
    h, rng = ctx.history, ctx.rng
    sink_id = f"stream:{ctx.work}/checkpoint"
    batch = rng.randrange(6)
    tasks = []
    for _ in range(rng.choice((1, 1, 2))):  # a task's rows, by partition (as Spark's would be sorted)
        n = rng.randint(6, 24)
        rows = sorted(([f"v{rng.randrange(max(2, n // 2))}", rng.randrange(ctx.partitions)] for _ in range(n)),
                      key=lambda r: r[1])
        tasks.append(rows)
    h.eos_input = [v.encode() for rows in tasks for v, _ in rows]
    zombie_mode = rng.choice(("slow", "sigstop", "sigkill"))
    crash = rng.choice((None, None, "after", "mid"))
    zombies, winners = [], []
    for t, rows in enumerate(tasks):
        path = os.path.join(ctx.work, f"task-{t}.json")
        with open(path, "w") as f:
            json.dump(rows, f)
        pause_at = rng.randrange(len(rows))  # 0: every zombie append comes after the commit
        zombie = _spawn(ctx, "sink", sink_id, TOPIC, path, str(pause_at), stdin=True)
        if not wait_line(zombie, "P", 30):
            raise RuntimeError(f"the zombie attempt of task {t} never reached its pause")
        zombies.append(zombie)
        winners.append(_spawn(ctx, "sink", sink_id, TOPIC, path, "-1"))
    if zombie_mode == "sigstop":
        for zombie in zombies:
            zombie.send_signal(signal.SIGSTOP)
    elif zombie_mode == "sigkill":  # mid-write: at its pause or a moment after it woke
        for zombie in zombies:
            if rng.random() < 0.5:
                _wake(zombie)
                time.sleep(rng.uniform(0, 0.02))
            zombie.kill()
    writes = [_task_writes(ctx, w) for w in winners]
    if crash == "mid":  # the driver dies somewhere in its commit; the next one replays the batch
        driver = _spawn(ctx, "commit", sink_id, str(batch), json.dumps(
            [[w.producer_id, [list(p) for p in w.partitions], w.records] for w in writes]), stdin=True)
        if not wait_line(driver, "R", 30):
            raise RuntimeError("the driver never got ready")
        assert driver.stdin is not None
        driver.stdin.write(b"go\n")
        driver.stdin.flush()
        time.sleep(rng.uniform(0, 0.06))
        driver.kill()
        child_lines(driver)
    else:
        _commit(ctx, sink_id, batch, writes, tasks)
    for zombie in zombies:  # the zombie goes on after the commit, on old and new partitions
        if zombie.poll() is None:
            zombie.send_signal(signal.SIGCONT)
            _wake(zombie)
    if crash is not None:  # Spark runs the batch again and commits it again: nothing twice
        _commit(ctx, sink_id, batch, [_task_writes(ctx, _spawn(ctx, "sink", sink_id, TOPIC,
                                                                os.path.join(ctx.work, f"task-{t}.json"), "-1"))
                                      for t in range(len(tasks))], tasks, replay=True if crash == "after" else None)
    for zombie in zombies:
        out = child_lines(zombie)
        # (After a driver that died mid-commit the zombie may finish first: its writes are then
        # orphans the replay's commit aborts, which the output check covers.)
        if zombie_mode != "sigkill" and crash != "mid" and not any(x.startswith("F ") for x in out):
            h.round_problems.append(f"a zombie attempt appended after its batch was committed ({out[-1:]})")
    # Every attempt has stopped; once transaction.timeout.ms passed, readers end what is left open.
    time.sleep(TXN_TIMEOUT_MS / 1000 + 0.2)
    read_back(ctx)
    h.eos_output = [value for p in range(ctx.partitions) for _, value in h.final.get((TOPIC, p), [])]
    h.final, h.final_uncommitted = {}, {}  # the input repeats values: compared as a multiset above


def _wake(zombie: subprocess.Popen) -> None:
    assert zombie.stdin is not None
    zombie.stdin.write(b"go\n")
    zombie.stdin.flush()


def _task_writes(ctx: Ctx, attempt: subprocess.Popen) -> TaskWrites:
    """The commit message of an attempt that ran to its end."""
    out = child_lines(attempt)
    done = [x.split(" ") for x in out if x.startswith("D ")]
    if not done:
        raise RuntimeError(f"a task attempt did not finish: {out[-2:]}")
    _, producer_id, partitions, records = done[0]
    return TaskWrites(int(producer_id), tuple(tuple(p) for p in json.loads(partitions)), int(records))


def _commit(ctx: Ctx, sink_id: str, batch: int, writes: list[TaskWrites], tasks: list[list],
            replay: bool | None = None) -> None:
    """The driver commits the batch (in this process); a commit refused because the attempts'
    writes outlived transaction.timeout.ms (a slow machine) runs the batch again, as a
    restarted query would. ``replay``: whether the batch must already be committed."""
    cluster = Cluster.open(ctx.cluster)
    try:
        for _ in range(3):
            try:
                committed = SinkStore(cluster).commit(sink_id, batch, writes)
            except FencedError:
                writes = [_task_writes(ctx, _spawn(ctx, "sink", sink_id, TOPIC,
                                                   os.path.join(ctx.work, f"task-{t}.json"), "-1"))
                          for t in range(len(tasks))]
                continue
            if replay is not None and committed == replay:
                ctx.history.round_problems.append(
                    f"the replay of batch {batch} " + ("committed again" if replay else "was refused")
                    + " although the batch was " + ("committed" if replay else "not committed") + " before")
            return
        raise RuntimeError("the batch timed out three times in a row")
    finally:
        cluster.close()

