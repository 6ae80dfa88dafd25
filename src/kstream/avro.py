"""``kstream.avro``: confluent-kafka's legacy Schema Registry clients, not supported by kstream.

confluent-kafka deprecated ``confluent_kafka.avro.AvroProducer`` / ``AvroConsumer``
in 2.0.2 (they talk to a Schema Registry over HTTP). kstream has no Schema
Registry. The names exist so that ported code imports; constructing one raises
:class:`~kstream.errors.AvroNotAvailableError`, a ``NotSupportedError`` that
is also an ``ImportError``: that is how confluent-kafka reports its Avro support
missing (without its ``avro`` extras the module does not import), so code that
falls back on ``except ImportError`` takes its fallback here too.

Instead: serialize values yourself with :mod:`kstream.serialization`
(``SerializingProducer`` / ``DeserializingConsumer`` with a serializer built on
fastavro), or read Avro payloads in Spark with ``from_avro`` on the source's
``value`` column.
"""

from __future__ import annotations

from typing import Any

from kstream.errors import AvroNotAvailableError

ALTERNATIVE = ("serialize with kstream.SerializingProducer / kstream.DeserializingConsumer and a "
               "kstream.serialization Serializer built on fastavro, or decode Avro in Spark with "
               "pyspark.sql.avro.functions.from_avro on the kstream source's value column")


class AvroProducer:
    """Importable; constructing one raises ``AvroNotAvailableError``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AvroNotAvailableError(_message("AvroProducer"))


class AvroConsumer:
    """Importable; constructing one raises ``AvroNotAvailableError``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AvroNotAvailableError(_message("AvroConsumer"))


def _message(name: str) -> str:
    return (f"kstream.avro.{name} (confluent-kafka's legacy Schema Registry client, deprecated "
            f"since confluent-kafka 2.0.2) is not supported by kstream, which has no Schema "
            f"Registry: {ALTERNATIVE}")
