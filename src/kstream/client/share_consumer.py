"""``ShareConsumer``: confluent-kafka's share-group consumer (KIP-932), not supported by kstream.

Share groups let several consumers read the same partitions with per-record
acknowledgement. kstream has consumer groups only (each partition is read by one
member; offsets are committed per partition). The class exists so that code that
imports or subclasses it still loads; building one raises
:class:`~kstream.errors.NotSupportedError` saying so and what to use instead.
"""

from __future__ import annotations

from typing import Any, NoReturn

from kstream.errors import NotSupportedError

REASON = ("kstream.ShareConsumer (Kafka share groups, KIP-932) is not supported by kstream: "
          "use kstream.Consumer with a group.id (a consumer group: each partition is read by one "
          "member, offsets are committed with commit() or enable.auto.commit)")


class ShareConsumer:
    """Importable and subclassable; constructing one raises NotSupportedError (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        refuse()


def refuse() -> NoReturn:
    raise NotSupportedError(REASON)
