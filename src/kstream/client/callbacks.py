"""``oauth_cb`` as librdkafka calls it, on a log that authenticates no one.

librdkafka calls ``oauth_cb(sasl.oauthbearer.config)`` when a client with
``sasl.mechanisms=OAUTHBEARER`` needs a token: at its first poll, then again
when 80% of the token's lifetime has passed; a callback that raises is called
again later. kstream keeps that schedule so code whose token callback does
work (fetching from an identity provider, failing fast when it is down) runs
as it did, but the token itself is only checked for shape and never used:
access to an embedded log is the file permissions of its cluster directory.
A failure is logged and handed to ``error_cb`` (``_AUTHENTICATION``), never
raised out of poll(), as with confluent-kafka.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from kstream.message import KafkaError

_AUTHENTICATION = getattr(KafkaError, "_AUTHENTICATION", -169)
RETRY_S = 1.0  # after a failed callback
_REFRESH_AT = 0.8  # of the token's lifetime, as librdkafka


class OAuthTokens:
    """The refresh schedule of one client's oauth_cb."""

    def __init__(self, callback: Callable[[Any], Any], config: str | None):
        self._callback = callback
        self._config = config
        self._next = 0.0  # first poll: now

    def refresh_if_due(self, log: logging.Logger | logging.LoggerAdapter[Any],
                       error_cb: Callable[[KafkaError], None] | None) -> None:
        now = time.time()
        if now < self._next:
            return
        try:
            result = self._callback(self._config)
            token, expiry = result[0], float(result[1])
            if not isinstance(token, str):
                raise TypeError(f"oauth_cb must return (token: str, expiry: float, ...), got {result!r}")
        except Exception as err:  # the user's callback: any failure is reported, then retried
            self._next = now + RETRY_S
            log.warning("oauth_cb failed (retrying in %.0f s): %r", RETRY_S, err)
            if error_cb is not None:
                error_cb(KafkaError(_AUTHENTICATION, f"oauth_cb failed: {err!r}"))
            return
        self._next = now + max(RETRY_S, (expiry - now) * _REFRESH_AT)


def oauth_tokens(callback: Callable[[Any], Any] | None, given: dict[str, Any]) -> OAuthTokens | None:
    """The schedule for a config with oauth_cb and sasl.mechanisms OAUTHBEARER, else None."""
    nested = given.get("default.topic.config") or {}
    mechanism = given.get("sasl.mechanisms", given.get("sasl.mechanism", nested.get("sasl.mechanisms", "")))
    if callback is None or str(mechanism).upper() != "OAUTHBEARER":
        return None
    return OAuthTokens(callback, given.get("sasl.oauthbearer.config"))


def check_sasl_credentials(username: Any, password: Any) -> None:
    """set_sasl_credentials()'s argument check (confluent-kafka raises TypeError)."""
    if not isinstance(username, str) or not isinstance(password, str):
        raise TypeError("set_sasl_credentials() takes a str username and a str password")
