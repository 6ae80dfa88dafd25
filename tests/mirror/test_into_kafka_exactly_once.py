"""kstream -> Apache Kafka exactly once (``--exactly-once``: Kafka transactions; docs/MIRROR.md).

Each kill test runs the mirror as a child process killed by a crash point (``KSTREAM_CRASH_AT``,
kstream.log.storage.faults) at an exact step of its chunk protocol, then reruns it, and reads the
Kafka topic read_committed: every committed kstream record once, in order per partition. The
same kill without ``--exactly-once`` leaves duplicates (the test says so: it is what the flag is for).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from tests.mirror.mirror_support import by_partition, read_kafka, sample
from tests.mirror.test_into_kafka import make_kstream_topic, produce_kstream
from tests.mirror.test_mirror_cli import SRC
from tests.mirror.test_offset_translation import kstream_commit_after, read_kafka_from, translate, values

from kstream import Consumer, TopicPartition
from kstream.errors import ConfigError
from kstream.mirror import MirrorError, MirrorOptions, parse_endpoint
from kstream.mirror.into_kafka import IntoKafka
from kstream.mirror.offset_syncs import TRANSLATED

pytestmark = pytest.mark.kafka

GROUP = "etl"


def options(cluster, bootstrap, name, topic, **kw):
    kw.setdefault("until_end", True)
    kw.setdefault("poll_timeout_s", 0.2)
    kw.setdefault("exactly_once", True)
    return MirrorOptions(parse_endpoint(f"cluster:{cluster}"), parse_endpoint(f"kafka:{bootstrap}"), name,
                         topics=(topic,), **kw)


def mirror_child(cluster, bootstrap, name, topic, *extra, crash_at=None):
    """The CLI mirror (--until-end, 50 records a chunk) as a child; ``crash_at`` SIGKILLs it there."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(SRC)}
    env.pop("KSTREAM_CRASH_AT", None)
    if crash_at:
        env["KSTREAM_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-c", "from kstream.tools.cli import main; main()", "mirror",
                           "--from", f"cluster:{cluster}", "--to", f"kafka:{bootstrap}", "--topics", topic,
                           "--name", name, "--until-end", "--chunk-records", "50", *extra],
                          env=env, capture_output=True, text=True, timeout=180)


def kafka_group(bootstrap, group, topic, partitions):
    """The Kafka group's committed (offset, metadata) per partition, read as the mirror reads them."""
    from kstream.mirror.kafka_side import KafkaSide

    return KafkaSide(bootstrap, 30).mirror_offsets(group, [(topic, p) for p in range(partitions)])


def kstream_group(cluster, group, topic, partitions):
    with Consumer({"cluster": cluster, "group.id": group}) as consumer:
        return {tp.partition: tp.offset for tp in consumer.committed([TopicPartition(topic, p)
                                                                      for p in range(partitions)])}


def test_each_chunk_is_a_kafka_transaction_with_the_positions_in_the_kafka_group(
        kafka_broker, tmp_path, topic_name, mirror_name):
    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 3)
    committed = sample(3, 200)
    produce_kstream(cluster, topic_name, committed)
    produce_kstream(cluster, topic_name, sample(3, 30, salt="-aborted"), transactional_id="tx", commit=False)
    in_txn = sample(3, 30, salt="-txn")
    produce_kstream(cluster, topic_name, in_txn, transactional_id="tx")

    progress = IntoKafka(options(cluster, kafka_broker, mirror_name, topic_name, chunk_records=64)).run()

    assert progress.records == 230 and progress.transactions >= 4
    assert by_partition(read_kafka(kafka_broker, topic_name, 3)) == by_partition(committed + in_txn)
    in_kafka = kafka_group(kafka_broker, f"__mirror.{mirror_name}", topic_name, 3)
    in_kstream = kstream_group(cluster, f"__mirror.{mirror_name}", topic_name, 3)
    assert {tp[1]: json.loads(metadata)["source_offset"] for tp, (_, metadata) in in_kafka.items()} == in_kstream
    assert IntoKafka(options(cluster, kafka_broker, mirror_name, topic_name)).run().records == 0


def test_a_group_translated_across_an_exactly_once_copy_reads_exactly_what_it_had_not_read(
        kafka_broker, tmp_path, topic_name, mirror_name):
    """Kafka's commit markers take an offset after each chunk: each transaction's first record is
    an offset sync, so the translation stays exact (no record read again, none skipped)."""
    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 2)
    records = sample(2, 120)
    produce_kstream(cluster, topic_name, records[:50], transactional_id="tx")
    produce_kstream(cluster, topic_name, records[50:])
    consumed = {0: 23, 1: 41}
    kstream_commit_after(cluster, topic_name, GROUP, consumed)
    IntoKafka(options(cluster, kafka_broker, mirror_name, topic_name, chunk_records=9)).run()

    report = translate(f"cluster:{cluster}", f"kafka:{kafka_broker}", mirror_name)

    assert [r.how for r in report.rows] == [TRANSLATED, TRANSLATED]
    rest = read_kafka_from(kafka_broker, topic_name, {r.partition: r.target_offset for r in report.rows})
    for p in (0, 1):
        assert rest[p] == values(records, p)[consumed[p]:], p


