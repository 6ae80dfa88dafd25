"""The console's limits on what one request may cost: decoding and live streams.

A GET needs no write permission, and an ``<img src>`` on any page the operator
visits can send one, so a read-only console must bound the work a GET can ask
for as tightly as a write. :class:`ConsoleLimits` names each bound; ``kstream
console`` sets them from its options (docs/CONSOLE.md "Limits").

* ``decode.max.bytes``: a value larger than this is not decoded as Avro (text, JSON and
  hex already show only the first :data:`kstream.tools.web.browser.MAX_SHOWN_BYTES`).
* ``decode.max.items``: array and map items one Avro value may hold. Counted from the
  block counts *before* any item is read: a block of zero-width items (null) costs no
  bytes, so the byte limit alone does not bound it.
* ``decode.budget.ms``: wall-clock time one page may spend decoding; records past it are
  still listed, each saying it was not decoded.
* ``tail.max`` / ``tail.max.per.client``: live tails open at once on the console and per
  client address (each holds a consumer and a polling thread).
* ``group.live.max`` / ``group.live.max.per.client``: the same for groups' live lag streams
  (each reads the group's offsets and its partitions' ends on a thread every few seconds).
  Both kinds are counted by :mod:`kstream.tools.web.live_slots`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from kstream.errors import ConfigError

DEFAULT_SAMPLE_INTERVAL_S = 10.0  # how often the console samples its clusters' figures

# option name -> (field, minimum, maximum, the `kstream console` flag that sets it)
OPTIONS: dict[str, tuple[str, int, int, str]] = {
    "decode.max.bytes": ("decode_max_bytes", 1024, 64 << 20, "--decode-max-bytes"),
    "decode.max.items": ("decode_max_items", 1, 10_000_000, "--decode-max-items"),
    "decode.budget.ms": ("decode_budget_ms", 10, 60_000, "--decode-budget-ms"),
    "tail.max": ("tail_max", 1, 1024, "--max-tails"),
    "tail.max.per.client": ("tail_max_per_client", 1, 1024, "--max-tails-per-client"),
    "group.live.max": ("group_live_max", 1, 1024, "--max-group-streams"),
    "group.live.max.per.client": ("group_live_max_per_client", 1, 1024, "--max-group-streams-per-client"),
}
# (cap, per-client cap) pairs: a per-client cap above its console-wide cap is refused
_PAIRS = (("tail.max", "tail.max.per.client"), ("group.live.max", "group.live.max.per.client"))


@dataclass(frozen=True)
class ConsoleLimits:
    """Validated bounds (see the module docstring); a value out of its range raises
    ConfigError naming the option, the value and the range. Immutable, picklable."""

    decode_max_bytes: int = 1 << 20
    decode_max_items: int = 100_000
    decode_budget_ms: int = 2_000
    tail_max: int = 32
    tail_max_per_client: int = 4
    group_live_max: int = 32
    group_live_max_per_client: int = 8

    def __post_init__(self) -> None:
        for name, (attribute, low, high, flag) in OPTIONS.items():
            value = getattr(self, attribute)
            if value.__class__ is not int or not low <= value <= high:  # a bool is not a count
                raise ConfigError(f"{name} {value!r} ({flag}): give an integer {low}..{high}")
        for cap, per_client in _PAIRS:
            most, each = getattr(self, OPTIONS[cap][0]), getattr(self, OPTIONS[per_client][0])
            if each > most:
                raise ConfigError(f"{per_client} {each} ({OPTIONS[per_client][3]}) is more than {cap} {most} "
                                  f"({OPTIONS[cap][3]}): give at most {most}")

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ConsoleLimits:
        """Limits from string options named as in :data:`OPTIONS`; the rest keep their defaults."""
        values: dict[str, int] = {}
        for name, text in options.items():
            if name not in OPTIONS:
                raise ConfigError(f"{name!r} is not a console limit; known: {', '.join(sorted(OPTIONS))}")
            attribute, low, high, flag = OPTIONS[name]
            try:
                values[attribute] = int(str(text).strip())
            except ValueError as err:
                raise ConfigError(f"{name} {text!r} ({flag}): give an integer {low}..{high}") from err
        return cls(**values)


assert {f.name for f in fields(ConsoleLimits)} == {attribute for attribute, *_ in OPTIONS.values()}
