"""Mirror heartbeats in the kstream cluster (kstream.mirror.status), no broker: what a run
writes, what a reader picks (each mirror's latest run), stale heartbeats, the failed state."""

from __future__ import annotations

import io

import pytest

from kstream import Admin, NewTopic
from kstream.mirror import MirrorError, MirrorOptions, parse_endpoint
from kstream.mirror.progress import Progress
from kstream.mirror.status import TOPIC, StatusWriter, heartbeats, read_statuses, run_base


def options(cluster, name="orders", **kw):
    return MirrorOptions(parse_endpoint(f"cluster:{cluster}"), parse_endpoint("kafka:localhost:9"), name,
                         topics=("orders",), progress_interval_s=2.0, timeout_s=5.0, **kw)


@pytest.fixture
def cluster(tmp_path):
    path = str(tmp_path / "c")
    with Admin({"cluster": path}) as admin:  # a cluster with the mirrored topic (the mirror's prepare made it)
        admin.create_topics([NewTopic("orders", 2)])["orders"].result()
    return path


def progress_at(records=0):
    progress = Progress("orders")
    progress.positions.update({("orders", 0): 10, ("orders", 1): 4})
    progress.ends.update({("orders", 0): 12, ("orders", 1): 4})
    progress.targets.update({("orders", 0): 30})
    progress.records = records
    return progress


def test_a_cluster_no_mirror_reported_to_has_no_status_topic_and_no_mirrors(cluster):
    assert read_statuses(cluster, 0) == []
    with Admin({"cluster": cluster}) as admin:
        assert TOPIC not in admin.list_topics().topics  # reading created nothing


def test_a_status_says_positions_ends_targets_and_lag_per_partition(cluster):
    writer = StatusWriter(cluster, run_base(options(cluster), "into-kafka"))
    try:
        writer.write("running", progress_at(records=7))
    finally:
        writer.close()
    [status] = read_statuses(cluster, 0)
    assert (status.mirror, status.direction, status.state, status.records) == ("orders", "into-kafka", "running", 7)
    assert (status.source, status.target, status.topics) == (f"cluster:{cluster}", "kafka:localhost:9", ("orders",))
    assert [(p.partition, p.source_position, p.source_end, p.target_position, p.lag) for p in status.partitions] == [
        (0, 10, 12, 30, 2), (1, 4, 4, None, 0)]
    assert status.total_lag() == 2
    assert status.stale_after_ms == 3 * 2000 + 2 * 5000


def test_a_running_mirror_whose_heartbeat_is_older_than_it_promised_is_stale(cluster):
    writer = StatusWriter(cluster, run_base(options(cluster), "into-kafka"))
    try:
        status = writer.write("running", progress_at())
    finally:
        writer.close()
    assert status.state_at(status.heartbeat_ms + status.stale_after_ms) == "running"
    assert status.state_at(status.heartbeat_ms + status.stale_after_ms + 1) == "stale"


def test_the_latest_run_of_each_mirror_wins_even_over_a_later_record_of_an_older_run(cluster):
    old = StatusWriter(cluster, {**run_base(options(cluster), "into-kafka"), "started_ms": 1_000, "run": "1000-1"})
    new = StatusWriter(cluster, {**run_base(options(cluster), "into-kafka"), "started_ms": 2_000, "run": "2000-2"})
    other = StatusWriter(cluster, run_base(options(cluster, name="clicks"), "into-kafka"))
    try:
        old.write("running", progress_at(1))
        new.write("running", progress_at(2))
        old.write("failed", progress_at(1), MirrorError("was fenced"))  # the fenced run's last words come after
        other.write("stopped", progress_at(3))
    finally:
        for writer in (old, new, other):
            writer.close()
    statuses = {s.mirror: s for s in read_statuses(cluster, 0)}
    assert (statuses["orders"].run, statuses["orders"].state, statuses["orders"].records) == ("2000-2", "running", 2)
    assert statuses["clicks"].state == "stopped"


def test_the_window_leaves_out_mirrors_that_did_not_report_since(cluster):
    writer = StatusWriter(cluster, run_base(options(cluster), "into-kafka"))
    try:
        status = writer.write("stopped", progress_at(), now_ms=10_000)
    finally:
        writer.close()
    assert read_statuses(cluster, 10_000) == [status]
    assert read_statuses(cluster, 10_001) == []


