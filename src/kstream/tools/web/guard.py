"""The one check every write request passes: read-only mode and the same-origin rule.

Every request whose method is not GET or HEAD (or OPTIONS) goes through
:class:`WriteGuard`, an ASGI middleware wrapped around the whole app, so no
route can forget it:

* ``--read-only``: refused with 403 and a text that says so; templates also hide
  the forms, but hiding is cosmetic and this is the enforcement.
* read-write: a console on localhost is a CSRF target (any page the operator
  visits could post a form to it), so a write must come from the console's own
  pages: its ``Origin`` header, or failing that its ``Referer``, must be the
  console's own origin (scheme://host[:port] of the request). Browsers always
  send one of them on a cross-site POST; a request with neither is refused too.

GET routes never write (previews and dry runs are GETs), which is why the rule
can be this simple.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
READ_ONLY_TEXT = "This console is read-only (started with --read-only): it changes nothing."
CROSS_ORIGIN_TEXT = ("Refused: a write must come from this console's own pages (its Origin or Referer "
                     "header names another site, or neither was sent).")


def _origin_of(url: str) -> str | None:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}".lower()


def refusal(scope: Scope, read_only: bool) -> str | None:
    """Why this request may not run (None: it may). Pure: the middleware's whole rule."""
    if scope["type"] != "http" or scope["method"] in SAFE_METHODS:
        return None
    if read_only:
        return READ_ONLY_TEXT
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    host = headers.get("host")
    if not host:
        return CROSS_ORIGIN_TEXT
    own = f"{scope.get('scheme', 'http')}://{host}".lower()
    origin = headers.get("origin")
    if origin is not None and origin != "null":
        return None if origin.lower().rstrip("/") == own else CROSS_ORIGIN_TEXT
    referer = headers.get("referer")
    if referer is not None and _origin_of(referer) == own:
        return None
    return CROSS_ORIGIN_TEXT


class WriteGuard:
    """ASGI middleware: 403 (text/plain) for what :func:`refusal` refuses, else the app."""

    def __init__(self, app: App, read_only: bool):
        self.app = app
        self.read_only = read_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        reason = refusal(scope, self.read_only)
        if reason is None:
            await self.app(scope, receive, send)
            return
        body = reason.encode()
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
