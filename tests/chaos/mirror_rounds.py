"""Fault classes of the mirror (issue 23): ``mirror_sigkill_in``, ``mirror_sigkill_out``,
``mirror_sigkill_out_eos``, ``mirror_broker_restart``, ``mirror_logdir_lost``.

The rounds need Apache Kafka: one broker (:class:`kstream.tools.perf.kafka_peer.KafkaPeer`,
``make kafka``'s jars or ``$KSTREAM_KAFKA_LIB``) started by the first mirror round of a run and
reused by the others (a start takes 10-30 s, not counted in the round's time); each round has
topics of its own (``mi<seed>-<random>``, ``mo<seed>-<random>``), a kstream cluster in its
directory, its own mirror name and group. They are not in the quick run (test_chaos_quick.py):
a broker's start alone is longer than a quick round; tests/mirror (marker ``kafka``) has a
SIGKILL round of each direction in ``make test``.

A round: a writer child on the source side (Kafka: tests/chaos/mirror_child.py, plain or in
committed and aborted transactions; kstream: tests/chaos/child.py's acks=all and transactional
writers) and the mirror as a child process, the CLI (``kstream mirror ... --chunk-records K``,
K seeded), continuous while the writer writes. Then the fault, at a seeded moment:

* ``mirror_sigkill_in`` (Kafka -> kstream) / ``mirror_sigkill_out`` (kstream -> Kafka): the
  mirror is SIGKILLed, 1-3 times (the later runs continuous or ``--until-end``, seeded);
  ``mirror_sigkill_out_eos``: the same into Kafka with ``--exactly-once`` (Kafka transactions),
  checked as into kstream: nothing duplicated in Kafka, translated offsets read nothing again;
* ``mirror_broker_restart`` (either direction, seeded): the Kafka broker is stopped (a controlled
  shutdown) for 0.5-3 s and started again on the same ports and data; the mirror rides it out
  or exits 1 with a clear ``error:`` line (never a traceback, never a hang);
* ``mirror_logdir_lost`` (Kafka -> kstream): the kstream cluster has three log dirs, the target
  topic and the offset syncs replication 3 (min ISR 2); one log dir is taken away (renamed,
  removed) under the mirror, which goes on or exits 1 with a clear error; every record a
  read_committed reader saw in the target before the loss is still there after it.

Once the writer is done, a consumer group commits seeded offsets on the source, and (the mirror
being dead after a kill) ``kstream mirror offsets`` translates them mid-copy; then a continuous
mirror still running is stopped with SIGTERM (it must exit 0), a last ``--until-end`` run must
exit 0, and :mod:`chaos.mirror_checker` checks both sides and the final translation: every
source record in the target, into kstream (and into Kafka with ``--exactly-once``) exactly once,
into Kafka at least once otherwise (records sent twice counted), nothing aborted, source order
kept, translated offsets never past the copy (and, exactly once, never reading a record again).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos.harness import Ctx, lines
from chaos.mirror_checker import Copy, Records, check_copy, check_translation
from chaos.rounds import lose_log_dir
from kstream import OFFSET_BEGINNING, Admin, Consumer, KafkaError, NewTopic, TopicPartition
from kstream.mirror import MirrorError, parse_endpoint
from kstream.mirror.offset_translation import OffsetsRequest, OffsetTranslator
from kstream.tools.perf.kafka_peer import KafkaPeer, create_topic

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mirror_child.py")
PARTITIONS = 2
MIRROR_EXIT_S = 60  # a SIGTERMed or --until-end mirror that takes longer is hung: a finding
ROUND_TIMEOUT_S = 150  # three mirror starts (a second or two each on a loaded machine), reads of both sides
_peer: KafkaPeer | None = None


# -- the broker: one per run ---------------------------------------------------------------------


def _paused_alarm(action):
    """Run ``action`` with the round's SIGALRM timer stopped (a broker's start is not the round's)."""
    remaining = signal.alarm(0)
    try:
        return action()
    finally:
        if remaining:
            signal.alarm(remaining)


def broker() -> str:
    """The run's Kafka broker, started on first use (stopped at exit by kafka_peer)."""
    global _peer
    if _peer is None:
        peer = KafkaPeer(1)
        _paused_alarm(peer.start)
        _peer = peer
    return _peer.bootstrap


