"""Futures and argument checks shared by the AdminClient calls.

kstream's admin work is local (files and the metadata store), so each call
does its work before it returns; its results still arrive as confluent-kafka's
do: ``concurrent.futures.Future`` objects, already done, whose ``result()``
returns the value or raises the operation's error. Errors in the *request*
(wrong types, empty lists, negative timeouts) raise at once, as confluent's
TypeError/ValueError do; errors of the *operation* (a topic that exists, a
group that does not) arrive through the future.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import Future
from typing import Any, TypeVar

from kstream.message import KafkaError

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

# librdkafka's codes for the names the admin calls report in results (not as exceptions);
# used only where kstream.message.KafkaError has no constant of that name.
_CODES = {
    "UNKNOWN": -1, "OFFSET_OUT_OF_RANGE": 1, "UNKNOWN_TOPIC_OR_PART": 3, "LEADER_NOT_AVAILABLE": 5,
    "KAFKA_STORAGE_ERROR": 56, "ELECTION_NOT_NEEDED": 84, "PREFERRED_LEADER_NOT_AVAILABLE": 80,
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": 83, "_NOT_IMPLEMENTED": -170,
}


def kafka_error(name: str, reason: str) -> KafkaError:
    """A KafkaError (a value in a result, not an exception) with librdkafka's code ``name``."""
    code = getattr(KafkaError, name, None)
    return KafkaError(code if isinstance(code, int) else _CODES[name], reason)


def completed(action: Callable[[], T]) -> Future[T]:
    """A done future holding ``action()``'s result, or the error it raised."""
    future: Future[T] = Future()
    future.set_running_or_notify_cancel()
    try:
        future.set_result(action())
    except Exception as err:  # handed to the caller through the future, as confluent does
        future.set_exception(err)
    return future


def futures_for(keys: Iterable[K], action: Callable[[K], T]) -> dict[K, Future[T]]:
    """One done future per key, each holding ``action(key)`` (keys run in order)."""
    return {key: completed(lambda key=key: action(key)) for key in keys}  # type: ignore[misc]


def check_timeout(value: Any, name: str) -> None:
    """confluent's checks of request_timeout / operation_timeout (seconds; -1 is not allowed)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")


def check_bool(value: Any, name: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def check_list(value: Any, what: str, element: type | tuple[type, ...], *,
               empty_ok: bool = False) -> list[Any]:
    """``value`` as a list of ``element``: TypeError for another type, ValueError if empty
    (unless ``empty_ok``) or if an element is None or of another type (confluent's checks)."""
    if not isinstance(value, list):
        raise TypeError(f"{what} must be a list, got {type(value).__name__}")
    if not value and not empty_ok:
        raise ValueError(f"{what} must not be empty")
    for item in value:
        if not isinstance(item, element):
            names = element.__name__ if isinstance(element, type) else "/".join(e.__name__ for e in element)
            raise ValueError(f"{what} must hold {names} objects, got {item!r}")
    return value


def check_name(value: Any, what: str) -> str:
    """A non-empty string (TypeError for a non-string, ValueError for an empty one)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{what} must not be empty")
    return value
