"""confluent-kafka's error model and value types on kstream (issue 11).

Every kstream error is a ``KafkaException`` carrying a librdkafka code; ``KafkaError``
has librdkafka's table; ``Message``, ``TopicPartition``, ``Messages`` and the
serializers keep confluent-kafka's shapes.
"""

from __future__ import annotations

import pickle

import pytest

import kstream
import kstream.errors as errors_module
from kstream import (
    OFFSET_INVALID,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    KafkaError,
    KafkaException,
    KStreamError,
    Message,
    Messages,
    NotSupportedError,
    TopicNotFoundError,
    TopicPartition,
)
from kstream.error import ConsumeError, KeySerializationError, ProduceError, SerializationError, code_of
from kstream.errors import CorruptBatchError, NotEnoughReplicasError
from kstream.log.cluster.cluster import Cluster
from kstream.message import MessageSource
from kstream.serialization import (
    DoubleDeserializer,
    DoubleSerializer,
    IntegerDeserializer,
    IntegerSerializer,
    MessageField,
    SerializationContext,
    StringDeserializer,
    StringSerializer,
)


def all_error_classes() -> list[type[KStreamError]]:
    found, todo = [], [KStreamError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


# -- KafkaError: librdkafka's table -----------------------------------------------------------


@pytest.mark.parametrize(("name", "code"), [
    ("_BAD_MSG", -199), ("_TRANSPORT", -195), ("_MSG_TIMED_OUT", -192), ("_PARTITION_EOF", -191),
    ("_UNKNOWN_PARTITION", -190), ("_ALL_BROKERS_DOWN", -187), ("_INVALID_ARG", -186),
    ("_TIMED_OUT", -185), ("_STATE", -172), ("_NOT_IMPLEMENTED", -170), ("_NO_OFFSET", -168),
    ("_PURGE_QUEUE", -152), ("_PURGE_INFLIGHT", -151), ("_FENCED", -144), ("UNKNOWN", -1),
    ("NO_ERROR", 0), ("OFFSET_OUT_OF_RANGE", 1), ("UNKNOWN_TOPIC_OR_PART", 3),
    ("MSG_SIZE_TOO_LARGE", 10), ("NOT_ENOUGH_REPLICAS", 19), ("REBALANCE_IN_PROGRESS", 27),
    ("TOPIC_ALREADY_EXISTS", 36), ("INVALID_PARTITIONS", 37), ("INVALID_CONFIG", 40),
    ("KAFKA_STORAGE_ERROR", 56), ("MEMBER_ID_REQUIRED", 79), ("UNKNOWN_TOPIC_ID", 100),
])
def test_codes_are_librdkafkas(name, code):
    assert getattr(KafkaError, name) == code
    assert KafkaError(code).name() == name
    assert code_of(name) == code


def test_every_named_code_has_librdkafkas_description_and_a_unique_value():
    codes = {name: value for name, value in vars(KafkaError).items()
             if isinstance(value, int) and name.lstrip("_").isupper()}
    assert len(set(codes.values())) == len(codes)
    for name, value in codes.items():
        if name not in ("_BEGIN", "_END"):
            assert KafkaError(value).str() != f"Err-{value}?", name
    assert KafkaError(KafkaError._MSG_TIMED_OUT).str() == "Local: Message timed out"


def test_kafka_error_equals_its_int_code_and_other_errors_with_it():
    err = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, "no such topic")
    assert err == 3 and err != 4 and 3 == err
    assert err == KafkaError(3) and hash(err) == hash(KafkaError(3))
    assert {err: "x"}[KafkaError(3, "other reason")] == "x"
    assert KafkaError(-191) < err <= 3 and err > -191
    assert err != "3"


def test_kafka_error_text_and_flags_are_confluents():
    err = KafkaError(KafkaError._STATE, fatal=True, retriable=False, txn_requires_abort=True)
    assert err.str() == "Local: Erroneous state"
    assert (err.fatal(), err.retriable(), err.txn_requires_abort()) == (True, False, True)
    assert repr(err) == 'KafkaError{FATAL,code=_STATE,val=-172,str="Local: Erroneous state"}'
    unknown = KafkaError(12345)
    assert (unknown.name(), unknown.str()) == ("ERR_12345?", "Err-12345?")


def test_kafka_error_still_takes_the_cause_third_for_kstreams_own_callers():
    cause = ValueError("bad")
    err = KafkaError(KafkaError._BAD_MSG, "corrupt", cause)
    assert err.exception is cause and err.fatal() is False


# -- KStreamError: a KafkaException with a code -----------------------------------------------


