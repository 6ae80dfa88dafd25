"""kstream.Table: lookups of the latest value per key in a compacted topic (docs/TABLES.md)."""

from __future__ import annotations

import os
import re
import time

import pyarrow as pa
import pytest

from helpers import file_tree, metadata_dump
from kstream import ConfigError, OffsetOutOfRangeError, Producer, Table, TopicNotFoundError
from kstream.client.partitioner import partition_for_key
from kstream.errors import KStreamError, ValueTooLargeError
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt

COMPACT = {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"}


def produce(cluster_path, records, topic="t"):
    """(key, value) records in order, one frame each (so segments roll and the cleaner has work)."""
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for key, value in records:
            producer.produce(topic, value, key=key)
            producer.flush()


def clean(cluster_path, topic="t"):
    cluster = Cluster.open(cluster_path)
    try:
        return cluster.clean_topic(topic, force=True)
    finally:
        cluster.close()


def test_get_answers_the_latest_value_and_none_for_absent_and_deleted_keys(cluster_path, make_topic):
    make_topic("t", partitions=3, config=COMPACT)
    produce(cluster_path, [(b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (b"c", b"4"), (b"c", None)])
    with Table({"cluster": cluster_path}, "t") as table:
        message = table.get(b"a")
        assert (message.key(), message.value(), message.topic()) == (b"a", b"3", "t")
        assert message.partition() == partition_for_key(b"a", 3)
        assert table.get("b").value() == b"2"  # a str key is its UTF-8 bytes, as produce() takes it
        assert table.get(b"c") is None  # its latest record is a tombstone
        assert table.get(b"nope") is None
        assert {k: m.value() for k, m in table.get_many([b"a", "b", b"c", b"nope"]).items()} == {b"a": b"3", "b": b"2"}


def test_a_table_sees_what_is_written_after_it_opened_and_across_cleans(cluster_path, make_topic):
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"k%d" % (i % 5), b"v%d" % i) for i in range(40)])
    with Table(cluster_path, "t") as table:
        assert table.get(b"k1").value() == b"v36"
        produce(cluster_path, [(b"k1", b"new"), (b"k2", None)])
        assert [r.cleaned for r in clean(cluster_path)] == [True]
        assert table.get(b"k1").value() == b"new"
        assert table.get(b"k2") is None
        assert table.get(b"k3").value() == b"v38"
        assert table.get(b"k3").offset() == 38  # offsets survive cleaning


def test_the_offset_of_an_indexed_record_cleaned_away_is_found_again(cluster_path, make_topic):
    """The index points at k's record at offset 0; another writer replaces k and a clean removes
    offset 0 before the next lookup: the lookup reads on and answers the new value."""
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"k", b"old")] + [(b"x%d" % i, b"-") for i in range(20)])
    with Table(cluster_path, "t") as table:
        assert table.get(b"k").offset() == 0
        produce(cluster_path, [(b"k", b"new")] + [(b"y%d" % i, b"-") for i in range(20)])
        clean(cluster_path)
        index = table._indexes[0]
        assert index.offset_of(b"k") == 0  # not caught up yet
        assert index.record(0) is None  # gone from the log: the reader follows the cleaned files
        message = table._lookup(index, b"k")  # (a get() between its catch-up and its read)
        assert (message.offset(), message.value()) == (21, b"new")


def test_aborted_and_open_transactions_never_answer(cluster_path, make_topic):
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"k", b"committed")])
    with Producer({"cluster": cluster_path, "transactional.id": "ab"}) as aborted:
        aborted.init_transactions()
        aborted.begin_transaction()
        aborted.produce("t", b"aborted", key=b"k")
        aborted.produce("t", b"aborted", key=b"new")
        aborted.abort_transaction()
    with Table(cluster_path, "t") as table:
        assert table.get(b"k").value() == b"committed" and table.get(b"new") is None
        with Producer({"cluster": cluster_path, "transactional.id": "op"}) as open_txn:
            open_txn.init_transactions()
            open_txn.begin_transaction()
            open_txn.produce("t", b"open", key=b"k")
            open_txn.flush()
            assert table.get(b"k").value() == b"committed"  # not committed yet
            open_txn.commit_transaction()
        assert table.get(b"k").value() == b"open"