def test_heartbeats_report_running_at_each_tick_then_stopped(cluster):
    progress = Progress("orders", None, interval_s=0.0)
    with heartbeats(progress, cluster, options(cluster), "into-kstream"):
        assert read_statuses(cluster, 0)[0].state == "running"
        progress.copied(("orders", 0), 5, 5, target_next=9)
        progress.ends[("orders", 0)] = 8
        progress.maybe_print(None)  # a tick: no stream, the heartbeat alone
        [status] = read_statuses(cluster, 0)
        assert (status.state, status.records, status.partitions[0].target_position, status.total_lag()) == (
            "running", 5, 9, 3)
    [status] = read_statuses(cluster, 0)
    assert (status.state, status.records, status.error) == ("stopped", 5, None)
    assert progress.on_tick is None


def test_a_run_that_raises_is_reported_failed_with_its_error_and_the_error_is_raised(cluster):
    progress = Progress("orders", io.StringIO())
    with pytest.raises(MirrorError, match="broker gone"), heartbeats(progress, cluster, options(cluster),
                                                                    "into-kafka"):
        raise MirrorError("broker gone")
    [status] = read_statuses(cluster, 0)
    assert status.state == "failed" and status.error == "MirrorError: broker gone"


def test_a_record_that_is_not_a_status_is_an_error_naming_its_offset(cluster):
    from kstream import Producer

    StatusWriter(cluster, run_base(options(cluster), "into-kafka")).write("running", progress_at())
    with Producer({"cluster": cluster}) as producer:
        producer.produce(TOPIC, b"{not json", key=b"x/1", partition=0)
    with pytest.raises(MirrorError, match=rf"{TOPIC} offset 1: not a mirror status record"):
        read_statuses(cluster, 0)


def test_a_status_that_cannot_be_written_is_logged_and_tried_again_and_the_run_goes_on(cluster, monkeypatch, caplog):
    """The heartbeats never stop the copy (a status topic a log dir short of its replication
    factor cannot be made, chaos mirror_logdir_lost seed 1): logged once, tried again at each tick."""
    from kstream.mirror import status as status_module

    real = status_module.ensure_topic
    calls = []

    def broken(path):
        calls.append(path)
        raise MirrorError("cannot create the mirror status topic (test): replication_factor 3 needs 3 log dirs")

    monkeypatch.setattr(status_module, "ensure_topic", broken)
    progress = Progress("orders", io.StringIO())
    with heartbeats(progress, cluster, options(cluster), "into-kafka"):
        progress.on_tick(progress)  # a tick while the topic still cannot be made
        assert read_statuses(cluster, 0) == []
        monkeypatch.setattr(status_module, "ensure_topic", real)
        progress.on_tick(progress)  # the next tick makes it
        assert [s.state for s in read_statuses(cluster, 0)] == ["running"]
    assert len(calls) == 2
    assert [s.state for s in read_statuses(cluster, 0)] == ["stopped"]
    warnings = [r.getMessage() for r in caplog.records if "could not report its status" in r.getMessage()]
    assert len(warnings) == 1 and "replication_factor 3" in warnings[0]


def _produce_status(cluster, key, value):
    from kstream import Producer

    with Producer({"cluster": cluster}) as producer:
        producer.produce(TOPIC, value, key=key, partition=0)


def _good_doc(cluster):
    import json

    writer = StatusWriter(cluster, run_base(options(cluster), "into-kafka"))
    try:
        return json.loads(writer.write("running", progress_at()).to_json())
    finally:
        writer.close()


@pytest.mark.parametrize("field, bad", [("heartbeat_ms", "soon"), ("records", None), ("records_per_s", "fast"),
                                        ("stale_after_ms", 1.5), ("until_end", "yes"), ("mirror", 7),
                                        ("partitions", [{"topic": "orders", "partition": "0", "source_position": 1,
                                                         "source_end": 1, "target_position": None, "lag": 0}]),
                                        ("topics", "orders"), ("error", 3)])
def test_a_status_record_of_the_wrong_types_is_an_error_naming_its_offset_and_field(cluster, field, bad):
    """Well-formed JSON with a field of another type (a record someone else produced) is refused
    when read, never passed on to the console (whose page then failed with a 500)."""
    import json

    doc = _good_doc(cluster)
    doc[field] = bad
    _produce_status(cluster, b"orders/1-1", json.dumps(doc).encode())
    with pytest.raises(MirrorError, match=rf"{TOPIC} offset 1: not a mirror status record.*{field}"):
        read_statuses(cluster, 0)


