"""kafka-reassign-partitions' JSON documents, read strictly: the plan and the topics-to-move file.

Python's ``int()`` reads ``true`` as 1 and a list comprehension reads the string
``"0"`` as ``[0]``, so a loosely read plan can move partitions nobody named.
Here every field has one JSON type: a partition number or a replica id is a JSON
integer (not a boolean, not 1.0), a topic is a string, ``replicas`` and
``log_dirs`` are lists. A document is at most :data:`MAX_DOCUMENT_BYTES`, and one
nested deeper than the JSON reader goes (a plan is 3 levels deep) is refused,
not a ``RecursionError``. Every refusal is a :class:`ConfigError` naming the
document, the field (``partitions[2].replicas[0]``), its value and what to give.
"""

from __future__ import annotations

import json
from typing import Any

from kstream.errors import ConfigError

MAX_DOCUMENT_BYTES = 64 << 20  # a plan of every partition of a large cluster is a few MiB
_SHOWN_CHARS = 60  # of a wrong value, in a message

# (topic, partition, replicas, log_dirs or None)
PlanEntry = tuple[str, int, list[int], list[str] | None]


def load_file(path: str, what: str) -> dict[str, Any]:
    """The JSON object in the file at ``path`` (``what``: the document's name, for messages)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the {what} ({err})") from err
    return parse_text(data, path, what)


def parse_text(text: str | bytes, source: str, what: str) -> dict[str, Any]:
    """The version 1 JSON object of ``text``; ConfigError saying what is wrong."""
    if len(text) > MAX_DOCUMENT_BYTES:
        raise ConfigError(f"{source}: the {what} is larger than {MAX_DOCUMENT_BYTES} bytes; split it")
    try:
        document = json.loads(text)
    except RecursionError as err:  # the C reader's recursion limit: no plan comes near it
        raise ConfigError(f"{source}: the {what} is nested deeper than the JSON reader goes; a plan is "
                          '{"version": 1, "partitions": [{"topic": ..., "replicas": [...]}]}') from err
    except ValueError as err:  # also a UnicodeDecodeError of bytes that are not UTF-8
        raise ConfigError(f"{source}: the {what} is not JSON ({err})") from err
    if not isinstance(document, dict):
        raise ConfigError(f"{source}: the {what} is {_shown(document)}: give an object {{\"version\": 1, ...}}")
    version = document.get("version", 1)
    if version.__class__ is not int or version != 1:
        raise ConfigError(f"{source}: version is {_shown(version)}: kstream reads version 1 documents")
    return document


def plan_entries(document: dict[str, Any], source: str) -> list[PlanEntry]:
    """Each ``partitions`` entry of a plan, its fields type-checked (not yet against a cluster)."""
    entries = _list(document, "partitions", "partitions", source)
    found: list[PlanEntry] = []
    for index, entry in enumerate(entries):
        where = f"partitions[{index}]"
        if not isinstance(entry, dict):
            raise ConfigError(f'{source}: {where} is {_shown(entry)}: give an object {{"topic": "t", '
                              '"partition": 0, "replicas": [1, 2]}')
        replicas = [_integer(r, f"{where}.replicas[{i}]", source, "a log dir id")
                    for i, r in enumerate(_list(entry, "replicas", f"{where}.replicas", source))]
        log_dirs = None
        if "log_dirs" in entry:
            log_dirs = [_string(d, f"{where}.log_dirs[{i}]", source, '"any" or a log dir path')
                        for i, d in enumerate(_list(entry, "log_dirs", f"{where}.log_dirs", source))]
        found.append((_string(_field(entry, "topic", where, source), f"{where}.topic", source, "a topic name"),
                      _integer(_field(entry, "partition", where, source), f"{where}.partition", source,
                               "a partition number"),
                      replicas, log_dirs))
    return found


def topics_to_move(document: dict[str, Any], source: str) -> list[str]:
    """The topics of a topics-to-move file: ``{"topics": [{"topic": "t"}], "version": 1}``."""
    topics: list[str] = []
    for index, entry in enumerate(_list(document, "topics", "topics", source)):
        where = f"topics[{index}]"
        if not isinstance(entry, dict):
            raise ConfigError(f'{source}: {where} is {_shown(entry)}: give an object {{"topic": "t"}}')
        topics.append(_string(_field(entry, "topic", where, source), f"{where}.topic", source, "a topic name"))
    return topics


def _field(entry: dict[str, Any], name: str, where: str, source: str) -> Any:
    if name not in entry:
        raise ConfigError(f"{source}: {where} has no {name!r}")
    return entry[name]


def _list(entry: dict[str, Any], name: str, where: str, source: str) -> list[Any]:
    value = _field(entry, name, where.rpartition(".")[0] or "the document", source)
    if not isinstance(value, list):
        raise ConfigError(f"{source}: {where} is {_shown(value)}: give a list")
    return value


def _integer(value: Any, where: str, source: str, meaning: str) -> int:
    if value.__class__ is not int:  # JSON true/false are bools, and 1.0 a float: neither is a number here
        raise ConfigError(f"{source}: {where} is {_shown(value)}: give an integer ({meaning})")
    return int(value)


def _string(value: Any, where: str, source: str, meaning: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{source}: {where} is {_shown(value)}: give a string ({meaning})")
    return value


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."