def test_as_of_is_a_snapshot_below_the_given_offsets(cluster_path, make_topic):
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"k", b"v0"), (b"k", b"v1"), (b"j", b"x"), (b"k", None)])
    answers = {}
    for as_of in range(5):
        with Table(cluster_path, "t", as_of={0: as_of}) as table:
            assert table.as_of == {0: as_of}
            answers[as_of] = tuple(None if m is None else m.value() for m in (table.get(b"k"), table.get(b"j")))
            produce(cluster_path, [(b"k", b"later")]) if as_of == 4 else None
            assert table.get(b"k") is None if as_of == 4 else True  # a snapshot does not move
    assert answers == {0: (None, None), 1: (b"v0", None), 2: (b"v1", None), 3: (b"v1", b"x"), 4: (None, b"x")}


def test_as_of_past_the_lso_or_below_the_cleaned_part_is_refused(cluster_path, make_topic):
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"k%d" % (i % 3), b"v%d" % i) for i in range(30)])
    with Table(cluster_path, "t", as_of={0: 31}) as table, pytest.raises(OffsetOutOfRangeError, match="past"):
        table.get(b"k0")
    (done,) = clean(cluster_path)
    assert done.cleaned and done.end_offset > 5
    with Table(cluster_path, "t", as_of={0: 5}) as table, \
            pytest.raises(OffsetOutOfRangeError, match=f"below offset {done.end_offset}, where the log cleaner"):
        table.get(b"k0")
    with Table(cluster_path, "t", as_of={0: done.end_offset}) as table:
        assert table.get(b"k0") is not None


def _damage_checkpoint(cluster_path, topic="t") -> str:
    """Overwrite partition 0's cleaner-offset-checkpoint with words, not an offset. Its path."""
    cluster = Cluster.open(cluster_path)
    try:
        path = os.path.join(cluster.partition(topic, 0).leader_dir, fmt.CLEANER_CHECKPOINT_FILE)
    finally:
        cluster.close()
    with open(path, "w") as f:
        f.write("damaged\n")
    return path


def _damaged_words(path: str) -> str:
    return (rf"the log cleaner's checkpoint {re.escape(path)} holds 'damaged', not an offset: kstream writes it "
            r"whole, so it was damaged or edited, and a Table cannot tell .*; run `kstream topics clean t --force` "
            r".* do not delete it")


def test_as_of_with_a_damaged_cleaner_checkpoint_is_refused_naming_it(cluster_path, make_topic):
    """A damaged checkpoint is not "never cleaned": as_of below the cleaned part would answer
    from records the cleaner already reduced. Missing is never cleaned (as_of 5 answers)."""
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"k%d" % (i % 3), b"v%d" % i) for i in range(30)])
    (done,) = clean(cluster_path)
    assert done.cleaned and done.end_offset > 5
    path = _damage_checkpoint(cluster_path)
    for as_of in (5, done.end_offset):
        with Table(cluster_path, "t", as_of={0: as_of}) as table, \
                pytest.raises(KStreamError, match=_damaged_words(path)):
            table.get(b"k0")
    (again,) = clean(cluster_path)  # what the error asks: the clean writes the checkpoint whole again
    assert again.cleaned and again.end_offset == done.end_offset
    with Table(cluster_path, "t", as_of={0: 5}) as table, \
            pytest.raises(OffsetOutOfRangeError, match=f"below offset {done.end_offset}, where the log cleaner"):
        table.get(b"k0")
    with Table(cluster_path, "t", as_of={0: done.end_offset}) as table:
        assert table.get(b"k0") is not None


@pytest.mark.parametrize("as_of, message", [
    ({}, r"missing \[0, 1\]"),
    ({0: 1, 1: 1, 2: 1}, r"no such partition\(s\) \[2\]"),
    ({0: -1, 1: 0}, "must be an offset >= 0"),
    ([1, 2], "must be a dict"),
])
def test_bad_as_of_is_refused(cluster_path, make_topic, as_of, message):
    make_topic("t", partitions=2, config=COMPACT)
    with pytest.raises(ConfigError, match=message):
        Table(cluster_path, "t", as_of=as_of)


def test_a_typed_topic_answers_its_value_columns_and_null_columns_delete(cluster_path, make_topic):
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    make_topic("typed", partitions=2, config=COMPACT, schema=schema)
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("typed", {"id": 1, "name": "a"}, key=b"x")
        producer.produce_batch("typed", pa.table({"key": [b"y", b"x"], "id": [2, 3], "name": ["b", None]}))
        producer.produce("typed", {"id": None, "name": None}, key=b"y")  # a typed tombstone
        producer.flush()
    with Table(cluster_path, "typed") as table:
        assert table.get(b"x").value() == {"id": 3, "name": None}
        assert table.get(b"y") is None


