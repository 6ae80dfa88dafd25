"""What confluent's AdminClient offers and kstream does not, on purpose.

kstream is an embedded log: no network, no principals, no brokers to throttle.
So there are no ACLs, no SCRAM credentials and no client quotas; the calls
exist (porting code finds them) and raise :class:`NotSupportedError` saying
what kstream offers instead. Their argument types (AclBinding, ...) exist too,
so code that builds them still imports and runs up to the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from kstream.errors import NotSupportedError

_ACCESS = ("kstream has no network listener and no principals: access is the file system's "
           "(permissions on the cluster directory and its log dirs)")

REASONS = {
    "create_acls": _ACCESS,
    "describe_acls": _ACCESS,
    "delete_acls": _ACCESS,
    "describe_user_scram_credentials": "kstream has no SASL authentication; " + _ACCESS,
    "alter_user_scram_credentials": "kstream has no SASL authentication; " + _ACCESS,
    "describe_client_quotas": "kstream has no brokers to throttle clients; limit a client "
                              "with its own options (batch.size, max.poll.records...)",
    "alter_client_quotas": "kstream has no brokers to throttle clients; limit a client "
                           "with its own options (batch.size, max.poll.records...)",
}


def not_supported(call: str) -> NoReturn:
    """Raise NotSupportedError for AdminClient.``call``, saying why and what to do instead."""
    raise NotSupportedError(f"AdminClient.{call} is not supported by kstream: {REASONS[call]}")


def unsupported_method(call: str) -> Callable[..., NoReturn]:
    """An AdminClient method named ``call`` that takes any arguments and raises
    :func:`not_supported` (porting code finds the name, and a clear error)."""
    def method(self: object, *args: Any, **kwargs: Any) -> NoReturn:
        not_supported(call)
    method.__name__ = method.__qualname__ = call
    method.__doc__ = f"Not supported by kstream: {REASONS[call]}."
    return method
