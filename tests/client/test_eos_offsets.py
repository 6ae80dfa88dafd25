"""Consumer offsets committed atomically with a transaction (send_offsets_to_transaction).

Consume-transform-produce exactly once: the output of a transaction and the input offsets
it sends are visible together or not at all, whoever ends the transaction (the producer, a
new instance of its transactional id, the expiry, a reader of the group's offsets), and a
child SIGKILLed at any step of a commit leaves nothing a new consumer can tell apart from
"before" or "after". Fencing: offsets of a member that lost its partitions are refused.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from helpers import committed_offsets, consume_values
from kstream import Admin, Consumer, NewTopic, Producer, TopicPartition
from kstream.errors import IllegalGenerationError
from kstream.groups import ConsumerGroups
from kstream.groups.offsets_table import OffsetsTable
from kstream.groups.transactional_offsets import ConsumerGroupMetadata
from kstream.log.cluster.cluster import Cluster

PIPELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eos_pipeline.py")
INPUTS = 25
BATCH = 10
TIMEOUT_MS = 1000  # the smallest transaction.timeout.ms allowed


def make_cluster(tmp_path) -> str:
    path = str(tmp_path / "c")
    with Admin({"cluster": path}) as admin:
        for topic in ("in", "out"):
            admin.create_topics([NewTopic(topic, 1)])[topic].result()
    with Producer({"cluster": path}) as producer:
        for i in range(INPUTS):
            producer.produce("in", f"v{i}".encode(), partition=0)
    return path


def run_pipeline(path: str, crash_at: str | None = None, *mode: str,
                 timeout_ms: int | None = None) -> subprocess.CompletedProcess:
    """eos_pipeline.py (``timeout_ms``: its producer's transaction.timeout.ms, else the default)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("KSTREAM_CRASH_AT", None)
    env.pop("EOS_TRANSACTION_TIMEOUT_MS", None)
    if crash_at:
        env["KSTREAM_CRASH_AT"] = crash_at
    if timeout_ms is not None:
        env["EOS_TRANSACTION_TIMEOUT_MS"] = str(timeout_ms)
    return subprocess.run([sys.executable, PIPELINE, path, "g", "etl", str(BATCH), *mode], env=env,
                          capture_output=True, timeout=120)


def group_consumer(path: str) -> Consumer:
    return Consumer({"cluster": path, "group.id": "g", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})


def started_at(path: str) -> int | None:
    """Where a new consumer of the group starts reading "in" (None: no committed offset)."""
    consumer = group_consumer(path)
    try:
        offset = consumer.committed([TopicPartition("in", 0)])[0].offset
        return offset if offset >= 0 else None
    finally:
        consumer.close()


def outputs(path: str) -> list[bytes]:
    return consume_values(path, "out", 1)


def table_offsets(path: str) -> dict:
    """The Delta table as it is (no roll-forward of pending transactions)."""
    cluster = Cluster.open(path)
    try:
        table = OffsetsTable(path, cluster.config["offsets.history.retention.ms"])
        return {k: v.offset for k, v in table.read("g").items()}
    finally:
        cluster.close()


def expected(n: int) -> list[bytes]:
    return [f"out-v{i}".encode() for i in range(n)]


# -- visible with the commit, never with an abort -------------------------------------------


def transform_batch(path: str, producer: Producer, consumer: Consumer, count: int) -> None:
    for _ in range(count):
        message = consumer.poll(5.0)
        assert message is not None and not message.error()
        producer.produce("out", b"out-" + message.value(), partition=0)
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata())


def test_offsets_are_committed_with_the_transaction_and_dropped_with_an_abort(tmp_path):
    path = make_cluster(tmp_path)
    consumer = group_consumer(path)
    consumer.assign([TopicPartition("in", 0)])
    producer = Producer({"cluster": path, "transactional.id": "etl", "linger.ms": 0})
    producer.init_transactions()
    producer.begin_transaction()
    transform_batch(path, producer, consumer, 3)
    assert started_at(path) is None and outputs(path) == []  # sent, not committed
    producer.commit_transaction()
    assert started_at(path) == 3 and outputs(path) == expected(3)
    assert committed_offsets(path, "g") == {("in", 0): 3}

    producer.begin_transaction()
    transform_batch(path, producer, consumer, 4)
    producer.abort_transaction()
    assert started_at(path) == 3 and outputs(path) == expected(3)
    assert table_offsets(path) == {("in", 0): 3}

    producer.begin_transaction()  # a later commit does not bring the aborted offsets back
    producer.produce("out", b"x", partition=0)
    producer.commit_transaction()
    assert started_at(path) == 3
    consumer.close()
    producer.close()
    assert group_consumer_first_record(path) == b"v3"


