"""The mirror's one error: bad input or a side that cannot be reached, said with what to do."""

from __future__ import annotations

from kstream.errors import KStreamError


class MirrorError(KStreamError):
    """A mirror cannot start or go on: an unknown topic, an unreachable broker, a partition
    count that differs between the two sides, a kstream topic it cannot copy."""
