"""Pages about clusters: the list, one cluster's overview (log dirs as brokers), the theme
toggle, ``/healthz`` and ``/metrics``."""

from __future__ import annotations

import os

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from kstream.tools.web import figures
from kstream.tools.web.clusters import open_cluster
from kstream.tools.web.overview import ClusterSnapshot, is_offline, is_under_replicated, log_dir_rows
from kstream.tools.web.state import THEME_COOKIE, THEMES, render, state_of

router = APIRouter()
THEME_COOKIE_MAX_AGE_S = 365 * 24 * 3600


@router.get("/", response_class=HTMLResponse)
def clusters_page(request: Request) -> HTMLResponse:
    rows = []
    for ref in state_of(request).clusters.values():
        with open_cluster(ref) as cluster:
            snapshot = ClusterSnapshot.read(cluster)
        partitions = snapshot.partitions()
        rows.append({"ref": ref, "topics": len(snapshot.topics), "partitions": len(partitions),
                     "log_dirs": len(snapshot.log_dirs),
                     "offline_log_dirs": sum(1 for _, _, online in snapshot.log_dirs if not online),
                     "under_replicated": sum(1 for p in partitions if is_under_replicated(p))})
    return render(request, "clusters.html", rows=rows)


@router.get("/c/{cluster}", response_class=HTMLResponse)
def overview_page(request: Request, cluster: str) -> HTMLResponse:
    ref = state_of(request).cluster(cluster)
    with open_cluster(ref) as opened:
        snapshot = ClusterSnapshot.read(opened)
    online = snapshot.online()
    partitions = snapshot.partitions()
    shrinks = figures.isr_shrinks(state_of(request), cluster)
    shrunk = [] if shrinks is None else sorted(shrinks.by_partition.items(), key=lambda kv: (-kv[1], kv[0]))
    return render(request, "overview.html", ref=ref, snapshot=snapshot, log_dirs=log_dir_rows(snapshot),
                  partitions=len(partitions), shrinks=shrinks, shrunk=shrunk[:figures.SHOWN_SHRINKS],
                  under_replicated=[p for p in partitions if is_under_replicated(p)],
                  offline=[p for p in partitions if is_offline(p, online)],
                  sampling=figures.sampling_note(state_of(request), cluster))


@router.get("/theme")
def theme(request: Request, mode: str = "auto", next: str = "/") -> Response:
    """Store the chosen colour scheme in a cookie and go back (a GET: it changes no cluster)."""
    target = next if next.startswith("/") and not next.startswith("//") else "/"
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(THEME_COOKIE, mode if mode in THEMES else "auto", max_age=THEME_COOKIE_MAX_AGE_S,
                        samesite="lax", httponly=True)
    return response


@router.get("/healthz", response_class=PlainTextResponse)
def healthz(request: Request) -> PlainTextResponse:
    """200 "ok" while every served cluster's metadata is there; 503 naming those that are not."""
    missing = [name for name, ref in state_of(request).clusters.items()
               if not os.path.isfile(os.path.join(ref.path, "metadata.db"))]
    if missing:
        return PlainTextResponse(f"clusters missing: {', '.join(missing)}", status_code=503)
    return PlainTextResponse("ok")


@router.get("/metrics")
def metrics(request: Request) -> Response:
    """Prometheus text exposition of every served cluster's latest figures (label cluster=NAME)."""
    body, content_type = figures.prometheus_text(state_of(request))
    return Response(body, media_type=content_type)
