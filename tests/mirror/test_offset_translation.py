"""`kstream mirror offsets`: a group's committed offsets carried across a mirror, both directions.

Each test: a group consumes part of a topic on the source side and commits; the mirror copies
the topic; the group's offsets are translated; a consumer of the target that starts at the
translation reads exactly the records the group had not read (docs/MIRROR.md, "Consumer-group
offsets").
"""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner
from tests.mirror.mirror_support import create_kafka_topic, produce_kafka, sample
from tests.mirror.test_into_kafka import make_kstream_topic, produce_kstream

from kstream import Consumer, TopicPartition
from kstream.mirror import MirrorError, MirrorOptions, parse_endpoint
from kstream.mirror.into_kafka import IntoKafka
from kstream.mirror.into_kstream import IntoKstream
from kstream.mirror.offset_syncs import CLAMPED, IDENTITY, TRANSLATED
from kstream.mirror.offset_translation import OffsetsRequest, OffsetTranslator
from kstream.tools.cli.main import cli

pytestmark = pytest.mark.kafka

GROUP = "etl"


def kafka_commit_after(bootstrap: str, topic: str, group: str, consumed: dict[int, int]) -> dict[int, list[bytes]]:
    """Group ``group`` reads ``consumed[p]`` records of each partition on Kafka (read_committed)
    and commits its positions; returns the values it read per partition."""
    from confluent_kafka import Consumer as KafkaConsumer
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                              "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    read: dict[int, list[bytes]] = {p: [] for p in consumed}
    try:
        consumer.assign([KafkaTopicPartition(topic, p, -2) for p in consumed])
        deadline = time.monotonic() + 60
        while any(len(read[p]) < n for p, n in consumed.items()):
            assert time.monotonic() < deadline, "the group could not read its share within 60s"
            message = consumer.poll(1)
            if message is None or message.error() is not None or len(read[message.partition()]) >= \
                    consumed[message.partition()]:
                continue
            read[message.partition()].append(message.value())
            if len(read[message.partition()]) == consumed[message.partition()]:
                consumer.pause([KafkaTopicPartition(topic, message.partition())])
                consumer.commit(offsets=[KafkaTopicPartition(topic, message.partition(), message.offset() + 1)],
                                asynchronous=False)
    finally:
        consumer.close()
    return read


def kstream_commit_after(cluster: str, topic: str, group: str, consumed: dict[int, int]) -> None:
    """Group ``group`` reads ``consumed[p]`` records of each kstream partition and commits."""
    with Consumer({"cluster": cluster, "group.id": group, "enable.auto.commit": False,
                   "isolation.level": "read_committed"}) as consumer:
        consumer.assign([TopicPartition(topic, p, -2) for p in consumed])
        offsets = {}
        read = {p: 0 for p in consumed}
        deadline = time.monotonic() + 60
        while any(read[p] < n for p, n in consumed.items()):
            assert time.monotonic() < deadline
            message = consumer.poll(1)
            if message is None or message.error() is not None or read[message.partition()] >= \
                    consumed[message.partition()]:
                continue
            read[message.partition()] += 1
            offsets[message.partition()] = message.offset() + 1
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)


def read_kstream_from(cluster: str, topic: str, start: dict[int, int]) -> dict[int, list[bytes]]:
    """Every committed record of each partition from ``start[p]`` to the end."""
    out: dict[int, list[bytes]] = {p: [] for p in start}
    with Consumer({"cluster": cluster, "group.id": "check", "enable.auto.commit": False,
                   "isolation.level": "read_committed", "enable.partition.eof": True}) as consumer:
        consumer.assign([TopicPartition(topic, p, o) for p, o in start.items()])
        at_end: set[int] = set()
        while len(at_end) < len(start):
            message = consumer.poll(10)
            assert message is not None
            if message.error() is not None:
                at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            out[message.partition()].append(message.value())
    return out