@pytest.mark.parametrize("policy", ["delete", None])
def test_a_topic_that_is_not_compacted_is_refused(cluster_path, make_topic, policy):
    make_topic("d", config={"cleanup.policy": policy} if policy else None)
    with pytest.raises(ConfigError, match=r"cleanup.policy=delete.*a Table reads compacted topics only.*"
                                          r"kstream topics alter d --config cleanup.policy=compact"):
        Table(cluster_path, "d")


def test_compact_delete_topics_are_tables_too(cluster_path, make_topic):
    make_topic("t", config={**COMPACT, "cleanup.policy": "compact,delete"})
    produce(cluster_path, [(b"k", b"v")])
    with Table(cluster_path, "t") as table:
        assert table.get(b"k").value() == b"v"


def test_unknown_topic_and_missing_cluster(cluster_path, make_topic, tmp_path):
    make_topic("t", config=COMPACT)
    with pytest.raises(TopicNotFoundError):
        Table(cluster_path, "nope")
    with pytest.raises(ConfigError, match="takes only 'cluster'"):
        Table({"cluster": cluster_path, "group.id": "g"}, "t")
    missing = str(tmp_path / "none")
    with pytest.raises(Exception, match="no kstream cluster"):
        Table(missing, "t")
    assert not (tmp_path / "none").exists()


def test_a_table_creates_and_changes_no_file_and_no_metadata(cluster_path, make_topic):
    make_topic("t", partitions=2, config=COMPACT)
    produce(cluster_path, [(b"k%d" % i, b"v") for i in range(30)] + [(b"k1", None)])
    clean(cluster_path)
    produce(cluster_path, [(b"k2", b"w")])
    before, rows = file_tree(cluster_path), metadata_dump(cluster_path)
    with Table(cluster_path, "t") as table:
        lso = table.refresh()
        assert table.get(b"k2").value() == b"w" and table.get(b"k1") is None
        table.get_many([b"k%d" % i for i in range(40)])
    with Table(cluster_path, "t", as_of=lso) as table:
        assert table.get(b"k2").value() == b"w"
    assert file_tree(cluster_path) == before
    assert metadata_dump(cluster_path) == rows


def test_a_closed_table_refuses_calls_and_leaves_a_given_cluster_open(cluster_path, make_topic):
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"k", b"v")])
    cluster = Cluster.open(cluster_path)
    table = Table(cluster, "t")
    assert table.get(b"k").value() == b"v"
    table.close()
    table.close()  # twice is fine
    with pytest.raises(RuntimeError, match="Table closed"):
        table.get(b"k")
    assert cluster.topic("t").name == "t"  # still open
    cluster.close()


def test_max_keys_is_a_limit(cluster_path, make_topic):
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"k%d" % i, b"v") for i in range(5)])
    with Table(cluster_path, "t", max_keys=4) as table, pytest.raises(Exception, match="more than 4 keys"):
        table.get(b"k0")


def test_the_frame_cache_keeps_to_its_bytes_and_answers_the_same(cluster_path, make_topic):
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"k%d" % i, b"v%d" % i) for i in range(30)])
    with Table(cluster_path, "t") as table:
        table.refresh()
        index = table._indexes[0]
        index.frame_cache_bytes = 2000  # room for a few of these one-record frames
        for _ in range(2):
            for i in range(30):
                assert table.get(b"k%d" % i).value() == b"v%d" % i
                assert 0 < index._frame_bytes <= 2000 and 0 < len(index._frames) < 10
                assert index._frame_bases == sorted(index._frames)


def test_a_typed_value_past_decode_max_items_is_refused_with_what_to_do(cluster_path, make_topic):
    schema = pa.schema([pa.field("items", pa.list_(pa.int64()))])
    make_topic("typed", config=COMPACT, schema=schema)
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("typed", {"items": list(range(50))}, key=b"big")
        producer.produce("typed", {"items": [1]}, key=b"small")
        producer.flush()
    with Table(cluster_path, "typed", decode_max_items=10) as table:
        assert table.get(b"small").value() == {"items": [1]}
        with pytest.raises(ValueTooLargeError, match="more than 10 values.*raise decode_max_items"):
            table.get(b"big")