@pytest.mark.parametrize("cls", all_error_classes(), ids=lambda c: c.__name__)
def test_every_kstream_error_is_a_kafka_exception_with_its_named_code(cls):
    if cls is CorruptBatchError:
        err = cls("bad crc", path="/x", position=7)
    else:
        err = cls("what went wrong")
    assert isinstance(err, KafkaException)
    assert isinstance(err.args[0], KafkaError)
    assert err.args[0].code() == getattr(KafkaError, cls.error_name)
    assert err.args[0].name() == cls.error_name
    assert str(err).startswith("bad crc" if cls is CorruptBatchError else "what went wrong")


def test_except_kafka_exception_catches_a_real_missing_topic(tmp_path):
    cluster = Cluster.open(str(tmp_path / "c"), {}, create=True)
    try:
        with pytest.raises(KafkaException) as caught:
            cluster.topic("nosuchtopic")
    finally:
        cluster.close()
    assert isinstance(caught.value, TopicNotFoundError)
    assert caught.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert "nosuchtopic" in str(caught.value)  # kstream's readable message, not the repr
    assert repr(caught.value).startswith("TopicNotFoundError(") and "UNKNOWN_TOPIC_OR_PART" in repr(
        caught.value)


def test_error_flags_come_from_the_class():
    err = NotEnoughReplicasError("2 of 3 in sync")
    assert err.args[0].retriable() is True and err.args[0].fatal() is False
    assert NotSupportedError("ACLs").args[0] == KafkaError._NOT_IMPLEMENTED


def test_a_kstream_error_built_from_a_kafka_error_keeps_it():
    err = TopicNotFoundError(KafkaError(KafkaError._UNKNOWN_TOPIC, "gone"))
    assert err.args[0].code() == KafkaError._UNKNOWN_TOPIC and str(err) == "gone"


def test_a_class_naming_an_unknown_code_is_refused_when_defined():
    with pytest.raises(TypeError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        type("Typo", (KStreamError,), {"error_name": "UNKNOWN_TOPIC_OR_PARTITION"})


def test_errors_survive_pickling_with_code_message_and_fields():
    err = CorruptBatchError("crc mismatch", path="/d/00.log", position=42, offset=7)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is CorruptBatchError and str(back) == str(err)
    assert (back.path, back.position, back.offset) == ("/d/00.log", 42, 7)
    assert back.args[0] == KafkaError._BAD_MSG
    plain = pickle.loads(pickle.dumps(TopicNotFoundError("no topic t")))
    assert str(plain) == "no topic t" and plain.args[0] == 3


def test_errors_module_classes_all_name_codes():
    for value in vars(errors_module).values():
        if isinstance(value, type) and issubclass(value, KStreamError):
            code_of(value.error_name)


def test_client_errors_have_confluents_shapes():
    ce = ConsumeError(KafkaError(KafkaError._PARTITION_EOF), exception=ValueError("x"), kafka_message="m")
    assert (ce.code, ce.name, ce.kafka_message) == (-191, "_PARTITION_EOF", "m")
    pe = ProduceError(KafkaError(KafkaError.INVALID_CONFIG))
    assert pe.code == 40 and isinstance(pe, KafkaException)
    ke = KeySerializationError(ValueError("not bytes"))
    assert isinstance(ke, SerializationError) and ke.code == KafkaError._KEY_SERIALIZATION
    assert ke.args[0].str() == "not bytes"


# -- Message, Messages, TopicPartition ----------------------------------------------------------


def test_message_keyword_and_positional_construction():
    m = Message(topic="t", partition=1, offset=2, key=b"k", value=b"v", headers=[("h", b"1")],
                error=None, timestamp=(TIMESTAMP_CREATE_TIME, 99), latency=0.5, leader_epoch=3)
    assert (m.topic(), m.partition(), m.offset(), m.key(), m.value()) == ("t", 1, 2, b"k", b"v")
    assert m.timestamp() == (TIMESTAMP_CREATE_TIME, 99) and m.latency() == 0.5 and m.leader_epoch() == 3
    assert Message("t", 1, 2, b"k", b"v", None, None, (0, 0), -1.0, -1) == Message(
        topic="t", partition=1, offset=2, key=b"k", value=b"v")
    empty = Message()
    assert empty.timestamp() == (TIMESTAMP_NOT_AVAILABLE, 0) and empty.offset() is None
    negative = Message(partition=-1, offset=-1, latency=-1.0, leader_epoch=-5)
    assert (negative.partition(), negative.offset(), negative.latency(), negative.leader_epoch()) == (
        None, None, None, None)
    assert len(Message(value=b"abc")) == 3 and len(Message()) == 0


def test_message_setters_do_not_touch_batch_mates():
    source = MessageSource("t", 0, TIMESTAMP_CREATE_TIME)
    a, b = Message((source, 0, b"k0", b"v0", None, 10)), Message((source, 1, b"k1", b"v1", None, 11))
    a.set_topic("other")
    a.set_error(KafkaError(KafkaError._PARTITION_EOF))
    a.set_value(b"changed")
    assert (a.topic(), a.error(), a.value()) == ("other", -191, b"changed")
    assert (b.topic(), b.error(), b.value()) == ("t", None, b"v1")


def test_message_equality_and_pickling():
    m = Message(topic="t", partition=0, offset=5, value=b"v", error=KafkaError(0))
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back.error() == 0
    assert m != Message(topic="t", partition=0, offset=6, value=b"v", error=KafkaError(0))
    assert m != "not a message"


def test_messages_is_a_read_only_sequence():
    items = [Message(topic="t", offset=i) for i in range(3)]
    batch = Messages(items)
    assert len(batch) == batch.count() == 3 and batch[1] is items[1]
    assert isinstance(batch[1:], Messages) and list(batch[1:]) == items[1:]
    copy = batch.records()
    copy.clear()
    assert batch.count() == 3 and not hasattr(batch, "append")
    assert Messages().is_empty() and repr(Messages()) == "Messages([])"


def test_topic_partition_compares_topic_and_partition_only_as_confluent():
    assert TopicPartition("t", 0, 5) == TopicPartition("t", 0)
    assert TopicPartition("t", 0, 5) in [TopicPartition("t", 0, OFFSET_INVALID)]
    assert hash(TopicPartition("t", 1, 5)) == hash(TopicPartition("t", 1))
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 2), TopicPartition("a", 1)]) == [
        TopicPartition("a", 1), TopicPartition("a", 2), TopicPartition("b", 0)]
    assert TopicPartition("aa", 13) >= TopicPartition("aa", 12) > TopicPartition("a", 99)
    assert repr(TopicPartition("t", 2, 7, leader_epoch=4)) == (
        "TopicPartition{topic=t,partition=2,offset=7,leader_epoch=4,error=None}")


