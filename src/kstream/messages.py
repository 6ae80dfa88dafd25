"""``Messages``: a read-only batch of :class:`~kstream.message.Message`, as confluent-kafka's.

confluent-kafka returns one from ``ShareConsumer.poll()``; kstream has no share
groups, but code and tests that build or pass batches around get the same
container: a sequence (``len``, indexing, slicing to another ``Messages``,
iteration) with ``is_empty()``, ``count()`` and ``records()`` (a list copy),
and none of a list's mutators.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import overload

from kstream.message import Message


class Messages:
    """An immutable sequence of messages (one poll's worth)."""

    __slots__ = ("_items",)

    def __init__(self, messages: Iterable[Message] = ()):
        self._items: list[Message] = list(messages)

    @classmethod
    def _from_list(cls, messages: list[Message]) -> Messages:
        """Wrap ``messages`` without copying (the caller gives the list up)."""
        batch = cls.__new__(cls)
        batch._items = messages
        return batch

    def is_empty(self) -> bool:
        return not self._items

    def count(self) -> int:
        return len(self._items)

    def records(self) -> list[Message]:
        """The messages as a new list (changing it leaves the batch alone)."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> Messages: ...

    def __getitem__(self, index: int | slice) -> Message | Messages:
        if isinstance(index, slice):
            return Messages._from_list(self._items[index])
        return self._items[index]

    def __iter__(self) -> Iterator[Message]:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"Messages({self._items!r})"
