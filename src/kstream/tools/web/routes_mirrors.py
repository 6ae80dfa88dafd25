"""The mirrors of a cluster (``kstream mirror`` runs, docs/MIRROR.md): their heartbeats, read only.

* ``GET /c/C/mirrors[?since_h=H]``: every mirror whose kstream side is cluster C and that
  reported in the last H hours (1..168, default 24), newest first: name, direction, the
  endpoints, topics, state (running / stale / stopped / failed), records, rate, lag, and per
  source partition its position, the source's end, the target's position and the lag.
* ``GET /c/C/api/mirrors[?since_h=H]``: the same as JSON ``{"now_ms", "since_ms", "mirrors": [...]}``.

Each mirror writes its own status records into the cluster's ``__kstream_mirror_status``
topic (kstream.mirror.status); these routes only read that topic (a consumer of no group),
so a read-only console shows them as any other, and a cluster no mirror reported to shows none.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from kstream.mirror.status import TOPIC, MirrorStatus, read_statuses, status_json
from kstream.tools.web.state import render, state_of

router = APIRouter()
DEFAULT_SINCE_H = 24
MAX_SINCE_H = 7 * 24  # the status topic's retention
Since = Annotated[int, Query(ge=1, le=MAX_SINCE_H)]


def _read(request: Request, cluster: str, since_h: int) -> tuple[int, int, list[MirrorStatus]]:
    ref = state_of(request).cluster(cluster)
    now_ms = int(time.time() * 1000)
    since_ms = now_ms - since_h * 3600_000
    return now_ms, since_ms, read_statuses(ref.path, since_ms)


@router.get("/c/{cluster}/mirrors", response_class=HTMLResponse)
def mirrors_page(request: Request, cluster: str, since_h: Since = DEFAULT_SINCE_H) -> HTMLResponse:
    now_ms, _, statuses = _read(request, cluster, since_h)
    mirrors = [status_json(s, now_ms) for s in statuses]
    return render(request, "mirrors.html", ref=state_of(request).cluster(cluster), mirrors=mirrors,
                  since_h=since_h, topic=TOPIC)


@router.get("/c/{cluster}/api/mirrors")
def api_mirrors(request: Request, cluster: str, since_h: Since = DEFAULT_SINCE_H) -> JSONResponse:
    now_ms, since_ms, statuses = _read(request, cluster, since_h)
    return JSONResponse({"now_ms": now_ms, "since_ms": since_ms, "mirrors": [status_json(s, now_ms) for s in statuses]})