def read_kafka_from(bootstrap: str, topic: str, start: dict[int, int]) -> dict[int, list[bytes]]:
    from confluent_kafka import Consumer as KafkaConsumer
    from confluent_kafka import KafkaError
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    out: dict[int, list[bytes]] = {p: [] for p in start}
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False,
                              "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        consumer.assign([KafkaTopicPartition(topic, p, o) for p, o in start.items()])
        at_end: set[int] = set()
        while len(at_end) < len(start):
            message = consumer.poll(30)
            assert message is not None
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF
                at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            out[message.partition()].append(message.value())
    finally:
        consumer.close()
    return out


def values(records, partition):
    return [r[2] for r in records if r[0] == partition]


def into_kstream(bootstrap, cluster, name, topic, **kw):
    kw.setdefault("chunk_records", 7)
    return IntoKstream(MirrorOptions(parse_endpoint(f"kafka:{bootstrap}"), parse_endpoint(f"cluster:{cluster}"), name,
                                     topics=(topic,), until_end=True, poll_timeout_s=0.2, **kw)).run()


def into_kafka(cluster, bootstrap, name, topic, **kw):
    kw.setdefault("chunk_records", 7)
    return IntoKafka(MirrorOptions(parse_endpoint(f"cluster:{cluster}"), parse_endpoint(f"kafka:{bootstrap}"), name,
                                   topics=(topic,), until_end=True, poll_timeout_s=0.2, **kw)).run()


def request(source, target, name, group=GROUP):
    return OffsetsRequest(parse_endpoint(source), parse_endpoint(target), name, group)


def translate(source, target, name, group=GROUP):
    with OffsetTranslator(request(source, target, name, group)) as translator:
        return translator.translate()


# -- Kafka -> kstream --------------------------------------------------------------------------

def test_kafka_to_kstream_a_translated_group_reads_exactly_the_records_it_had_not_read(
        kafka_broker, tmp_path, topic_name, mirror_name):
    create_kafka_topic(kafka_broker, topic_name, 2)
    first, aborted, last = sample(2, 40), sample(2, 10, salt="-aborted"), sample(2, 30, salt="-last")
    produce_kafka(kafka_broker, topic_name, first, transactional_id=f"{topic_name}-tx")  # markers: gaps in Kafka
    produce_kafka(kafka_broker, topic_name, aborted, transactional_id=f"{topic_name}-tx", commit=False)
    produce_kafka(kafka_broker, topic_name, last)
    committed = first + last
    consumed = {0: 25, 1: 33}  # 1 reads past the aborted transaction
    kafka_commit_after(kafka_broker, topic_name, GROUP, consumed)
    cluster = str(tmp_path / "c")
    into_kstream(kafka_broker, cluster, mirror_name, topic_name)  # chunks of 7: kstream markers, new gaps

    report = translate(f"kafka:{kafka_broker}", f"cluster:{cluster}", mirror_name)

    assert [r.how for r in report.rows] == [TRANSLATED, TRANSLATED]
    start = {r.partition: r.target_offset for r in report.rows}
    rest = read_kstream_from(cluster, topic_name, start)
    for p in (0, 1):
        assert rest[p] == values(committed, p)[consumed[p]:], p  # none re-read, none skipped


def test_kafka_to_kstream_in_one_chunk_is_the_identity_and_apply_commits_it_for_the_group(
        kafka_broker, tmp_path, topic_name, mirror_name):
    create_kafka_topic(kafka_broker, topic_name, 2)
    records = sample(2, 60)
    produce_kafka(kafka_broker, topic_name, records)
    kafka_commit_after(kafka_broker, topic_name, GROUP, {0: 10, 1: 29})
    cluster = str(tmp_path / "c")
    into_kstream(kafka_broker, cluster, mirror_name, topic_name, chunk_records=1000)
    with OffsetTranslator(request(f"kafka:{kafka_broker}", f"cluster:{cluster}", mirror_name)) as translator:
        report = translator.translate()
        assert [(r.source_offset, r.target_offset, r.how) for r in report.rows] == [(10, 10, IDENTITY),
                                                                                   (29, 29, IDENTITY)]
        applied = translator.apply(report)

    assert [what for _, what in applied] == ["set", "set"]
    with Consumer({"cluster": cluster, "group.id": GROUP, "enable.auto.commit": False}) as consumer:
        committed = consumer.committed([TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)])
    assert [tp.offset for tp in committed] == [10, 29]
    rest = read_kstream_from(cluster, topic_name, {0: 10, 1: 29})
    assert rest == {p: values(records, p)[n:] for p, n in ((0, 10), (1, 29))}


