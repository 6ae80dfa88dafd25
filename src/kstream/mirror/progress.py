"""What a running mirror has done: records copied, rate, and lag per partition, printed as it goes.

A :class:`Progress` is updated by the copying loop (one thread) and printed every
``interval_s`` to a text stream (the CLI's stderr) in one line:
``mirror NAME: 12000 records, 4000/s, lag t[0]=0 t[1]=17``. Lag is the source's end
(last stable offset, refreshed at each print) minus the mirror's position. At the same
ticks, ``on_tick`` (the run's heartbeat into its status topic, kstream.mirror.status) is
called, with or without a stream.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TextIO

MAX_LAG_SHOWN = 12  # partitions whose lag one line names; the rest are summed


@dataclass
class Progress:
    """Counters of one mirror run (single-threaded)."""

    name: str
    stream: TextIO | None = None
    interval_s: float = 5.0
    records: int = 0
    transactions: int = 0
    positions: dict[tuple[str, int], int] = field(default_factory=dict)
    ends: dict[tuple[str, int], int] = field(default_factory=dict)
    targets: dict[tuple[str, int], int] = field(default_factory=dict)  # the target's next offset after the copy
    on_tick: Callable[[Progress], None] | None = None
    started: float = field(default_factory=time.monotonic)
    _last_print: float = field(default_factory=time.monotonic)

    def copied(self, partition: tuple[str, int], count: int, next_offset: int, target_next: int | None = None) -> None:
        self.records += count
        self.positions[partition] = max(next_offset, self.positions.get(partition, 0))
        if target_next is not None:
            self.targets[partition] = max(target_next, self.targets.get(partition, 0))

    def at(self, partition: tuple[str, int], next_offset: int) -> None:
        """The source's reader is at ``next_offset`` (an end-of-partition event: past markers)."""
        self.positions[partition] = max(next_offset, self.positions.get(partition, 0))

    def lag(self) -> dict[tuple[str, int], int]:
        return {tp: max(0, end - self.positions.get(tp, 0)) for tp, end in sorted(self.ends.items())}

    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.records / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        lag = self.lag()
        shown = list(lag.items())[:MAX_LAG_SHOWN]
        text = " ".join(f"{t}[{p}]={n}" for (t, p), n in shown)
        if len(lag) > MAX_LAG_SHOWN:
            rest = list(lag.values())[MAX_LAG_SHOWN:]
            text += f" (+{len(rest)} partitions, lag {sum(rest)})"
        return f"mirror {self.name}: {self.records} records, {self.rate():.0f}/s, lag {text or '-'}"

    def maybe_print(self, refresh_ends: Callable[[Iterable[tuple[str, int]]], dict[tuple[str, int], int]] | None,
                    force: bool = False) -> None:
        now = time.monotonic()
        if (self.stream is None and self.on_tick is None) or (not force and now - self._last_print < self.interval_s):
            return
        self._last_print = now
        if refresh_ends is not None and self.ends:
            self.ends.update(refresh_ends(list(self.ends)))
        if self.stream is not None:
            print(self.line(), file=self.stream, flush=True)
        if self.on_tick is not None:
            self.on_tick(self)