def group_consumer_first_record(path: str) -> bytes:
    consumer = group_consumer(path)
    try:
        consumer.assign([TopicPartition("in", 0)])  # OFFSET_INVALID: the group's committed offset
        message = consumer.poll(5.0)
        assert message is not None
        return message.value()
    finally:
        consumer.close()


def test_send_offsets_needs_an_open_transaction_and_skips_logical_offsets(tmp_path):
    path = make_cluster(tmp_path)
    producer = Producer({"cluster": path, "transactional.id": "etl"})
    producer.init_transactions()
    metadata = ConsumerGroupMetadata("g")
    with pytest.raises(Exception, match="begin_transaction"):
        producer.send_offsets_to_transaction([TopicPartition("in", 0, 1)], metadata)
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition("in", 0, -1001)], metadata)  # nothing to send
    with pytest.raises(Exception, match="log ends at"):
        producer.send_offsets_to_transaction([TopicPartition("in", 0, INPUTS + 1)], metadata)
    producer.commit_transaction()
    assert started_at(path) is None
    producer.close()


# -- fencing: a member that lost its partitions ---------------------------------------------


def assigned_member(path: str) -> Consumer:
    consumer = Consumer({"cluster": path, "group.id": "g", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "heartbeat.interval.ms": 50})
    consumer.subscribe(["in"])
    deadline = time.monotonic() + 30
    while not consumer.assignment():
        assert time.monotonic() < deadline, "never assigned"
        consumer.poll(0.1)
    return consumer


def test_offsets_of_an_old_generation_are_refused_when_sent(tmp_path):
    path = make_cluster(tmp_path)
    member = assigned_member(path)
    stale = member.consumer_group_metadata()
    assert stale.member_id == member.memberid() and stale.generation >= 1
    member.close()  # leaves: the group moves to a new generation
    producer = Producer({"cluster": path, "transactional.id": "etl"})
    producer.init_transactions()
    producer.begin_transaction()
    producer.produce("out", b"x", partition=0)
    with pytest.raises(IllegalGenerationError, match="abort"):
        producer.send_offsets_to_transaction([TopicPartition("in", 0, 5)], stale)
    with pytest.raises(IllegalGenerationError):
        producer.send_offsets_to_transaction([TopicPartition("in", 0, 5)],
                                             ConsumerGroupMetadata("g", "made-up", 99))
    producer.abort_transaction()  # the producer is not fenced: it goes on
    producer.begin_transaction()
    producer.commit_transaction()
    producer.close()
    assert started_at(path) is None and outputs(path) == []


def test_offsets_whose_member_lost_the_group_before_the_commit_are_refused_then(tmp_path):
    path = make_cluster(tmp_path)
    member = assigned_member(path)
    producer = Producer({"cluster": path, "transactional.id": "etl", "linger.ms": 0})
    producer.init_transactions()
    producer.begin_transaction()
    transform_batch(path, producer, member, 5)
    member.close()  # rebalanced away before the commit: the new owner starts from the old offsets
    assert started_at(path) is None  # a reader does not wait for a transaction that cannot commit
    with pytest.raises(IllegalGenerationError):
        producer.commit_transaction()
    producer.abort_transaction()
    producer.close()
    assert started_at(path) is None and outputs(path) == []


def test_a_consumer_outside_the_group_may_not_send_offsets_while_it_has_members(tmp_path):
    path = make_cluster(tmp_path)
    member = assigned_member(path)
    try:
        producer = Producer({"cluster": path, "transactional.id": "etl"})
        producer.init_transactions()
        producer.begin_transaction()
        with pytest.raises(IllegalGenerationError, match="active member"):
            producer.send_offsets_to_transaction([TopicPartition("in", 0, 5)], ConsumerGroupMetadata("g"))
        producer.abort_transaction()
        producer.close()
    finally:
        member.close()


# -- crashes between the steps of a commit --------------------------------------------------

STEPS = {  # crash point of the 2nd commit -> offset and outputs the group's readers see
    "txn.offsets-sent:2": 10,
    "txn.prepared:2": 20,
    "txn.markers-written:2": 20,
    "txn.offsets-applied:2": 20,
}