def restart_broker(down_s: float) -> None:
    """Stop every node (SIGTERM: a controlled shutdown) and start it again on the same ports
    and data (KafkaPeer.restart)."""
    peer = _peer
    assert peer is not None

    def restart() -> None:
        peer.restart(down_s)

    _paused_alarm(restart)


# -- the sides ---------------------------------------------------------------------------------


def _kafka():
    import confluent_kafka

    return confluent_kafka


def read_kafka(bootstrap: str, topic: str) -> Records:
    """Every committed record of a Kafka topic: (offset, value) per partition."""
    ck = _kafka()
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-reader", "enable.auto.commit": False,
                            "isolation.level": "read_committed", "enable.partition.eof": True, "log_level": 0})
    try:
        consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(PARTITIONS)])
        return _read_to_end(consumer, ck.KafkaError._PARTITION_EOF, f"Kafka topic {topic}")
    finally:
        consumer.close()


def read_kstream(cluster: str, topic: str) -> Records:
    """Every committed record of a kstream topic: (offset, value) per partition."""
    with Consumer({"cluster": cluster, "group.id": "chaos-reader", "enable.auto.commit": False,
                   "isolation.level": "read_committed", "enable.partition.eof": True}) as consumer:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        return _read_to_end(consumer, KafkaError._PARTITION_EOF, f"kstream topic {topic}")


def _read_to_end(consumer, eof_code: int, what: str) -> Records:
    """Poll an assigned confluent-kafka-shaped consumer (Kafka's or kstream's) until every
    partition reported its end: (offset, value) per partition."""
    out: Records = {p: [] for p in range(PARTITIONS)}
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    while len(at_end) < PARTITIONS:
        if time.monotonic() > deadline:
            raise RuntimeError(f"reading {what} did not reach its end in 60 s")
        message = consumer.poll(1)
        if message is None:
            continue
        if message.error() is not None:
            if message.error().code() != eof_code:
                raise RuntimeError(f"reading {what}: {message.error()}")
            at_end.add(message.partition())
            continue
        at_end.discard(message.partition())
        out[message.partition()].append((message.offset(), message.value()))
    return out


