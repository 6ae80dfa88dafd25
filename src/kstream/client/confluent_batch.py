"""confluent-kafka >= 2.12's ``Producer.produce_batch(topic, [dict, ...])`` on kstream's Producer.

Each message is a dict with optional ``value``, ``key`` (bytes or str),
``partition`` (int; else the call's ``partition``, -1: the partitioner),
``headers``, ``timestamp`` (ms) and ``callback``/``on_delivery`` (else the
call's). Types are checked for the whole list first (TypeError naming the
index, nothing queued); then each message is produced as by ``produce()``.
A message kstream refuses (a partition the topic lacks, a record too large,
...) gets the refusal as a ``KafkaError`` under its ``"_error"`` key and is
not counted. Returns how many messages were queued. Unlike confluent-kafka,
timestamps and headers are kept (confluent ignores headers here and refuses
timestamps).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kstream.errors import KStreamError
from kstream.message import KafkaError

_TEXT = (bytes, str)


def produce_dicts(produce: Callable[..., None], topic: str, messages: Any, partition: int | None,
                  on_delivery: Callable[[Any, Any], None] | None) -> int:
    """Queue ``messages`` (see the module docstring) with ``produce`` (the Producer's
    ``produce()``, handed in so this module need not import the Producer); the number queued."""
    if not isinstance(topic, str):
        raise TypeError(f"topic must be a str, got {type(topic).__name__}")
    if not isinstance(messages, list):
        raise TypeError("messages must be a list of dicts")
    if partition is not None and (isinstance(partition, bool) or not isinstance(partition, int)):
        raise TypeError(f"partition must be int, got {type(partition).__name__}")
    for i, message in enumerate(messages):
        _check(i, message)
    queued = 0
    for message in messages:
        try:
            produce(topic, message.get("value"), message.get("key"), message.get("partition", partition),
                    on_delivery=message.get("callback") or message.get("on_delivery") or on_delivery,
                    timestamp=message.get("timestamp", 0), headers=message.get("headers"))
        except KStreamError as err:
            message["_error"] = _kafka_error(err)
            continue
        queued += 1
    return queued


def _check(index: int, message: Any) -> None:
    if not isinstance(message, dict):
        raise TypeError(f"Message at index {index} must be a dict")
    for field in ("value", "key"):
        if message.get(field) is not None and not isinstance(message[field], _TEXT):
            raise TypeError(f"Message {field} at index {index} must be bytes or str")
    part = message.get("partition")
    if part is not None and (isinstance(part, bool) or not isinstance(part, int)):
        raise TypeError(f"Message partition at index {index} must be int")
    for field in ("callback", "on_delivery"):
        if message.get(field) is not None and not callable(message[field]):
            raise TypeError(f"Message {field} at index {index} must be callable")


def _kafka_error(err: KStreamError) -> KafkaError:
    carried = err.args[0] if err.args else None
    if isinstance(carried, KafkaError):
        return carried
    return KafkaError(KafkaError.UNKNOWN, str(err), err)
