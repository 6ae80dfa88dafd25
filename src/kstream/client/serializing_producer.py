"""``SerializingProducer``: a Producer that runs key and value serializers, as confluent-kafka's.

``SerializingProducer({"key.serializer": s, "value.serializer": s, ...})``:
each ``produce(topic, key=None, value=None, ...)`` calls the serializers with
a :class:`~kstream.serialization.SerializationContext` before queueing the
record; a serializer's failure raises ``KeySerializationError`` /
``ValueSerializationError`` (``ProduceError`` and ``SerializationError`` both)
from it, and nothing is queued. Without a serializer the key or value goes
through unchanged. Thread safety as :class:`~kstream.client.producer.Producer`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kstream.client.producer import DeliveryCallback, Producer
from kstream.error import KeySerializationError, ValueSerializationError
from kstream.serialization import MessageField, SerializationContext

SerializerFunction = Callable[[Any, SerializationContext], Any]


class SerializingProducer(Producer):
    """A Producer whose ``produce`` serializes key and value first (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any]):
        options = dict(conf)
        self._key_serializer: SerializerFunction | None = options.pop("key.serializer", None)
        self._value_serializer: SerializerFunction | None = options.pop("value.serializer", None)
        super().__init__(options)

    def produce(self, topic: str, key: Any = None, value: Any = None,  # type: ignore[override]
                partition: int | None = -1, on_delivery: DeliveryCallback | None = None,
                timestamp: int = 0, headers: Any = None) -> None:
        """Serialize ``key`` and ``value``, then queue the record (confluent-kafka's argument
        order: key before value, unlike ``Producer.produce``)."""
        ctx = SerializationContext(topic, MessageField.KEY, headers)
        if self._key_serializer is not None:
            try:
                key = self._key_serializer(key, ctx)
            except Exception as err:
                raise KeySerializationError(err) from err
        ctx.field = MessageField.VALUE
        if self._value_serializer is not None:
            try:
                value = self._value_serializer(value, ctx)
            except Exception as err:
                raise ValueSerializationError(err) from err
        super().produce(topic, value, key, partition=partition, on_delivery=on_delivery,
                        timestamp=timestamp, headers=headers)
