"""A compacted topic refuses records without a key (Kafka's INVALID_RECORD, "Compacted topic
cannot accept message without key"), by every way of producing, and writes nothing of them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kstream import Consumer, Producer, TopicPartition
from kstream.errors import InvalidRecordError

COMPACT = {"cleanup.policy": "compact"}
MESSAGE = "Compacted topic cannot accept message without key"


def end_offset(cluster_path, topic, partition=0):
    with Consumer({"cluster": cluster_path}) as consumer:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition))[1]


@pytest.mark.parametrize("policy", ["compact", "compact,delete"])
def test_produce_refuses_a_record_without_a_key(cluster_path, make_topic, policy):
    make_topic("c", config={"cleanup.policy": policy})
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("c", b"v", key=b"k")
        with pytest.raises(InvalidRecordError, match=MESSAGE) as caught:
            producer.produce("c", b"v")
        assert f"cleanup.policy={policy}" in str(caught.value) and caught.value.error_name == "INVALID_RECORD"
        producer.produce("c", None, key=b"k")  # a tombstone has a key and no value: fine
        producer.flush()
    assert end_offset(cluster_path, "c") == 2


def test_a_delete_topic_still_takes_keyless_records(cluster_path, make_topic):
    make_topic("d")
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("d", b"v")
        producer.produce_batch("d", pa.table({"value": [b"a", b"b"]}))
        producer.flush()
    assert end_offset(cluster_path, "d") == 3


@pytest.mark.parametrize("table", [
    pa.table({"value": [b"a", b"b"]}),
    pa.table({"key": [b"x", None, b"y"], "value": [b"a", b"b", b"c"]}),
], ids=["no key column", "a null key"])
def test_produce_batch_refuses_a_table_with_a_keyless_row_and_writes_none_of_it(cluster_path, make_topic, table):
    make_topic("c", partitions=2, config=COMPACT)
    with Producer({"cluster": cluster_path}) as producer:
        with pytest.raises(InvalidRecordError, match=MESSAGE):
            producer.produce_batch("c", table)
        producer.flush()
    assert end_offset(cluster_path, "c", 0) == end_offset(cluster_path, "c", 1) == 0


def test_produce_batch_names_the_first_keyless_row(cluster_path, make_topic):
    make_topic("c", config=COMPACT)
    table = pa.table({"key": [b"x", b"y", None, None], "value": [b"a", b"b", b"c", b"d"]})
    with Producer({"cluster": cluster_path}) as producer, \
            pytest.raises(InvalidRecordError, match=r"row 2 of the batch \(2 of 4 rows without a key\)"):
        producer.produce_batch("c", table, partition=0)


def test_confluent_produce_batch_reports_keyless_records_one_by_one(cluster_path, make_topic):
    make_topic("c", config=COMPACT)
    messages = [{"value": b"a", "key": b"k"}, {"value": b"b"}]
    with Producer({"cluster": cluster_path}) as producer:
        assert producer.produce_batch("c", messages) == 1
        assert "_error" not in messages[0] and MESSAGE in str(messages[1]["_error"])
        producer.flush()
    assert end_offset(cluster_path, "c") == 1


def test_a_typed_compacted_topic_needs_its_key_column(cluster_path, make_topic):
    make_topic("typed", config=COMPACT, schema=pa.schema([pa.field("id", pa.int64())]))
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("typed", {"id": 1}, key=b"a")
        with pytest.raises(InvalidRecordError, match=MESSAGE):
            producer.produce("typed", {"id": 2})
        with pytest.raises(InvalidRecordError, match=MESSAGE):
            producer.produce_batch("typed", pa.table({"id": [3, 4]}))
        producer.produce_batch("typed", pa.table({"key": [b"b", b"c"], "id": [3, 4]}))
        producer.flush()
    assert end_offset(cluster_path, "typed") == 3


def test_altering_a_topic_to_compact_applies_to_producers_opened_after(cluster_path, admin, make_topic):
    from kstream.admin import ConfigResource

    make_topic("t")
    resource = ConfigResource("topic", "t", set_config=COMPACT)
    admin.alter_configs([resource])[resource].result()
    with Producer({"cluster": cluster_path}) as producer, pytest.raises(InvalidRecordError, match=MESSAGE):
        producer.produce("t", b"v")