def test_apply_is_refused_while_the_group_has_an_active_member_and_never_moves_it_back(
        kafka_broker, tmp_path, topic_name, mirror_name):
    create_kafka_topic(kafka_broker, topic_name, 1)
    produce_kafka(kafka_broker, topic_name, sample(1, 20))
    kafka_commit_after(kafka_broker, topic_name, GROUP, {0: 5})
    cluster = str(tmp_path / "c")
    into_kstream(kafka_broker, cluster, mirror_name, topic_name)
    member = Consumer({"cluster": cluster, "group.id": GROUP, "enable.auto.commit": False})
    member.subscribe([topic_name])
    deadline = time.monotonic() + 30
    while not member.assignment():
        assert time.monotonic() < deadline, "the member did not join within 30s"
        member.poll(0.2)
    try:
        with OffsetTranslator(request(f"kafka:{kafka_broker}", f"cluster:{cluster}", mirror_name)) as translator:
            report = translator.translate()
            with pytest.raises(MirrorError, match=r"group 'etl' has 1 active member\(s\) .* stop its consumers"):
                translator.apply(report)
            member.commit(offsets=[TopicPartition(topic_name, 0, 12)], asynchronous=False)
    finally:
        member.close()

    with OffsetTranslator(request(f"kafka:{kafka_broker}", f"cluster:{cluster}", mirror_name)) as translator:
        kept = translator.apply(report)
        assert [what for _, what in kept] == ["kept 12 (the target group is ahead; --allow-backwards moves it back)"]
        moved = translator.apply(report, allow_backwards=True)
    assert [what for _, what in moved] == ["set (was 12)"]
    assert report.rows[0].target_offset < 12


# -- kstream -> Kafka --------------------------------------------------------------------------

def test_kstream_to_kafka_a_translated_group_reads_exactly_the_records_it_had_not_read(
        kafka_broker, tmp_path, topic_name, mirror_name):
    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 2)
    first, aborted, last = sample(2, 40), sample(2, 12, salt="-aborted"), sample(2, 30, salt="-last")
    produce_kstream(cluster, topic_name, first, transactional_id="tx")  # kstream markers: gaps in the source
    produce_kstream(cluster, topic_name, aborted, transactional_id="tx", commit=False)
    produce_kstream(cluster, topic_name, last)
    committed = first + last
    consumed = {0: 22, 1: 35}
    kstream_commit_after(cluster, topic_name, GROUP, consumed)
    into_kafka(cluster, kafka_broker, mirror_name, topic_name)

    report = translate(f"cluster:{cluster}", f"kafka:{kafka_broker}", mirror_name)

    start = {r.partition: r.target_offset for r in report.rows}
    assert [r.how for r in report.rows] == [TRANSLATED, TRANSLATED]
    rest = read_kafka_from(kafka_broker, topic_name, start)
    for p in (0, 1):
        assert rest[p] == values(committed, p)[consumed[p]:], p  # the mirror is the only writer: 0 re-read


def test_kstream_to_kafka_a_group_ahead_of_the_copy_is_clamped_and_apply_refused_with_a_member(
        kafka_broker, tmp_path, topic_name, mirror_name):
    from confluent_kafka import Consumer as KafkaConsumer

    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 1)
    copied, later = sample(1, 20), sample(1, 15, salt="-later")
    produce_kstream(cluster, topic_name, copied)
    into_kafka(cluster, kafka_broker, mirror_name, topic_name)
    produce_kstream(cluster, topic_name, later)  # not copied yet
    kstream_commit_after(cluster, topic_name, GROUP, {0: 28})

    report = translate(f"cluster:{cluster}", f"kafka:{kafka_broker}", mirror_name)

    (row,) = report.rows
    assert (row.source_offset, row.target_offset, row.how) == (28, 20, CLAMPED)
    assert "re-reads source 20..27" in row.note
    member = KafkaConsumer({"bootstrap.servers": kafka_broker, "group.id": GROUP, "auto.offset.reset": "earliest"})
    member.subscribe([topic_name])
    deadline = time.monotonic() + 60
    while not member.assignment():
        assert time.monotonic() < deadline, "the Kafka member did not join within 60s"
        member.poll(0.5)
    try:
        with OffsetTranslator(request(f"cluster:{cluster}", f"kafka:{kafka_broker}", mirror_name)) as translator:
            with pytest.raises(MirrorError, match=r"active member\(s\) on kafka:.*stop its consumers"):
                translator.apply(report)
    finally:
        member.close()
    into_kafka(cluster, kafka_broker, mirror_name, topic_name)  # the rest copied: the group re-reads 20..27
    assert read_kafka_from(kafka_broker, topic_name, {0: 20})[0] == values(later, 0)


