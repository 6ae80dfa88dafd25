"""``ThrottleEvent``: what confluent-kafka passes to a ``throttle_cb``.

A broker tells a client to slow down (quotas); kstream has no broker and no
quotas, so its clients never call a ``throttle_cb``. The type exists so code
that builds or inspects these events ports unchanged.
"""

from __future__ import annotations


class ThrottleEvent:
    """A broker (``broker_name``, ``broker_id``) throttled requests for ``throttle_time`` seconds."""

    __slots__ = ("broker_id", "broker_name", "throttle_time")

    def __init__(self, broker_name: str, broker_id: int, throttle_time: float):
        self.broker_name = broker_name
        self.broker_id = broker_id
        self.throttle_time = throttle_time

    def __str__(self) -> str:
        return f"{self.broker_name}/{self.broker_id} throttled for {int(self.throttle_time * 1000)} ms"

    def __repr__(self) -> str:
        return (f"ThrottleEvent(broker_name={self.broker_name!r}, broker_id={self.broker_id}, "
                f"throttle_time={self.throttle_time})")
