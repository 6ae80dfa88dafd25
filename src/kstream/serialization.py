"""Key and value (de)serializers with confluent-kafka's shapes (``confluent_kafka.serialization``).

A serializer turns a Python object into the bytes a record stores, a
deserializer turns them back; both are called as ``f(obj, ctx)`` with a
:class:`SerializationContext` naming the topic and whether the key or the
value is being handled. ``None`` stays ``None`` both ways (a null key or
value). A failure raises :class:`SerializationError` (a ``KafkaException``)
from the cause. The wire formats are confluent-kafka's: UTF-8 text, 32-bit
big-endian signed integers, 64-bit big-endian IEEE 754 doubles, so records
written by either library read the same in the other.

Schema Registry formats (Avro, Protobuf, JSON Schema) are not provided: a
typed topic (an Arrow schema) is kstream's way to store structured values.
"""

from __future__ import annotations

import struct
from typing import Any

from kstream.error import SerializationError


class MessageField:
    """Which part of a record a (de)serializer is handling."""

    NONE = "none"
    KEY = "key"
    VALUE = "value"


class SerializationContext:
    """What a (de)serializer is told: the ``topic``, the ``field`` (a :class:`MessageField`)
    and the record's ``headers``."""

    __slots__ = ("field", "headers", "topic")

    def __init__(self, topic: str, field: str, headers: Any = None):
        self.topic = topic
        self.field = field
        self.headers = headers


class Serializer:
    """Base class: ``serializer(obj, ctx)`` returns bytes or None."""

    __slots__: tuple[str, ...] = ()

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        raise NotImplementedError


class Deserializer:
    """Base class: ``deserializer(value, ctx)`` returns the object (or None)."""

    __slots__: tuple[str, ...] = ()

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> Any:
        raise NotImplementedError


class _StructSerializer(Serializer):
    _format: struct.Struct

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        try:
            return self._format.pack(obj)
        except struct.error as err:
            raise SerializationError(str(err)) from err


class _StructDeserializer(Deserializer):
    _format: struct.Struct

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> Any:
        if value is None:
            return None
        try:
            return self._format.unpack(value)[0]
        except struct.error as err:
            raise SerializationError(str(err)) from err


class IntegerSerializer(_StructSerializer):
    """An int as 4 bytes, big-endian, signed (Kafka's IntegerSerializer)."""

    _format = struct.Struct(">i")


class IntegerDeserializer(_StructDeserializer):
    """4 bytes, big-endian, signed, to an int."""

    _format = struct.Struct(">i")


class DoubleSerializer(_StructSerializer):
    """A float as 8 bytes, big-endian IEEE 754 (Kafka's DoubleSerializer)."""

    _format = struct.Struct(">d")


class DoubleDeserializer(_StructDeserializer):
    """8 bytes, big-endian IEEE 754, to a float."""

    _format = struct.Struct(">d")


class StringSerializer(Serializer):
    """A str as bytes in ``codec`` (default UTF-8)."""

    __slots__ = ("codec",)

    def __init__(self, codec: str = "utf_8"):
        self.codec = codec

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        try:
            return obj.encode(self.codec)
        except (AttributeError, LookupError, UnicodeError) as err:
            raise SerializationError(str(err)) from err


class StringDeserializer(Deserializer):
    """Bytes in ``codec`` (default UTF-8) to a str."""

    __slots__ = ("codec",)

    def __init__(self, codec: str = "utf_8"):
        self.codec = codec

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> str | None:
        if value is None:
            return None
        try:
            return value.decode(self.codec)
        except (AttributeError, LookupError, UnicodeError) as err:
            raise SerializationError(str(err)) from err


__all__ = [
    "Deserializer",
    "DoubleDeserializer",
    "DoubleSerializer",
    "IntegerDeserializer",
    "IntegerSerializer",
    "MessageField",
    "SerializationContext",
    "SerializationError",
    "Serializer",
    "StringDeserializer",
    "StringSerializer",
]