@pytest.mark.parametrize("crash_at", sorted(STEPS))
def test_a_pipeline_killed_at_any_step_of_a_commit_shows_both_or_neither_and_resumes_exactly_once(
        tmp_path, crash_at):
    path = make_cluster(tmp_path)
    killed = run_pipeline(path, crash_at)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    seen_first = outputs(path)  # before anyone settled the transaction: a prefix of what follows
    offset = started_at(path)  # a read: a decided commit's offsets laid over the table, nothing written
    seen = outputs(path)
    assert offset == STEPS[crash_at] and seen == expected(offset)
    assert seen_first == seen[:len(seen_first)]
    if crash_at.startswith(("txn.markers-written", "txn.offsets-applied")):
        assert seen_first == expected(20)  # the markers were on disk before the offsets

    rerun = run_pipeline(path)
    assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
    assert int(rerun.stdout) == INPUTS - offset
    assert outputs(path) == expected(INPUTS)  # each input's output exactly once
    assert started_at(path) == INPUTS


@pytest.mark.parametrize("crash_at", ["txn.offsets-sent:2", "txn.prepared:2"])
def test_a_group_member_killed_mid_commit_is_replaced_by_a_member_that_resumes_exactly_once(tmp_path, crash_at):
    """KIP-447's shape: the pipeline is a subscribed member. The new member gets the
    partition once the dead one is expired; its start position sees the dead member's
    transaction (its offsets if decided; not waited for if open: its sender is dead)."""
    path = make_cluster(tmp_path)
    assert run_pipeline(path, crash_at, "subscribe").returncode == -9
    rerun = run_pipeline(path, None, "subscribe")
    assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
    assert int(rerun.stdout) == INPUTS - STEPS[crash_at]
    assert outputs(path) == expected(INPUTS)
    assert started_at(path) == INPUTS


def test_a_new_instance_of_the_transactional_id_completes_the_offsets_of_a_decided_commit(tmp_path):
    path = make_cluster(tmp_path)
    assert run_pipeline(path, "txn.markers-written:2").returncode == -9
    assert table_offsets(path) == {("in", 0): 10}  # the table itself still has the old offsets
    producer = Producer({"cluster": path, "transactional.id": "etl"})
    producer.init_transactions()
    producer.close()
    assert table_offsets(path) == {("in", 0): 20}


def test_describe_and_lag_show_a_decided_commits_offsets_without_writing_them(tmp_path):
    """Readers never write: the decided offsets are laid over the table in the reader's view;
    the table keeps the old ones until a writer finishes the transaction."""
    path = make_cluster(tmp_path)
    assert run_pipeline(path, "txn.markers-written:2").returncode == -9
    assert outputs(path) == expected(20) and table_offsets(path) == {("in", 0): 10}
    groups = ConsumerGroups(Cluster.open(path))
    try:
        [partition] = groups.describe("g").partitions  # what `kstream groups describe g` prints
        assert (partition.committed, partition.lag) == (20, INPUTS - 20)
    finally:
        groups.close()
        groups.cluster.close()
    assert table_offsets(path) == {("in", 0): 10}


def test_a_writers_expiry_completes_the_offsets_of_a_decided_commit_whose_producer_died(tmp_path):
    path = make_cluster(tmp_path)
    assert run_pipeline(path, "txn.prepared:2", timeout_ms=TIMEOUT_MS).returncode == -9
    assert table_offsets(path) == {("in", 0): 10}
    time.sleep(TIMEOUT_MS / 1000 + 0.1)
    assert outputs(path) == expected(20)  # a read_committed reader sees the decision ...
    assert table_offsets(path) == {("in", 0): 10}  # ... and writes nothing (issue 26: readers never write)
    with Producer({"cluster": path, "transactional.id": "passer-by"}) as writer:
        writer.init_transactions()  # a writer passing by runs the expiry, which finishes it
    assert table_offsets(path) == {("in", 0): 20}
    assert outputs(path) == expected(20)


