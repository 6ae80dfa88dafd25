"""``DeserializingConsumer``: a Consumer that runs key and value deserializers, as confluent-kafka's.

``DeserializingConsumer({"key.deserializer": d, "value.deserializer": d, ...})``:
``poll()`` returns the next message with its key and value deserialized (the
deserializers get a :class:`~kstream.serialization.SerializationContext`); a
message that carries an error raises ``ConsumeError`` instead, and a failing
deserializer raises ``KeyDeserializationError`` / ``ValueDeserializationError``
with the raw message in ``kafka_message``. ``consume()`` is not available, as
in confluent-kafka (batches and deserializers do not mix there either; use
``Consumer.consume`` or ``poll_batch``). Thread safety as
:class:`~kstream.client.consumer.Consumer`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kstream.client.consumer import Consumer
from kstream.error import ConsumeError, KeyDeserializationError, ValueDeserializationError
from kstream.message import Message
from kstream.serialization import MessageField, SerializationContext

DeserializerFunction = Callable[[Any, SerializationContext], Any]


class DeserializingConsumer(Consumer):
    """A Consumer whose ``poll`` deserializes key and value (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any]):
        options = dict(conf)
        self._key_deserializer: DeserializerFunction | None = options.pop("key.deserializer", None)
        self._value_deserializer: DeserializerFunction | None = options.pop("value.deserializer", None)
        super().__init__(options)

    def poll(self, timeout: float | None = None) -> Message | None:
        """The next message, deserialized; None if none arrives within ``timeout``."""
        message = super().poll(timeout)
        if message is None:
            return None
        error = message.error()
        if error is not None:
            raise ConsumeError(error, kafka_message=message)
        topic = message.topic()
        assert topic is not None  # a consumed record always has its topic
        ctx = SerializationContext(topic, MessageField.VALUE, message.headers())
        if self._value_deserializer is not None:
            try:
                message.set_value(self._value_deserializer(message.value(), ctx))
            except Exception as err:
                raise ValueDeserializationError(err, message) from err
        ctx.field = MessageField.KEY
        if self._key_deserializer is not None:
            try:
                message.set_key(self._key_deserializer(message.key(), ctx))
            except Exception as err:
                raise KeyDeserializationError(err, message) from err
        return message

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Not available with deserializers (as in confluent-kafka): use poll()."""
        raise NotImplementedError("DeserializingConsumer.consume() is not available: "
                                  "use poll(), or a plain Consumer's consume()")