def test_the_cli_prints_spark_json_the_reset_csv_and_says_what_it_could_not_translate(
        kafka_broker, tmp_path, topic_name, mirror_name):
    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 2)
    produce_kstream(cluster, topic_name, [r for r in sample(2, 30) if r[0] == 0])  # partition 1 stays empty
    kstream_commit_after(cluster, topic_name, GROUP, {0: 9})
    into_kafka(cluster, kafka_broker, mirror_name, topic_name)
    args = ["--cluster", cluster, "mirror", "offsets", "--group", GROUP, "--to", f"kafka:{kafka_broker}",
            "--name", mirror_name]
    runner = CliRunner()

    as_json = runner.invoke(cli, [*args, "--format", "json"])
    as_csv = runner.invoke(cli, [*args, "--format", "csv"])
    as_table = runner.invoke(cli, args)

    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == {topic_name: {"0": 9, "1": -2}}
    assert as_csv.stdout == f"{topic_name},0,9\n"
    assert f"{topic_name}[1] no committed offset" in as_csv.stderr
    assert as_table.stdout.splitlines()[1].split() == [topic_name, "0", "9", "9", IDENTITY]
    unknown = runner.invoke(cli, [*args[:-1], "nothing-here"])
    assert unknown.exit_code != 0 and "run the mirror first, with the same --name" in str(unknown.exception)


@pytest.mark.parametrize("seed", [1, 2])
def test_kstream_to_kafka_after_a_mirror_killed_and_rerun_the_translation_follows_the_rerun_copy(
        kafka_broker, tmp_path, topic_name, mirror_name, seed):
    """A mirror into Kafka SIGKILLed at a random moment sent some records twice (at least once);
    the rerun's syncs replace the killed run's from where it started again, so a consumer from
    the translation reads every record the group had not read, none it had, and twice only those
    the killed run sent past its last commit (any consumer of the topic reads those twice)."""
    import random
    import re
    import signal

    from tests.mirror.test_mirror_cli import mirror_process

    rng = random.Random(seed)
    cluster = str(tmp_path / "c")
    make_kstream_topic(cluster, topic_name, 2)
    records = sample(2, 3000)
    produce_kstream(cluster, topic_name, records[:1000], transactional_id="tx")
    produce_kstream(cluster, topic_name, records[1000:])
    consumed = {0: rng.randrange(100, 1400), 1: rng.randrange(100, 1400)}
    kstream_commit_after(cluster, topic_name, GROUP, consumed)
    args = ("--from", f"cluster:{cluster}", "--to", f"kafka:{kafka_broker}", "--topics", topic_name,
            "--name", mirror_name, "--until-end", "--chunk-records", "25", "--progress-interval", "0.1")
    killed = mirror_process(*args)
    for line in killed.stderr:
        if re.search(r": [1-9]\d* records", line):
            break
    time.sleep(rng.uniform(0, 0.3))
    killed.send_signal(signal.SIGKILL)
    killed.wait(30)
    rerun = mirror_process(*args)
    _, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err

    report = translate(f"cluster:{cluster}", f"kafka:{kafka_broker}", mirror_name)

    rest = read_kafka_from(kafka_broker, topic_name, {r.partition: r.target_offset for r in report.rows})
    for p in (0, 1):
        assert list(dict.fromkeys(rest[p])) == values(records, p)[consumed[p]:], (p, consumed[p])
        print(f"seed {seed} partition {p}: {len(rest[p]) - len(set(rest[p]))} read twice")