def test_a_reader_waits_for_an_open_transaction_carrying_the_groups_offsets(tmp_path):
    """Kafka's UNSTABLE_OFFSET_COMMIT: a consumer starting from the group's offsets while
    another live process's transaction carries offsets for it waits for its decision."""
    path = make_cluster(tmp_path)
    code = (
        "import sys, time\n"
        "from kstream import Producer, TopicPartition\n"
        "from kstream.groups.transactional_offsets import ConsumerGroupMetadata\n"
        "p = Producer({'cluster': sys.argv[1], 'transactional.id': 'etl'})\n"
        "p.init_transactions(); p.begin_transaction()\n"
        "p.produce('out', b'out-v0', partition=0); p.flush()\n"
        "p.send_offsets_to_transaction([TopicPartition('in', 0, 1)], ConsumerGroupMetadata('g'))\n"
        "print('sent', flush=True); time.sleep(1.0); p.commit_transaction(); p.close()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", code, path], stdout=subprocess.PIPE, env=env)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"sent\n"
        assert started_at(path) == 1  # waited for the commit instead of reading "none"
        assert outputs(path) == expected(1)
    finally:
        child.wait(30)


def test_a_sender_is_alive_only_while_its_process_runs_and_a_reused_pid_is_no_match():
    import socket

    from kstream.log.transactions.pending_offsets import PendingOffsets, process_start

    here, me = socket.gethostname(), os.getpid()
    assert PendingOffsets("t", "g", None, -1, 1, (), here, me, process_start(me)).sender_alive
    assert not PendingOffsets("t", "g", None, -1, 1, (), here, me, process_start(me) + 1).sender_alive
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not PendingOffsets("t", "g", None, -1, 1, (), here, child.pid, 0).sender_alive
    assert PendingOffsets("t", "g", None, -1, 1, (), "another-host", child.pid, 0).sender_alive


RANDOM_INPUTS = 1200  # a few seconds of 7-record transactions: the kills land mid-stream


@pytest.mark.parametrize("mode", [(), ("subscribe",)], ids=["assign", "subscribe"])
def test_a_pipeline_killed_at_random_moments_then_rerun_writes_each_output_exactly_once(tmp_path, mode):
    import random

    path = make_cluster(tmp_path)
    with Producer({"cluster": path}) as producer:  # more input, so a kill lands mid-stream
        for i in range(INPUTS, RANDOM_INPUTS):
            producer.produce("in", f"v{i}".encode(), partition=0)
    rng = random.Random(11 + len(mode))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("KSTREAM_CRASH_AT", None)
    for _ in range(3):
        child = subprocess.Popen([sys.executable, PIPELINE, path, "g", "etl", "7", *mode], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.6, 3.0))
        child.kill()
        child.wait(30)
        seen = outputs(path)
        offset = started_at(path) or 0
        assert outputs(path) == expected(offset) and seen == expected(len(seen))  # both or neither
    rerun = run_pipeline(path, None, *mode)
    assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
    assert outputs(path) == expected(RANDOM_INPUTS)
    assert started_at(path) == RANDOM_INPUTS


def test_the_transaction_layer_finishes_offsets_only_through_the_applier_groups_hand_it(tmp_path):
    """The transaction layer never imports groups (issue 27): in a process that loaded no groups
    code, finishing a decided commit that carries offsets refuses before Complete (markers are
    idempotent), so the commit stays decided for a finisher that has the applier."""
    path = make_cluster(tmp_path)
    assert run_pipeline(path, "txn.prepared:2", timeout_ms=TIMEOUT_MS).returncode == -9
    time.sleep(TIMEOUT_MS / 1000 + 0.1)
    code = ("import sys\n"
            "from kstream.errors import KStreamError\n"
            "from kstream.log.cluster.cluster import Cluster\n"
            "from kstream.log.transactions.expiry import expire\n"
            "cluster = Cluster.open(sys.argv[1])\n"
            "try:\n"
            "    expire(cluster)\n"
            "except KStreamError as err:\n"
            "    print('refused:', err)\n"
            "print(sorted(m for m in sys.modules if m.startswith('kstream.groups')))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("KSTREAM_CRASH_AT", None)
    done = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    refused, loaded = done.stdout.splitlines()
    assert refused.startswith("refused: the transaction of 'etl' carries consumer group offsets")
    assert loaded == "[]"
    assert table_offsets(path) == {("in", 0): 10}
    with Producer({"cluster": path, "transactional.id": "passer-by"}) as writer:
        writer.init_transactions()  # this process has the applier: the expiry finishes the commit
    assert table_offsets(path) == {("in", 0): 20}
    assert outputs(path) == expected(20)
