"""Preferred leader election and reassignment, as `kstream elect-leaders` and `kstream reassign`.

* ``GET /c/C/reassign?topics=..&log_dirs=..``: the generate step (read-only): current and
  proposed assignments, the proposal from :func:`kstream.log.cluster.reassignment.propose`.
* ``POST /c/C/reassign/execute``: the plan (JSON, what generate proposed, maybe edited) is
  checked whole (:func:`~kstream.log.cluster.reassignment.parse_plan`), then each partition moves with
  :func:`kstream.log.cluster.replica_ops.reassign`; the page lists each move's result as it happened
  (kstream moves before returning, so progress is the per-partition outcome) and the
  rollback plan.
* ``GET /c/C/reassign/verify?plan=..``: per partition, planned replicas vs current.
* ``POST /c/C/elect``: preferred leader election (all topics, or those chosen).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from kstream.log.cluster import reassignment, replica_ops
from kstream.tools.web.clusters import open_cluster
from kstream.tools.web.overview import ClusterSnapshot
from kstream.tools.web.routes_topics import open_admin
from kstream.tools.web.state import render, state_of

router = APIRouter()


@router.get("/c/{cluster}/reassign", response_class=HTMLResponse)
def reassign_page(request: Request, cluster: str, topics: Annotated[list[str] | None, Query()] = None,
                  log_dirs: Annotated[list[int] | None, Query()] = None, done: str | None = None
                  ) -> HTMLResponse:
    ref = state_of(request).cluster(cluster)
    current = proposed = None
    with open_cluster(ref) as opened:
        snapshot = ClusterSnapshot.read(opened)
        if topics:
            plan = reassignment.propose(opened, list(topics), list(log_dirs or []))
            current = reassignment.plan_document(opened, reassignment.current_plan(
                opened, [(t, p) for t, p, _ in plan]))
            proposed = reassignment.plan_document(opened, plan)
    return render(request, "reassign.html", ref=ref, snapshot=snapshot, chosen_topics=topics or [],
                  chosen_log_dirs=log_dirs or [], current=current, proposed=proposed, done=done)


@router.post("/c/{cluster}/reassign/execute", response_class=HTMLResponse)
def reassign_execute(request: Request, cluster: str, plan: Annotated[str, Form()]) -> HTMLResponse:
    """`kstream reassign --execute --reassignment-json-file PLAN`: the whole plan is checked
    before anything moves; a move that fails stops the rest (the page says which moved)."""
    ref = state_of(request).cluster(cluster)
    with open_cluster(ref) as opened:
        checked = reassignment.parse_plan(plan, opened)
        rollback = reassignment.plan_document(opened, reassignment.current_plan(
            opened, [(t, p) for t, p, _ in checked]))
        moved = []
        for topic, partition, replicas in checked:
            info = replica_ops.reassign(opened, topic, partition, replicas)
            moved.append(info)
    return render(request, "reassign_done.html", ref=ref, moved=moved, rollback=rollback, plan=plan)


@router.get("/c/{cluster}/reassign/verify", response_class=HTMLResponse)
def reassign_verify(request: Request, cluster: str, plan: str) -> HTMLResponse:
    """`kstream reassign --verify`: per partition, completed or the replica set it has instead."""
    ref = state_of(request).cluster(cluster)
    with open_cluster(ref) as opened:
        rows = reassignment.differences(opened, reassignment.parse_plan(plan, opened))
    return render(request, "reassign_verify.html", ref=ref, rows=rows, plan=plan)


@router.post("/c/{cluster}/elect")
def elect(request: Request, cluster: str, topics: Annotated[list[str] | None, Form()] = None
          ) -> RedirectResponse:
    """`kstream elect-leaders [TOPIC...]`: each partition's first replica leads again where in sync."""
    ref = state_of(request).cluster(cluster)
    with open_admin(ref) as admin:
        changed = admin.elect_preferred_leaders(list(topics) if topics else None)
    message = f"{changed} partition(s) changed leader."
    return RedirectResponse(f"/c/{cluster}/reassign?done={quote(message)}", status_code=303)
