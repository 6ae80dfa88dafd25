"""confluent-kafka names kstream refuses on purpose still import (ported code and upstream's
test helpers import and subclass them); using them raises NotSupportedError naming what
kstream offers instead."""

from __future__ import annotations

import pytest

import kstream
from kstream import KafkaError, KafkaException, NotSupportedError, ShareConsumer
from kstream.admin import _ElectionType, _TopicPartition
from kstream.avro import AvroConsumer, AvroProducer
from kstream.errors import AvroNotAvailableError


def test_share_consumer_imports_and_subclasses_but_refuses_to_build():
    class MyShareConsumer(ShareConsumer):
        def __init__(self, conf):
            super().__init__(conf)

    with pytest.raises(NotSupportedError, match=r"share groups, KIP-932.*consumer group") as info:
        MyShareConsumer({"group.id": "g"})
    assert info.value.args[0].code() == KafkaError._NOT_IMPLEMENTED
    assert "ShareConsumer" in kstream.__all__


@pytest.mark.parametrize("cls", [AvroProducer, AvroConsumer])
def test_legacy_avro_clients_refuse_as_not_supported_and_as_import_error(cls):
    conf = {"bootstrap.servers": "localhost:9092", "schema.registry.url": "http://localhost:8081"}
    with pytest.raises(AvroNotAvailableError, match=r"no Schema Registry: .*kstream\.serialization") as info:
        cls(conf)
    # Both: kstream's "not supported" (a KafkaException with _NOT_IMPLEMENTED) and the
    # ImportError confluent-kafka raises when its Avro support is not installed.
    assert isinstance(info.value, NotSupportedError) and isinstance(info.value, KafkaException)
    assert isinstance(info.value, ImportError)
    assert info.value.args[0].code() == KafkaError._NOT_IMPLEMENTED


def test_admin_underscore_aliases_are_the_model_types():
    assert _ElectionType is kstream.ElectionType
    assert _TopicPartition is kstream.TopicPartition
