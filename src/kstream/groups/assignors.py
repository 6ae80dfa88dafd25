"""Partition assignors, as Kafka's consumer defines them.

An assignor is a pure function of the members' subscriptions and the
partition counts: every member computes the same answer, and tests compare
it with Kafka's documented examples.

- ``range`` (Kafka's RangeAssignor, the default): per topic, sort the
  partitions and the members subscribed to it; each member gets a contiguous
  range, and the first ``N mod C`` members get one partition more.
- ``roundrobin`` (RoundRobinAssignor): all subscribed partitions, sorted by
  topic and partition, dealt to the sorted members in turn, skipping members
  not subscribed to a partition's topic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

Assignment = dict[str, list[tuple[str, int]]]
Assignor = Callable[[Mapping[str, Sequence[str]], Mapping[str, int]], Assignment]


def range_assignor(subscriptions: Mapping[str, Sequence[str]], partitions: Mapping[str, int]
                   ) -> Assignment:
    """``subscriptions``: member id -> topics; ``partitions``: topic -> partition count."""
    assignment: Assignment = {member: [] for member in subscriptions}
    for topic in sorted(partitions):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        count = partitions[topic]
        per_member, extra = divmod(count, len(members))
        start = 0
        for i, member in enumerate(members):
            length = per_member + (1 if i < extra else 0)
            assignment[member].extend((topic, p) for p in range(start, start + length))
            start += length
    return assignment


def roundrobin_assignor(subscriptions: Mapping[str, Sequence[str]], partitions: Mapping[str, int]
                        ) -> Assignment:
    assignment: Assignment = {member: [] for member in subscriptions}
    members = sorted(subscriptions)
    if not members:
        return assignment
    turn = 0
    for topic in sorted(partitions):
        for p in range(partitions[topic]):
            for _ in range(len(members)):
                member = members[turn % len(members)]
                turn += 1
                if topic in subscriptions[member]:
                    assignment[member].append((topic, p))
                    break
    return assignment


ASSIGNORS: dict[str, Assignor] = {"range": range_assignor, "roundrobin": roundrobin_assignor}