# -- serialization, versions ---------------------------------------------------------------------


def test_serializers_use_kafkas_wire_formats():
    ctx = SerializationContext("t", MessageField.VALUE)
    assert IntegerSerializer()(-2, ctx) == b"\xff\xff\xff\xfe"
    assert IntegerDeserializer()(b"\xff\xff\xff\xfe", ctx) == -2
    assert DoubleDeserializer()(DoubleSerializer()(1.5, ctx), ctx) == 1.5
    assert StringDeserializer()(StringSerializer()("Jämtland", ctx), ctx) == "Jämtland"
    assert StringSerializer()(None, ctx) is None and IntegerDeserializer()(None, ctx) is None


def test_a_failing_serializer_raises_serialization_error_from_the_cause():
    with pytest.raises(SerializationError) as caught:
        IntegerSerializer()(2**40)
    assert isinstance(caught.value, KafkaException) and caught.value.__cause__ is not None
    with pytest.raises(SerializationError):
        StringDeserializer()(b"\xff\xfe")


def test_versions_have_confluents_shape():
    text, number = kstream.version()
    assert text == kstream.__version__ and number > 0
    lib_text, lib_number = kstream.libversion()
    assert lib_text.endswith("-kstream") and lib_number >= 0x000B0500  # librdkafka-era feature gates


def test_batch_wide_latency_and_leader_epoch_come_from_the_source_and_survive_setters():
    class FetchedSource(MessageSource):
        __slots__ = ("leader_epoch",)

        def __init__(self, leader_epoch):
            super().__init__("t", 0, TIMESTAMP_CREATE_TIME)
            self.leader_epoch = leader_epoch

    m = Message((FetchedSource(7), 3, None, b"v", None, 0))
    assert m.leader_epoch() == 7 and m.latency() is None
    m.set_topic("renamed")
    assert (m.topic(), m.leader_epoch()) == ("renamed", 7)


def test_serializing_producer_and_deserializing_consumer_round_trip(cluster_path, make_topic):
    from kstream import DeserializingConsumer, SerializingProducer
    from kstream.error import ValueSerializationError

    make_topic("t", 1)
    producer = SerializingProducer({"cluster": cluster_path, "key.serializer": StringSerializer(),
                                    "value.serializer": IntegerSerializer()})
    producer.produce("t", key="k", value=7)
    with pytest.raises(ValueSerializationError):
        producer.produce("t", key="k", value="not an int")
    producer.flush()
    consumer = DeserializingConsumer({"cluster": cluster_path, "key.deserializer": StringDeserializer(),
                                      "value.deserializer": IntegerDeserializer()})
    consumer.assign([TopicPartition("t", 0, kstream.OFFSET_BEGINNING)])
    message = consumer.poll(5)
    assert (message.key(), message.value(), message.offset()) == ("k", 7, 0)
    assert consumer.poll(0.2) is None  # the record that failed to serialize was never queued
    with pytest.raises(NotImplementedError):
        consumer.consume()
    consumer.close()
