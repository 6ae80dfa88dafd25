"""The console's FastAPI application: routes, static files, error pages, the write guard.

:func:`create_app` is the one constructor (the ``kstream console`` command and the
tests call it). The returned ASGI app is the FastAPI app wrapped in
:class:`~kstream.tools.web.guard.WriteGuard`, so every non-GET request passes the
read-only / same-origin check before any route sees it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.trustedhost import TrustedHostMiddleware

from kstream.tools.web import (
    errors,
    figures,
    routes_browser,
    routes_cluster,
    routes_groups,
    routes_mirrors,
    routes_reassign,
    routes_topics,
)
from kstream.tools.web.clusters import ClusterRef
from kstream.tools.web.guard import WriteGuard
from kstream.tools.web.limits import DEFAULT_SAMPLE_INTERVAL_S, ConsoleLimits
from kstream.tools.web.state import HERE, ConsoleState


def routers() -> list[APIRouter]:
    """Every route of the console, by module (the tests walk them to find the write routes)."""
    return [m.router for m in (routes_cluster, routes_topics, routes_reassign, routes_groups, routes_browser,
                                routes_mirrors)]


def create_app(clusters: Mapping[str, ClusterRef], *, read_only: bool = False,
               samplers: Mapping[str, Any] | None = None,
               allowed_hosts: Sequence[str] | None = None, limits: ConsoleLimits | None = None) -> WriteGuard:
    """The console for ``clusters`` (already checked: :func:`kstream.tools.web.clusters.check_clusters`).

    ``samplers``: cluster name -> a ``kstream.tools.monitor.sampler.Sampler`` (its latest
    figures feed the pages and ``/metrics``; one that has not sampled yet samples when
    ``/metrics`` is asked). None: one per cluster that writes nothing and runs only when
    asked.

    ``allowed_hosts``: the only ``Host`` header names served (others get 400). A console
    on a loopback address passes its loopback names, so a DNS-rebinding page (whose own
    name resolves to 127.0.0.1, making its requests "same-origin") is refused; None: any.

    ``limits``: what one request may cost (decoding, live tails); None: the defaults."""
    app = FastAPI(title="kstream console", docs_url=None, redoc_url=None, openapi_url=None)
    if samplers is None:
        samplers = figures.make_samplers(clusters, DEFAULT_SAMPLE_INTERVAL_S, write=False)
    app.state.console = ConsoleState(clusters, read_only, dict(samplers), limits or ConsoleLimits())
    app.mount("/static", StaticFiles(directory=os.path.join(HERE, "static")), name="static")
    app.add_api_route("/favicon.ico", _favicon, include_in_schema=False)
    for router in routers():
        app.include_router(router)
    errors.install(app)
    if allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))
    return WriteGuard(app, read_only)


def _favicon() -> FileResponse:
    """The icon for a browser that asks /favicon.ico without reading the pages' <link rel=icon>
    (a 404 there is logged in the browser's console)."""
    return FileResponse(os.path.join(HERE, "static", "favicon.svg"), media_type="image/svg+xml",
                        headers={"Cache-Control": "max-age=86400"})
