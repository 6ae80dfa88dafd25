"""``version()`` and ``libversion()``, shaped as confluent-kafka's.

- ``version()`` is kstream's own: ``(kstream.__version__, int)``.
- ``libversion()`` names the librdkafka API level kstream's embedded log
  stands in for (``("2.6.0-kstream", 0x020600ff)``): porting code gates
  features on it (``if libversion()[1] >= 0x000b0400: use headers``), and
  kstream has those features, so such checks take the modern path.

The int is encoded as confluent-kafka and librdkafka do:
``major << 24 | minor << 16 | patch << 8 | 0xff`` (0xff: a final release).
"""

from __future__ import annotations

__version__ = "0.1.0"
"""kstream's version (``kstream.__version__`` re-exports it; setup.cfg reads it from here)."""

LIBRDKAFKA_API_VERSION = (2, 6, 0)
"""The librdkafka release whose client API (error codes, config names, calls) kstream mirrors."""


def encode_version(text: str) -> int:
    """``"1.2.3"`` -> ``0x010203ff`` (missing parts are 0; anything after a part's digits is
    ignored, so ``"0.1.0rc1"`` encodes as ``0.1.0``)."""
    parts = [min(int(_leading_digits(piece) or 0), 255) for piece in text.split(".")[:3]]
    parts += [0] * (3 - len(parts))
    return parts[0] << 24 | parts[1] << 16 | parts[2] << 8 | 0xFF


def _leading_digits(piece: str) -> str:
    digits = ""
    for c in piece:
        if not c.isdigit():
            break
        digits += c
    return digits


def version() -> tuple[str, int]:
    """kstream's version: ``(kstream.__version__, encoded int)``."""
    return __version__, encode_version(__version__)


def libversion() -> tuple[str, int]:
    """The librdkafka API level kstream implements: ``("2.6.0-kstream", 0x020600ff)``."""
    text = ".".join(map(str, LIBRDKAFKA_API_VERSION))
    return f"{text}-kstream", encode_version(text)
