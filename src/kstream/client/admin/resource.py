"""Resource kinds and pattern kinds (confluent's ``ResourceType``, ``ResourcePatternType``).

Values are librdkafka's. kstream has configs for TOPIC resources (the topic's
settings) and the BROKER resource (the cluster's broker-side settings, fixed
at creation); GROUP configs and the ACL pattern kinds are not supported.
"""

from __future__ import annotations

from enum import Enum
from functools import total_ordering


@total_ordering
class _ParsedEnum(Enum):
    def __lt__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return bool(self.value < other.value)

    @classmethod
    def parse(cls, value: object, what: str) -> _ParsedEnum:
        """A member from itself or its (case-insensitive) name; ValueError otherwise."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        raise ValueError(f"{what}: {value!r} is not one of {', '.join(cls.__members__)}")


class ResourceType(_ParsedEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    TRANSACTIONAL_ID = 5


class ResourcePatternType(_ParsedEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4
