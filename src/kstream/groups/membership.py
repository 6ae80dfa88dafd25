"""One consumer's side of group membership: join, a heartbeat thread, and the next rebalance
step for poll() to run.

The heartbeat thread (its own database connection) keeps the member alive
and expires dead members; whenever the group it sees differs from what the
consumer holds, it raises a flag. poll() then asks :meth:`Membership.next_step`
what to do: give the partitions up and rejoin (``REVOKE``), take a new
assignment (``ASSIGN``), start over as a new member (``LOST``: expired or
fenced), or wait for the others (``WAIT``). The consumer does the work
(commits, callbacks, assign) because only it knows its positions.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from kstream.groups.coordinator import PREPARING, STABLE, Coordinator, MemberSpec
from kstream.log.cluster.cluster import Cluster

log = logging.getLogger(__name__)

NONE, WAIT, REVOKE, ASSIGN, LOST = "none", "wait", "revoke", "assign", "lost"


@dataclass(frozen=True)
class Step:
    action: str
    generation: int = -1
    assignment: tuple[tuple[str, int], ...] = ()


class Membership:
    """A member of ``group`` (see the module docstring)."""

    def __init__(self, cluster: Cluster, group: str, spec: MemberSpec, heartbeat_interval_ms: int):
        self.group = group
        self.spec = spec
        self._coordinator = Coordinator(cluster)
        self._cluster_path = cluster.path
        self._interval_s = heartbeat_interval_ms / 1000.0
        self.member_id: str | None = None
        self.generation = -1  # of the assignment this consumer holds
        self._changed = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def join(self) -> None:
        self.member_id = self._coordinator.join(self.group, self.spec)
        self.generation = -1
        self._changed.set()
        if self._thread is None:
            self._thread = threading.Thread(target=self._heartbeats, name=f"kstream-heartbeat-{self.group}",
                                            daemon=True)
            self._thread.start()

    @property
    def changed(self) -> bool:
        return self._changed.is_set()

    def next_step(self) -> Step:
        """What the consumer must do now; see the module docstring."""
        self._changed.clear()
        assert self.member_id is not None
        group = self._coordinator.describe(self.group)
        me = group.member(self.member_id) if group is not None else None
        if group is None or me is None:
            return Step(LOST)
        if group.state == PREPARING:
            self._changed.set()  # keep looking until the group is stable again
            return Step(REVOKE) if me.joined_generation <= group.generation else Step(WAIT)
        if group.state == STABLE and group.generation != self.generation:
            return Step(ASSIGN, group.generation, me.assignment)
        return Step(NONE)

    def rejoin(self) -> bool:
        """After revoking: tell the group; False if this member was expired meanwhile."""
        assert self.member_id is not None
        self._changed.set()
        return self._coordinator.rejoin(self.group, self.member_id)

    def rejoin_needed(self) -> None:
        """Look at the group again on the next poll: a commit was fenced, or taking the
        assignment failed (the step stays due, so the failure is reported again)."""
        self._changed.set()

    def assigned(self, generation: int) -> None:
        self.generation = generation

    def _heartbeats(self) -> None:
        coordinator = Coordinator(Cluster.open(self._cluster_path))  # this thread's own connection
        try:
            while not self._stop.wait(self._interval_s):
                member_id = self.member_id
                if member_id is None:
                    continue
                try:
                    group = coordinator.heartbeat(self.group, member_id)
                except Exception:  # a heartbeat must never kill the thread
                    log.exception("heartbeat for group %s failed; retrying", self.group)
                    continue
                me = group.member(member_id) if group is not None else None
                if me is None or group is None or group.state != STABLE or group.generation != self.generation:
                    self._changed.set()
        finally:
            coordinator.cluster.close()

    def leave(self) -> None:
        """Stop heart-beating and leave the group. A static member (group.instance.id) does not
        leave, as in Kafka: its slot waits session.timeout.ms for it to come back."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.member_id is not None and self.spec.instance_id is None:
            self._coordinator.leave(self.group, self.member_id)
        self.member_id = None
