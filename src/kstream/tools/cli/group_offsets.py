"""Forget some of a group's committed offsets: kafka-consumer-groups --delete-offsets.

As in Kafka, a topic that an active member of the group is subscribed to is
refused (its consumers would commit the offsets again at once); the other
partitions asked for are deleted in one Delta commit, under the group's lock,
so a concurrent commit is not lost (the write is made against the snapshot it
read and conflicts if the group's rows changed since).
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from kstream.errors import ConfigError, GroupBusyError
from kstream.groups import ConsumerGroups


def _partitions(service: ConsumerGroups, specs: Iterable[str]) -> dict[str, set[int] | None]:
    """``t`` (None: every partition) or ``t:0,2`` per topic."""
    chosen: dict[str, set[int] | None] = {}
    for spec in specs:
        name, _, parts = spec.partition(":")
        service.cluster.topic(name)  # TopicNotFoundError for a typo
        if not parts:
            chosen[name] = None
            continue
        try:
            numbers = {int(p) for p in parts.split(",")}
        except ValueError as err:
            raise ConfigError(f"--topic {spec!r}: expected T or T:P,P,...") from err
        if name not in chosen:
            chosen[name] = numbers
        elif chosen[name] is not None:
            chosen[name] = (chosen[name] or set()) | numbers  # (None, every partition, stays)
    return chosen


def delete_group_offsets(service: ConsumerGroups, group: str, specs: Iterable[str]) -> dict[tuple[str, int], str]:
    """Delete ``group``'s committed offsets of the partitions in ``specs``; per partition asked
    for, "Successful" or why not (Kafka's STATUS column). GroupBusyError if every topic asked
    for is consumed by an active member (nothing to do then)."""
    wanted = _partitions(service, specs)
    current = service.coordinator.expire(group)  # a writer: expired members are not active
    subscribed = {t for m in (current.members if current else ()) for t in m.subscription}
    busy = sorted(set(wanted) & subscribed)
    if busy and set(wanted) <= subscribed:
        raise GroupBusyError(f"group {group!r} has active members subscribed to {busy}: stop them "
                             "before deleting these offsets (their consumers would commit them again)")
    status: dict[tuple[str, int], str] = {}
    with service.coordinator.lock(group):
        snapshot = service.table.snapshot()
        rows = service.table.rows(group, snapshot=snapshot)
        keys = list(zip(rows["topic"].to_pylist(), rows["partition"].to_pylist(), strict=True))

        def asked(topic: str, partition: int) -> bool:
            return topic in wanted and (wanted[topic] is None or partition in (wanted[topic] or ()))

        drop = [asked(t, p) and t not in subscribed for t, p in keys]
        for (topic, partition), dropped in zip(keys, drop, strict=True):
            if asked(topic, partition):
                status[(topic, partition)] = ("Successful" if dropped
                                              else "Error: GROUP_SUBSCRIBED_TO_TOPIC (an active member consumes it)")
        for topic, partitions in wanted.items():
            for partition in partitions or ():
                status.setdefault((topic, partition), "Error: no committed offset")
        if any(drop):
            kept = rows.filter(pa.array([not d for d in drop], pa.bool_()))
            service.table.write(group, kept, custom_metadata={"kstream.operation": "delete-offsets"},
                                snapshot=snapshot)
    return status