def test_a_clean_during_the_index_scan_does_not_lose_a_key(cluster_path, make_topic):
    """The scan reads segment by segment; after its first look another writer replaces k (whose
    record lies further on) and the cleaner, cleaning past the scan's end, drops k's old record
    from a segment the scan has not opened yet. The scan must read on to k's new record rather
    than end with k missing."""
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"x%d" % i, b"-") for i in range(10)] + [(b"k", b"old")]
            + [(b"y%d" % i, b"-") for i in range(10)])
    with Table(cluster_path, "t") as table:
        index = table._index(0)
        index.read_bytes = 1  # one frame a look: the clean comes between looks
        scan_notes = index._note_frames
        cleaned = []

        def note_then_clean(frames):
            scan_notes(frames)
            if not cleaned:
                produce(cluster_path, [(b"k", b"new")] + [(b"z%d" % i, b"-") for i in range(20)])
                cleaned.append(clean(cluster_path))

        index._note_frames = note_then_clean
        message = table.get(b"k")
        assert cleaned and cleaned[0][0].cleaned and cleaned[0][0].end_offset > 21
        assert message is not None and message.value() == b"new"


def test_a_clean_during_the_index_scan_with_a_damaged_checkpoint_is_refused_naming_it(cluster_path, make_topic):
    """As above, but the checkpoint is damaged after the clean: the scan cannot tell how far the
    clean reached, so it fails naming the file rather than end with k missing."""
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"x%d" % i, b"-") for i in range(10)] + [(b"k", b"old")]
            + [(b"y%d" % i, b"-") for i in range(10)])
    with Table(cluster_path, "t") as table:
        index = table._index(0)
        index.read_bytes = 1
        scan_notes = index._note_frames
        damaged = []

        def note_then_clean(frames):
            scan_notes(frames)
            if not damaged:
                produce(cluster_path, [(b"k", b"new")] + [(b"z%d" % i, b"-") for i in range(20)])
                assert clean(cluster_path)[0].cleaned
                damaged.append(_damage_checkpoint(cluster_path))

        index._note_frames = note_then_clean
        with pytest.raises(KStreamError, match=r"the log cleaner's checkpoint .* holds 'damaged', not an offset"):
            table.get(b"k")
        assert damaged


def test_a_clean_past_as_of_during_the_snapshot_scan_is_refused(cluster_path, make_topic):
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"x%d" % i, b"-") for i in range(10)] + [(b"k", b"old")]
            + [(b"y%d" % i, b"-") for i in range(10)])
    with Table(cluster_path, "t", as_of={0: 21}) as table:
        index = table._index(0)
        index.read_bytes = 1
        scan_notes = index._note_frames

        def note_then_clean(frames):
            scan_notes(frames)
            if frames[0].header.base_offset == 0:
                produce(cluster_path, [(b"k", b"new")] + [(b"z%d" % i, b"-") for i in range(20)])
                clean(cluster_path)

        index._note_frames = note_then_clean
        with pytest.raises(OffsetOutOfRangeError, match="as_of offset 21 is below offset"):
            table.get(b"k")


def test_a_transaction_past_its_deadline_reads_as_aborted_and_the_table_writes_nothing(cluster_path, make_topic):
    """Readers never write (docs/TRANSACTIONS.md): an open transaction whose producer died holds
    the LSO until its deadline; past it the Table reads it as aborted (what the expiry will
    write) and answers what follows, without writing the markers itself."""
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"k", b"before")])
    dead = Producer({"cluster": cluster_path, "transactional.id": "dead", "transaction.timeout.ms": 1000,
                     "linger.ms": 0})
    dead.init_transactions()
    dead.begin_transaction()
    dead.produce("t", b"never", key=b"k")
    dead.flush()
    opened = time.time()
    produce(cluster_path, [(b"j", b"after")])
    with Table(cluster_path, "t") as table:
        assert table.get(b"k").value() == b"before" and table.get(b"j") is None  # held by the LSO
        while time.time() < opened + 1.1:
            time.sleep(0.05)
        before = file_tree(cluster_path), metadata_dump(cluster_path)
        assert table.get(b"k").value() == b"before" and table.get(b"j").value() == b"after"
        assert (file_tree(cluster_path), metadata_dump(cluster_path)) == before
    dead.close()


def test_a_snapshot_whose_record_the_cleaner_removed_after_the_build_says_so(cluster_path, make_topic):
    make_topic("t", config=COMPACT)
    produce(cluster_path, [(b"k", b"old")] + [(b"x%d" % i, b"-") for i in range(20)])
    with Table(cluster_path, "t", as_of={0: 21}) as table:
        assert table.get(b"k").value() == b"old"
        produce(cluster_path, [(b"k", b"new")] + [(b"y%d" % i, b"-") for i in range(20)])
        clean(cluster_path)
        with pytest.raises(OffsetOutOfRangeError, match="as_of offset 21 is below offset"):
            table.get(b"k")
