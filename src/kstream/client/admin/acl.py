"""ACL value types, for porting code only: kstream has no ACLs (see ``_unsupported``).

They check their fields as confluent's do (an AclBinding names one concrete
resource and permission; an AclBindingFilter may leave names open and match
ANY), so code building them behaves the same up to the AdminClient call, which
raises NotSupportedError.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from kstream.client.admin.resource import ResourcePatternType, ResourceType


class AclOperation(Enum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


def supported_operations(resource_type: ResourceType) -> list[AclOperation]:
    """The operations a describe call with ``include_authorized_operations=True`` reports.

    Kafka reports every operation a resource type supports when no authorizer is configured
    (``AclEntry.supportedOperations``), which is kstream's case: access is the file system's.
    Listed in enum order, as librdkafka lists them.
    """
    ops = _SUPPORTED[resource_type]
    return sorted(ops, key=lambda op: op.value)


_O = AclOperation
_SUPPORTED: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DELETE, _O.ALTER, _O.DESCRIBE,
                         _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DELETE, _O.DESCRIBE),
    ResourceType.BROKER: (_O.CREATE, _O.ALTER, _O.DESCRIBE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS,
                          _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE),
}


class AclPermissionType(Enum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_FIELDS = ("restype", "name", "resource_pattern_type", "principal", "host", "operation", "permission_type")
_ENUMS: dict[str, type[Enum]] = {"restype": ResourceType, "resource_pattern_type": ResourcePatternType,
                                 "operation": AclOperation, "permission_type": AclPermissionType}
_MATCH_ONLY = {"restype": (ResourceType.ANY,),
               "resource_pattern_type": (ResourcePatternType.ANY, ResourcePatternType.MATCH),
               "operation": (AclOperation.ANY,), "permission_type": (AclPermissionType.ANY,)}


class AclBinding:
    """One ACL: who (principal, host) may or may not do what on which resource."""

    _nullable: tuple[str, ...] = ()
    _filter = False

    def __init__(self, restype: Any, name: Any, resource_pattern_type: Any, principal: Any,
                 host: Any, operation: Any, permission_type: Any):
        values = dict(zip(_FIELDS, (restype, name, resource_pattern_type, principal, host,
                                    operation, permission_type), strict=True))
        for field, value in values.items():
            if value is None:
                if field not in self._nullable:
                    raise ValueError(f"{type(self).__name__}.{field} must not be None")
            elif field in _ENUMS:
                enum = _ENUMS[field]
                if isinstance(value, str) and value.upper() in enum.__members__:
                    value = enum[value.upper()]
                if not isinstance(value, enum):
                    raise TypeError(f"{type(self).__name__}.{field} must be a {enum.__name__}, got {value!r}")
                if not self._filter and value in _MATCH_ONLY[field]:
                    raise ValueError(f"{type(self).__name__}.{field} cannot be {value.name} "
                                     "(only a filter matches that)")
            elif not isinstance(value, str):
                raise TypeError(f"{type(self).__name__}.{field} must be a string, got {value!r}")
            setattr(self, field, value)

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in _FIELDS)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in _FIELDS)
        return f"{type(self).__name__}({fields})"


class AclBindingFilter(AclBinding):
    """A pattern over ACLs: names may be None (any) and enums may be ANY / MATCH."""

    _nullable = ("name", "principal", "host")
    _filter = True
