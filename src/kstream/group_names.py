"""Legal consumer group names (``group.id``), checked before anything is written.

Kafka takes any string as a group id (its Java consumer refuses an empty one
for group and commit calls). kstream keeps that, with the limits its storage
needs. A group's committed offsets are a partition of the offsets Delta
table, stored in a directory ``group=NAME`` with NAME URL-escaped (every byte
other than ASCII letters, digits and ``-._~`` becomes ``%XX``), and a file
name has at most 255 bytes; an empty name is stored as a null partition
value, which breaks every later commit and listing of every group. So a name
is 1 to 249 bytes once escaped (249 plain characters: Kafka's topic name
maximum), printable (no control characters) and not Hive's null marker.
A leaf module: the Consumer, the CLI, the Spark reader and the groups service
all check with it.
"""

from __future__ import annotations

import urllib.parse

from kstream.errors import ConfigError

MAX_GROUP_NAME_BYTES = 249
"""Longest escaped group name: ``group=`` plus it fills a 255-byte file name."""
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"  # a partition directory that Hive-style readers take as null


def check_group_name(name: object, what: str = "group") -> str:
    """``name`` if it is a legal group name, else a ConfigError saying why (``what``
    names where it came from, e.g. "option 'group.id'")."""
    if not isinstance(name, str):
        raise ConfigError(f"{what}: a group name is a string, got {type(name).__name__}")
    if not name:
        raise ConfigError(f"{what}: the group name is empty; give a name of 1 to "
                          f"{MAX_GROUP_NAME_BYTES} printable characters")
    escaped = len(urllib.parse.quote(name, safe=""))
    if escaped > MAX_GROUP_NAME_BYTES:
        raise ConfigError(
            f"{what}: group name {name[:40]!r}... is too long ({len(name)} characters, {escaped} "
            f"bytes escaped for a file name); at most {MAX_GROUP_NAME_BYTES} bytes, where ASCII "
            "letters, digits and '-._~' take 1 and every other character 3 per UTF-8 byte")
    if not name.isprintable():
        raise ConfigError(f"{what}: group name {name!r} has control or other unprintable "
                          "characters; use printable ones")
    if name == _HIVE_NULL:
        raise ConfigError(f"{what}: {name!r} is reserved (it means null in the offsets "
                          "table's partition directories); pick another group name")
    return name
