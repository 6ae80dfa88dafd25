"""How `kstream consume` prints a record: kafka-console-consumer's DefaultMessageFormatter.

The same ``--property`` (alias ``--formatter-property``) names and defaults as
Kafka's tool, so scripts that parse its output keep working:

========================  =========  ==================================================
property                  default    meaning
========================  =========  ==================================================
print.timestamp           false      ``CreateTime:<ms>`` / ``LogAppendTime:<ms>``
print.partition           false      ``Partition:<n>``
print.offset              false      ``Offset:<n>``
print.headers             false      ``k1:v1,k2:v2`` (``NO_HEADERS`` when none)
print.key                 false      the key
print.value               true       the value
key.separator             ``\\t``     between the printed fields
line.separator            ``\\n``     after each record
headers.separator         ``,``      between headers
null.literal              ``null``   printed for a null key, value or header value
========================  =========  ==================================================

Fields come in that order, each followed by ``key.separator`` except the last,
which is followed by ``line.separator``. A typed topic's value (a dict of its
columns) prints as JSON (binary columns as base64, as Spark's ``to_json``; timestamps,
dates and decimals as strings): the line `kstream produce` reads back. Unknown
properties are refused (a typo must not pass silently): kstream has no pluggable
deserializers, so ``key.deserializer`` and the like are refused too, naming what
is supported.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from kstream.errors import ConfigError
from kstream.message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME

_FLAGS = ("print.timestamp", "print.partition", "print.offset", "print.headers", "print.key", "print.value")
_STRINGS = ("key.separator", "line.separator", "headers.separator", "null.literal")
PROPERTIES = (*_FLAGS, *_STRINGS)
"""Every property the formatter takes (the rest are refused)."""


def parse_bool(name: str, value: str) -> bool:
    """``true``/``false`` (any case) as Kafka's tools read them; anything else is refused
    (Kafka reads it as false, which hides typos)."""
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"property {name}={value!r}: expected true or false")
    return text == "true"


def unescape(value: str) -> str:
    """``\\t``, ``\\n``, ``\\r`` and ``\\\\`` in a separator given on a command line (a shell
    passes them literally; Kafka's users write ``key.separator=$'\\t'`` or rely on this)."""
    return value.encode("latin-1", "backslashreplace").decode("unicode_escape")


@dataclass(frozen=True)
class MessageFormatter:
    """Formats one record as kafka-console-consumer's default formatter does.

    Immutable and stateless between records; safe to share.
    """

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> MessageFormatter:
        """From ``--property`` pairs; an unknown name or a bad boolean raises ConfigError."""
        unknown = sorted(set(properties) - set(PROPERTIES))
        if unknown:
            raise ConfigError(f"unknown formatter properties {unknown}; kstream's formatter takes "
                              f"{', '.join(PROPERTIES)} (no pluggable deserializers: typed topics "
                              "print their columns as JSON)")
        fields: dict[str, Any] = {}
        for name, value in properties.items():
            attribute = name.replace(".", "_")
            fields[attribute] = (parse_bool(name, value) if name in _FLAGS
                                 else unescape(value).encode())
        return cls(**fields)

    def write(self, message: Any, out: BinaryIO) -> None:
        """Write ``message`` (a kstream Message) and the line separator to ``out``."""
        fields: list[bytes] = []
        if self.print_timestamp:
            kind, ms = message.timestamp()
            names = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}
            fields.append(f"{names[kind]}:{ms}".encode() if kind in names else b"NO_TIMESTAMP")
        if self.print_partition:
            fields.append(f"Partition:{message.partition()}".encode())
        if self.print_offset:
            fields.append(f"Offset:{message.offset()}".encode())
        if self.print_headers:
            headers = message.headers() or []
            fields.append(self.headers_separator.join(
                key.encode() + b":" + self._bytes(value) for key, value in headers) or b"NO_HEADERS")
        if self.print_key:
            fields.append(self._bytes(message.key()))
        if self.print_value:
            fields.append(self._bytes(message.value()))
        out.write(self.key_separator.join(fields) + self.line_separator)

    def _bytes(self, value: Any) -> bytes:
        if value is None:
            return self.null_literal
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode()
        if isinstance(value, Mapping):  # a typed topic's row
            return json.dumps(dict(value), default=_json_value, separators=(",", ":")).encode()
        return str(value).encode()


def _json_value(item: Any) -> str:
    """A column value JSON has no type for: binary as base64, the rest (timestamps, dates,
    decimals) as their text."""
    if isinstance(item, bytes | bytearray | memoryview):
        return base64.b64encode(item).decode("ascii")
    return str(item)