# (crash point, --exactly-once): mid-transaction (records in Kafka, transaction open), between
# the Kafka commit and the kstream one, between two chunks; and the first without the flag
KILLS = [("mirror.into-kafka.flushed:2", True), ("mirror.into-kafka.kafka-committed:2", True),
         ("mirror.into-kafka.committed:2", True), ("mirror.into-kafka.flushed:2", False)]


@pytest.mark.parametrize(("crash_at", "exactly_once"), KILLS, ids=["mid-transaction", "between-commits",
                                                                   "between-chunks", "at-least-once"])
def test_a_mirror_killed_and_rerun_writes_every_record_once_and_without_the_flag_twice(
        kafka_broker, tmp_path, topic_name, mirror_name, crash_at, exactly_once):
    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 2)
    records = sample(2, 300)
    produce_kstream(cluster, topic_name, records[:100], transactional_id="tx")
    produce_kstream(cluster, topic_name, records[100:])
    flag = ("--exactly-once",) if exactly_once else ()

    killed = mirror_child(cluster, kafka_broker, mirror_name, topic_name, *flag, crash_at=crash_at)
    assert killed.returncode == -9, killed.stderr
    if crash_at.startswith("mirror.into-kafka.kafka-committed"):  # Kafka has the chunk, kstream not yet
        in_kafka = kafka_group(kafka_broker, f"__mirror.{mirror_name}", topic_name, 2)
        in_kstream = kstream_group(cluster, f"__mirror.{mirror_name}", topic_name, 2)
        assert any(json.loads(m)["source_offset"] > in_kstream.get(tp[1], -1) for tp, (_, m) in in_kafka.items())
    rerun = mirror_child(cluster, kafka_broker, mirror_name, topic_name, *flag)
    assert rerun.returncode == 0, rerun.stderr

    copied = by_partition(read_kafka(kafka_broker, topic_name, 2))
    expected = by_partition(records)
    if exactly_once:
        assert copied == expected
        ends = {p: len(expected[p]) for p in (0, 1)}  # kstream offsets: 100 records and one marker
        positions = kstream_group(cluster, f"__mirror.{mirror_name}", topic_name, 2)
        assert positions == {p: ends[p] + 1 for p in (0, 1)}  # the kstream group caught up with Kafka
    else:  # at least once: the killed chunk was sent again
        assert {p: list(dict.fromkeys(r)) for p, r in copied.items()} == expected
        assert sum(map(len, copied.values())) > len(records)


def test_a_second_mirror_with_the_same_name_fences_the_first(kafka_broker, tmp_path, topic_name, mirror_name):
    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 1)
    first, later = sample(1, 20), sample(1, 20, salt="-later")
    produce_kstream(cluster, topic_name, first)
    running = IntoKafka(options(cluster, kafka_broker, mirror_name, topic_name, until_end=False))
    failure: list[BaseException] = []

    def run() -> None:
        try:
            running.run()
        except BaseException as err:  # handed to the test's thread
            failure.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while running.progress.records < 20 and thread.is_alive():
            assert time.monotonic() < deadline, "the first mirror copied nothing within 60s"
            time.sleep(0.05)
        assert IntoKafka(options(cluster, kafka_broker, mirror_name, topic_name)).run().records == 0  # fences it
        produce_kstream(cluster, topic_name, later)  # the fenced one reads these, and cannot commit them
        thread.join(60)
    finally:
        assert not thread.is_alive(), "the fenced mirror did not stop"
    assert len(failure) == 1 and isinstance(failure[0], MirrorError), failure
    assert "was fenced" in str(failure[0]) and "same --name" in str(failure[0])
    assert IntoKafka(options(cluster, kafka_broker, mirror_name, topic_name)).run().records == 20
    assert read_kafka(kafka_broker, topic_name, 1) == first + later


def test_switching_modes_under_one_name_neither_loses_nor_copies_again(
        kafka_broker, tmp_path, topic_name, mirror_name):
    """exactly once, then at least once (its kstream positions pass Kafka's), then exactly once
    again: each run starts at the greater of the two positions."""
    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 2)
    parts = [sample(2, 40, salt=f"-{i}") for i in range(3)]
    for i, exactly_once in enumerate((True, False, True)):
        produce_kstream(cluster, topic_name, parts[i])
        run = IntoKafka(options(cluster, kafka_broker, mirror_name, topic_name, exactly_once=exactly_once,
                                chunk_records=15)).run()
        assert run.records == 40, i
    assert by_partition(read_kafka(kafka_broker, topic_name, 2)) == by_partition(parts[0] + parts[1] + parts[2])


def test_exactly_once_into_kstream_is_a_clear_error(tmp_path, mirror_name):
    with pytest.raises(ConfigError, match="Kafka -> kstream is always exactly once"):
        MirrorOptions(parse_endpoint("kafka:localhost:9092"), parse_endpoint(f"cluster:{tmp_path}"), mirror_name,
                      topics=("t",), exactly_once=True)


def test_the_cli_refuses_exactly_once_into_kstream_before_touching_anything(tmp_path):
    from click.testing import CliRunner

    from kstream.tools.cli.main import cli

    result = CliRunner().invoke(cli, ["mirror", "--from", "kafka:localhost:1", "--to", f"cluster:{tmp_path}/c",
                                      "--topics", "t", "--exactly-once"])
    assert result.exit_code != 0
    assert "Kafka -> kstream is always exactly once" in (result.output + str(result.exception))
    assert not (tmp_path / "c").exists()
