"""Options and schemas written as text, the way the CLI's arguments and the console's forms give them.

``--config K=V`` pairs and a typed topic's ``name:type,...`` schema: one parser each, shared by
``kstream`` (which turns a :class:`ConfigError` into a usage error) and the console.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from kstream.errors import ConfigError


def parse_pairs(pairs: Iterable[str], what: str) -> dict[str, str]:
    """`k=v` texts as a dict; a malformed one is a ConfigError naming ``what`` (the option) and it."""
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"{what}: {pair!r} is not key=value")
        result[key.strip()] = value.strip()
    return result


def parse_schema(text: str) -> pa.Schema:
    """A typed topic's schema from `name:type,...` (types: Arrow names, e.g. int64, string,
    float64, bool, binary, timestamp[ms], date32; a trailing `!` makes a column non-null)."""
    fields = []
    for part in text.split(","):
        name, sep, type_name = part.strip().partition(":")
        if not sep or not name:
            raise ConfigError(f"schema column {part!r} is not name:type")
        nullable = not type_name.endswith("!")
        type_name = type_name.rstrip("!")
        try:
            if type_name.startswith("timestamp[") and type_name.endswith("]"):
                data_type = pa.timestamp(type_name[len("timestamp["):-1])
            else:
                data_type = pa.type_for_alias(type_name)
        except ValueError as err:
            raise ConfigError(f"schema column {name!r}: unknown type {type_name!r}") from err
        fields.append(pa.field(name, data_type, nullable=nullable))
    return pa.schema(fields)
