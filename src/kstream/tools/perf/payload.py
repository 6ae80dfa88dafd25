"""Record values for perf runs: what the bytes look like matters to compression.

``random``: one random value reused for every record, as kafka-producer-perf-test
does without ``--payload-file`` (incompressible within a record, but a batch of
copies compresses to almost nothing, so never use it to judge compression).
``varied``: a pool of distinct random values, cycled (incompressible).
``text``: JSON-like event records of the requested size drawn from a small
vocabulary (compresses like real logs: about 3-5x with lz4 here).
"""

from __future__ import annotations

import json

import numpy as np

from kstream.errors import ConfigError

KINDS = ("random", "varied", "text")
POOL = 1024
"""Distinct values per pool (a power of two: the record loop indexes with ``i & (POOL - 1)``)."""
MAX_RECORD_SIZE = 16 * 1024 * 1024

_WORDS = ("page_view click search add_to_cart checkout login logout purchase refund signup "
          "home products cart account settings help orders mobile desktop tablet chrome firefox "
          "safari android ios linux windows macos europe america asia ok error timeout").split()


def values(kind: str, record_size: int, seed: int = 0) -> list[bytes]:
    """The values a run cycles through (one for ``random``, :data:`POOL` otherwise)."""
    if kind not in KINDS:
        raise ConfigError(f"payload {kind!r} is not one of {', '.join(KINDS)}")
    if not 0 <= record_size <= MAX_RECORD_SIZE:
        raise ConfigError(f"record size {record_size} must be 0-{MAX_RECORD_SIZE} bytes")
    rng = np.random.default_rng(seed)
    if kind == "random":
        return [rng.bytes(record_size)]
    if kind == "varied":
        return [rng.bytes(record_size) for _ in range(POOL)]
    return [_text_value(rng, i, record_size) for i in range(POOL)]


def _text_value(rng: np.random.Generator, i: int, record_size: int) -> bytes:
    words = rng.choice(len(_WORDS), size=max(8, record_size // 6))
    event = {"id": int(rng.integers(1 << 40)), "user": f"user-{int(rng.integers(100_000))}",
             "event": _WORDS[words[0]], "path": "/" + "/".join(_WORDS[w] for w in words[1:4]),
             "n": i, "tags": " ".join(_WORDS[w] for w in words[4:])}
    text = json.dumps(event).encode()
    return (text * (record_size // max(1, len(text)) + 1))[:record_size]