def commit_group(ctx: Ctx, into_kstream: bool, address: str, topic: str, group: str,
                 source: Records) -> None:
    """The group ``group`` commits a seeded offset of each source partition (0 to its end)."""
    offsets = {}
    for p, records in source.items():
        end = records[-1][0] + 1 if records else 0
        # Kafka takes any offset (end + 1: a group past the copy); kstream at most the log end
        offsets[p] = ctx.rng.randint(0, end + 1 if into_kstream else end)
    if into_kstream:
        ck = _kafka()
        consumer = ck.Consumer({"bootstrap.servers": address, "group.id": group, "enable.auto.commit": False,
                                "log_level": 0})
        try:
            consumer.commit(offsets=[ck.TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
        finally:
            consumer.close()
    else:
        with Consumer({"cluster": address, "group.id": group, "enable.auto.commit": False}) as consumer:
            consumer.assign([TopicPartition(topic, p, o) for p, o in offsets.items()])
            consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)


def translate(source: str, target: str, name: str, group: str, topic: str) -> list[tuple[int, int, int | None, str]]:
    with OffsetTranslator(OffsetsRequest(parse_endpoint(source), parse_endpoint(target), name, group)) as translator:
        report = translator.translate()
    return [(r.partition, r.source_offset, r.target_offset, r.how) for r in report.rows if r.topic == topic]


# -- children ----------------------------------------------------------------------------------


class Mirror:
    """A round's mirror runs: the CLI as a child process, its stderr kept in the round's directory."""

    def __init__(self, ctx: Ctx, source: str, target: str, topic: str, name: str, chunk: int,
                 exactly_once: bool = False):
        self.ctx = ctx
        self.args = ["--from", source, "--to", target, "--topics", topic, "--name", name,
                     "--chunk-records", str(chunk), "--progress-interval", "0.2",
                     *(["--exactly-once"] if exactly_once else [])]
        self.runs = 0

    def start(self, until_end: bool) -> subprocess.Popen:
        self.runs += 1
        err = open(os.path.join(self.ctx.work, f"mirror-{self.runs}.err"), "wb")
        out = open(os.path.join(self.ctx.work, f"mirror-{self.runs}.out"), "wb")
        child = subprocess.Popen([sys.executable, "-c", "from kstream.tools.cli import main; main()", "mirror",
                                  *self.args, *(["--until-end"] if until_end else [])],
                                 stdout=out, stderr=err, env=self.ctx.env())
        err.close()
        out.close()
        child.run_number = self.runs  # type: ignore[attr-defined]
        self.ctx.children.append(child)
        return child

    def stderr(self, child: subprocess.Popen) -> str:
        with open(os.path.join(self.ctx.work, f"mirror-{child.run_number}.err"), errors="replace") as f:
            return f.read()

    def ended_clearly(self, child: subprocess.Popen, label: str) -> None:
        """A mirror that exited by itself: 0, or 1 with an ``error:`` line and no traceback."""
        code, text = child.returncode, self.stderr(child)
        if code == 0 or (code == 1 and "Traceback" not in text and "\nerror: " in "\n" + text):
            return
        self.ctx.history.round_problems.append(f"{label}: mirror run {child.run_number} exited {code} without a "
                                               f"clear error; its stderr ends: {text[-400:]!r}")

    def wait_copying(self, child: subprocess.Popen, rng) -> None:
        """A seeded moment to kill at: most often 0-1.5 s after the run's progress line first
        counts records (mid-copy), else 0.1-2 s after its start (perhaps before it copies)."""
        if rng.random() < 0.3:
            time.sleep(rng.uniform(0.1, 2.0))
            return
        delay, deadline = rng.uniform(0, 1.5), time.monotonic() + 20
        while time.monotonic() < deadline and child.poll() is None:
            if re.search(r": [1-9]\d* records", self.stderr(child)):
                break
            time.sleep(0.05)
        time.sleep(delay)

    def stop(self, child: subprocess.Popen, label: str) -> None:
        """SIGTERM a continuous mirror: it finishes its chunk and exits 0 (or has exited clearly)."""
        if child.poll() is not None:
            self.ended_clearly(child, label)
            return
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(MIRROR_EXIT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            self.ctx.history.round_problems.append(f"{label}: mirror run {child.run_number} did not stop within "
                                                   f"{MIRROR_EXIT_S} s of SIGTERM; stderr ends: "
                                                   f"{self.stderr(child)[-300:]!r}")
            return
        if child.returncode != 0:
            self.ended_clearly(child, label)

    def finish(self, label: str) -> None:
        """A last ``--until-end`` run, which must copy the rest and exit 0."""
        child = self.start(until_end=True)
        try:
            child.wait(MIRROR_EXIT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            self.ctx.history.round_problems.append(f"{label}: the last --until-end run did not end in "
                                                   f"{MIRROR_EXIT_S} s; stderr ends: {self.stderr(child)[-300:]!r}")
            return
        if child.returncode != 0:
            self.ctx.history.round_problems.append(f"{label}: the last --until-end run exited {child.returncode}: "
                                                   f"{self.stderr(child)[-400:]!r}")


def kill(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.kill()
    child.wait()


def _out_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    return text.split("\n")[:-1]  # a killed child's cut last line is dropped


# -- one round ---------------------------------------------------------------------------------


class Round:
    """One mirror round's sides, writers and mirror (``into_kstream``: Kafka -> kstream)."""

    def __init__(self, ctx: Ctx, into_kstream: bool, log_dirs: bool = False, exactly_once: bool = False):
        self.ctx = ctx
        self.into_kstream = into_kstream
        self.exactly_once = into_kstream or exactly_once  # into kstream always; into Kafka with the flag
        self.broker_restarted = False  # a source writer's failure is then the fault's, not a finding
        self.bootstrap = broker()
        if signal.alarm(0):  # the harness's round timer (main thread): a mirror round gets longer
            signal.alarm(ROUND_TIMEOUT_S)
        suffix = uuid.uuid4().hex[:6]
        self.topic = f"{'mi' if into_kstream else 'mo'}{ctx.seed}-{suffix}"
        self.name = f"m{ctx.seed}x{suffix}"
        self.group = f"g-{self.topic}"
        ctx.cluster = os.path.join(ctx.work, "cluster")
        options: dict = {"cluster": ctx.cluster, "transaction.max.timeout.ms": 60_000}
        rf = 1
        if log_dirs:
            rf = 3
            ctx.log_dirs = [os.path.join(ctx.work, f"disk{i}") for i in range(3)]
            options.update({"log.dirs": ",".join(ctx.log_dirs), "default.replication.factor": 3,
                            "min.insync.replicas": 2})
        with Admin(options) as admin:
            # the source topic; or the target and the syncs made with replication 3 here; or (the
            # mirror makes the target) another topic, so that the cluster exists for the round's reads
            topics = [NewTopic(self.topic if not into_kstream or log_dirs else "other", PARTITIONS, rf)]
            if log_dirs:
                topics.append(NewTopic(f"__mirror.{self.name}.offset-syncs", 1, rf, config={"retention.ms": "-1"}))
            for future in admin.create_topics(topics).values():
                future.result()
        if into_kstream:
            create_topic(self.bootstrap, self.topic, PARTITIONS)
        kafka, cluster = f"kafka:{self.bootstrap}", f"cluster:{ctx.cluster}"
        self.source, self.target = (kafka, cluster) if into_kstream else (cluster, kafka)
        self.mirror = Mirror(ctx, self.source, self.target, self.topic, self.name,
                             ctx.rng.choice((5, 20, 100, 500)), exactly_once=exactly_once and not into_kstream)
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.aborted: set[bytes] = set()
        self.writers: list[tuple[subprocess.Popen, str]] = []

    # the writers

    def start_writers(self) -> None:
        ctx, count = self.ctx, ctx_count(self.ctx)
        if self.into_kstream:
            transactional = ctx.rng.random() < 0.5
            out = os.path.join(ctx.work, "kafka-writer.out")
            with open(out, "wb") as stdout, open(os.path.join(ctx.work, "kafka-writer.err"), "wb") as stderr:
                child = subprocess.Popen([sys.executable, CHILD, "kafka-produce", self.bootstrap, self.topic,
                                          str(PARTITIONS), f"k{ctx.seed}-{self.topic}", str(count), "1500",
                                          "1" if transactional else "0"], stdout=stdout, stderr=stderr, env=ctx.env())
            ctx.children.append(child)
            self.writers.append((child, out))
        else:
            plain = ctx.spawn("produce", ctx.cluster, self.topic, str(PARTITIONS), "all", "w", str(count), "1500")
            txn = ctx.spawn("txn", ctx.cluster, self.topic, str(PARTITIONS), "tx-0", f"t{ctx.seed}",
                            str(count // 20), "0")
            self.writers += [(plain, ""), (txn, "")]

    def wait_writers(self) -> None:
        for child, out in self.writers:
            try:
                child.wait(120) if out else None
                output = _out_lines(out) if out else lines(child, 120)
            except subprocess.TimeoutExpired:
                kill(child)
                self.ctx.history.round_problems.append("a source writer did not finish in 120 s")
                output = _out_lines(out) if out else lines(child, 10)
            begun: dict[str, list[bytes]] = {}
            for line in output:
                parts = line.split(" ")
                if parts[0] == "A" and len(parts) == 4:
                    self.acked[parts[1].encode()] = (int(parts[2]), int(parts[3]))  # A value partition offset
                elif parts[0] == "X" and len(parts) == 2:
                    self.aborted.add(parts[1].encode())
                elif parts[0] == "B" and len(parts) == 3:
                    begun[parts[1]] = [v.encode() for v in parts[2].split(",")]
                elif parts[0] == "X" and len(parts) == 3:
                    self.aborted.update(begun.pop(parts[1], []))
                elif parts[0] == "F" and not self.broker_restarted:
                    self.ctx.history.round_problems.append(f"a source writer failed with no fault on its side: "
                                                           f"{line[:300]}")
        self.writers = []

    # reading and checking

    def read_source(self) -> Records:
        return read_kstream(self.ctx.cluster, self.topic) if not self.into_kstream else \
            read_kafka(self.bootstrap, self.topic)

    def read_target(self) -> Records:
        return read_kstream(self.ctx.cluster, self.topic) if self.into_kstream else \
            read_kafka(self.bootstrap, self.topic)

    def copy(self, source: Records, target: Records) -> Copy:
        return Copy(self.topic, self.exactly_once, source, target, acked=self.acked, aborted=self.aborted)

    def commit_group(self, source: Records) -> None:
        commit_group(self.ctx, self.into_kstream, self.bootstrap if self.into_kstream else self.ctx.cluster,
                     self.topic, self.group, source)

    def check_translation(self, source: Records, label: str) -> None:
        try:
            rows = translate(self.source, self.target, self.name, self.group, self.topic)
        except MirrorError as err:
            if "run the mirror first" in str(err) and label == "mid-copy":
                return  # killed before its first commit: nothing to translate yet
            self.ctx.history.round_problems.append(f"{label}: kstream mirror offsets failed: {err}")
            return
        if label != "mid-copy" and len(rows) != PARTITIONS:
            self.ctx.history.round_problems.append(f"{label}: translated {len(rows)} of {PARTITIONS} partitions")
        check_translation(self.copy(source, self.read_target()), rows, self.ctx.history, f"{label}: ")

    def final_check(self) -> None:
        self.mirror.finish("after the fault")
        source = self.read_source()
        check_copy(self.copy(source, self.read_target()), self.ctx.history)
        self.check_translation(source, "after the copy")


def ctx_count(ctx: Ctx) -> int:
    return ctx.rng.randrange(800, 2400)


def _translate_mid_copy(r: Round) -> None:
    """The writers done, the group commits on the source; with the mirror dead, translate now."""
    r.wait_writers()
    source = r.read_source()
    r.commit_group(source)
    r.check_translation(source, "mid-copy")


# -- the rounds --------------------------------------------------------------------------------


def sigkill_round(ctx: Ctx, into_kstream: bool, exactly_once: bool = False) -> None:
    r = Round(ctx, into_kstream, exactly_once=exactly_once)
    r.start_writers()
    running = r.mirror.start(until_end=False)
    kills = ctx.rng.randint(1, 3)
    for n in range(kills):
        r.mirror.wait_copying(running, ctx.rng)
        if running.poll() is not None:
            r.mirror.ended_clearly(running, f"before kill {n + 1}")
        kill(running)
        if n == 0:
            _translate_mid_copy(r)
        if n + 1 < kills:
            running = r.mirror.start(until_end=ctx.rng.random() < 0.5)
    r.final_check()


def broker_restart_round(ctx: Ctx) -> None:
    r = Round(ctx, into_kstream=ctx.rng.random() < 0.5)
    r.start_writers()
    running = r.mirror.start(until_end=False)
    r.mirror.wait_copying(running, ctx.rng)
    r.broker_restarted = True
    restart_broker(ctx.rng.uniform(0.5, 3.0))
    time.sleep(ctx.rng.uniform(0.5, 2.0))  # rides it out, or has exited with a clear error
    r.wait_writers()
    r.mirror.stop(running, "after the broker's restart")
    source = r.read_source()
    r.commit_group(source)
    r.check_translation(source, "mid-copy")
    r.final_check()


def logdir_lost_round(ctx: Ctx) -> None:
    r = Round(ctx, into_kstream=True, log_dirs=True)
    r.start_writers()
    running = r.mirror.start(until_end=False)
    r.mirror.wait_copying(running, ctx.rng)
    before = read_kstream(ctx.cluster, r.topic)
    lose_log_dir(ctx.log_dirs[ctx.rng.randrange(3)])
    time.sleep(ctx.rng.uniform(0.5, 1.5))
    r.wait_writers()
    r.mirror.stop(running, "after the log dir's loss")
    after = read_kstream(ctx.cluster, r.topic)
    for p, records in before.items():
        now = dict(after.get(p, []))
        gone = [(o, v) for o, v in records if now.get(o) != v]
        if gone:
            ctx.history.round_problems.append(f"{r.topic}-{p}: {len(gone)} records a reader saw before the log dir "
                                              f"was lost are gone, e.g. {gone[0]} (now {now.get(gone[0][0])!r})")
    source = r.read_source()
    r.commit_group(source)
    r.check_translation(source, "mid-copy")
    r.final_check()
    with Admin({"cluster": ctx.cluster}) as admin:
        try:
            ctx.history.replica_mismatches = [f"{m.topic}-{m.partition} leader {m.leader} vs {m.replica} at "
                                              f"{m.offset}: {m.reason}" for m in admin.verify_replicas([r.topic])]
        except Exception as err:
            ctx.history.replica_mismatches = [f"verify-replicas failed: {type(err).__name__}: {err}"]