def test_a_status_record_without_key_or_value_is_an_error_not_skipped(cluster):
    _good_doc(cluster)
    _produce_status(cluster, None, b"{}")
    with pytest.raises(MirrorError, match=rf"{TOPIC} offset 1: not a mirror status record \(no key\)"):
        read_statuses(cluster, 0)


def test_a_bad_status_record_says_what_to_do_and_stays_stored(cluster):
    from kstream import Consumer, TopicPartition

    _good_doc(cluster)
    _produce_status(cluster, b"x/1", b"[1, 2]")
    with pytest.raises(MirrorError, match=r"offset 1: not a mirror status record \(a JSON list, not an object\)"
                       ) as raised:
        read_statuses(cluster, 0)
    assert "only `kstream mirror` writes" in str(raised.value)
    assert f"kstream topics delete {TOPIC}" in str(raised.value)
    with Consumer({"cluster": cluster}) as consumer:  # nothing removed or rewritten
        consumer.assign([TopicPartition(TOPIC, 0, 1)])
        batch = consumer.poll_batch(10, 5.0)
    assert batch.column("offset").to_pylist() == [1] and batch.column("value")[0].as_py() == b"[1, 2]"


def test_a_status_record_over_its_size_limit_is_refused_before_it_is_parsed(cluster, monkeypatch):
    from kstream.mirror import status as status_module

    doc = _good_doc(cluster)
    monkeypatch.setattr(status_module, "MAX_STATUS_BYTES", 2_000)
    import json

    _produce_status(cluster, b"orders/1-1", json.dumps({**doc, "error": "x" * 3_000}).encode())
    with pytest.raises(MirrorError, match=rf"{TOPIC} offset 1: .* bytes, more than a status record holds \(2000"):
        read_statuses(cluster, 0)


def test_a_status_over_thousands_of_long_topic_names_stays_within_its_size_limit(cluster):
    """The topics list is the listed partitions' (a pattern over more partitions than a document
    lists could make it grow without bound); the record fits MAX_STATUS_BYTES."""
    from kstream.mirror.status import MAX_STATUS_BYTES, MAX_STATUS_PARTITIONS, build_status

    progress = Progress("orders")
    for i in range(MAX_STATUS_PARTITIONS + 3_000):
        tp = ("t" * 240 + f"{i:08d}", 0)
        progress.positions[tp] = 10**15
        progress.ends[tp] = 10**15 + 1
        progress.targets[tp] = 10**15
    status = build_status(run_base(options(cluster), "into-kafka"), "running", progress)
    assert len(status.partitions) == MAX_STATUS_PARTITIONS and status.partitions_left_out == 3_000
    assert len(status.topics) == MAX_STATUS_PARTITIONS
    assert len(status.to_json()) <= MAX_STATUS_BYTES


def test_a_read_that_gets_nothing_before_the_end_is_an_error_naming_where_it_stopped(cluster, monkeypatch):
    """poll_batch returning nothing short of the end the read took (a transaction holding
    read_committed back, a failing disk) fails the read naming the topic, the position and the
    end, rather than answer from part of the topic (before: the statuses read so far, [] here)."""
    from kstream import Consumer
    from kstream.mirror import status as status_module

    _good_doc(cluster)
    _produce_status(cluster, b"x/1", b"{}")  # the read must stop before this bad record to pass
    monkeypatch.setattr(status_module, "READ_POLL_TIMEOUT_S", 0.01)
    polls = []

    def nothing(self, max_records=None, timeout=None):
        polls.append(timeout)
        return None

    monkeypatch.setattr(Consumer, "poll_batch", nothing)
    with pytest.raises(MirrorError, match=rf"{TOPIC}: reading the mirror statuses stopped at offset 0, before the "
                                          r"end 2: 3 polls of 0.01 s each returned nothing"):
        read_statuses(cluster, 0)
    assert polls == [0.01] * status_module.MAX_EMPTY_POLLS


def test_aborted_records_and_markers_at_the_end_are_read_past_not_an_error(cluster):
    """Records no read_committed read hands out (an aborted transaction and its markers) at the
    end of the topic: the read's position moves past them, and it answers."""
    from kstream import Producer

    _good_doc(cluster)
    with Producer({"cluster": cluster, "transactional.id": "status-test"}) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.produce(TOPIC, b"{}", key=b"x/1", partition=0)
        producer.flush()
        producer.abort_transaction()
    [status] = read_statuses(cluster, 0)
    assert status.mirror == "orders"
