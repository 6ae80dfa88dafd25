"""Consumer group pages and the offset reset, as `kstream groups describe|reset-offsets`.

* ``GET /c/C/groups``: every group: state, members, total lag, Burrow status.
* ``GET /c/C/groups/G``: members and assignment, per partition committed / log end /
  lag / lag_seconds / status, a lag-over-time chart (``/c/C/api/series``), live updates
  over SSE (``/c/C/groups/G/live``).
* ``GET /c/C/groups/G/reset?method=..``: the dry run (the plan, nothing changed);
  ``POST`` the same fields to execute it. The plan comes from
  :mod:`kstream.groups.offset_reset` (what the CLI calls too) and the reset is ``ConsumerGroups.reset_offsets``, which
  refuses while members are active unless ``force`` (then it fences them).
  ``from-file`` is the CLI's only method the page does not offer (it reads a path).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import weakref
from collections.abc import AsyncIterator
from typing import Annotated
from urllib.parse import quote

import anyio
from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, StreamingResponse

from kstream.client.offsets_at import offsets_at
from kstream.errors import ConfigError
from kstream.group_names import check_group_name
from kstream.groups import offset_reset
from kstream.tools.web import figures
from kstream.tools.web.clusters import ClusterRef, open_groups
from kstream.tools.web.sse import LIVE_INTERVAL_S, LIVE_MIN_INTERVAL_S, MAX_LIVE_EVENTS, event, stream_response
from kstream.tools.web.state import render, state_of

router = APIRouter()
WEB_METHODS = tuple(m for m in offset_reset.METHODS if m != "from-file")


@router.get("/c/{cluster}/groups", response_class=HTMLResponse)
def groups_page(request: Request, cluster: str) -> HTMLResponse:
    ref = state_of(request).cluster(cluster)
    rows = figures.groups_summary(ref)
    return render(request, "groups.html", ref=ref, rows=rows)


@router.get("/c/{cluster}/groups/{group}", response_class=HTMLResponse)
def group_page(request: Request, cluster: str, group: str, done: str | None = None) -> HTMLResponse:
    console = state_of(request)
    ref = console.cluster(cluster)
    view = figures.group_view(ref, check_group_name(group))
    tables = {} if console.vendored else figures.lag_tables(ref, view)  # no uPlot: the chart as tables
    return render(request, "group.html", ref=ref, group=group, view=view, methods=WEB_METHODS, done=done,
                  chart_tables=tables)


@router.get("/c/{cluster}/groups/{group}/live")
async def group_live(request: Request, cluster: str, group: str,
                     max_events: Annotated[int, Query(ge=1, le=MAX_LIVE_EVENTS)] = MAX_LIVE_EVENTS,
                     interval_s: Annotated[float, Query(ge=LIVE_MIN_INTERVAL_S, le=60)] = LIVE_INTERVAL_S
                     ) -> StreamingResponse:
    """SSE: event ``lag`` with the group's offsets table (HTML), every ``interval_s`` (at least
    :data:`LIVE_MIN_INTERVAL_S`: each event reads the group's offsets and its partitions).
    At most ``group.live.max`` such streams at once on the console and
    ``group.live.max.per.client`` per client address, each reading on a thread of their own
    (:mod:`kstream.tools.web.live_slots`): past either, 429 before anything is read."""
    console = state_of(request)
    ref = console.cluster(cluster)
    name = check_group_name(group)
    templates = console.templates
    slot = console.group_streams.acquire(request.client.host if request.client else "unknown")
    executor = console.group_streams.executor()  # one thread per slot: a stream never waits for one
    try:  # a missing group: 404 before streaming
        first = await asyncio.wrap_future(executor.submit(figures.group_view, ref, name))
    except BaseException:
        slot.release()
        raise

    async def events() -> AsyncIterator[str]:
        reading: concurrent.futures.Future[figures.GroupView] | None = None
        try:
            for number in range(max_events):
                view = first
                if number:
                    await asyncio.sleep(interval_s)
                    if await request.is_disconnected():
                        return
                    reading = executor.submit(figures.group_view, ref, name)
                    view = await asyncio.wrap_future(reading)
                html = templates.get_template("group_offsets.html").render(view=view, cluster_name=cluster)
                yield event("lag", html)
        finally:
            # A disconnect cancels the await, not the read on its thread: the slot (and with it
            # the thread) is given back once the read is over, shielded from the cancel.
            with anyio.CancelScope(shield=True):
                if reading is not None:
                    await asyncio.wait([asyncio.wrap_future(reading)])
            slot.release()

    stream = events()
    # A stream never started (the client left before the response began) runs no finally:
    # its slot is given back when the generator is collected.
    weakref.finalize(stream, slot.release)
    return stream_response(stream)


def _plan(ref: ClusterRef, group: str, method: str, value: str | None, topics: list[str],
          all_topics: bool) -> dict[tuple[str, int], int]:
    if method not in WEB_METHODS:
        raise ConfigError(f"reset method {method!r}: choose one of {', '.join(WEB_METHODS)}")
    if method in ("to-offset", "shift-by", "to-datetime", "by-duration") and not (value or "").strip():
        raise ConfigError(f"--{method} needs a value")
    if method == "by-duration":
        offset_reset.parse_duration(value or "")
    with open_groups(ref) as service:
        keys = offset_reset.scope(service, group, [t for t in topics if t.strip()], all_topics)
        return offset_reset.plan(service, group, keys, method, value,
                                 functools.partial(offsets_at, {"cluster": ref.path}))


@router.get("/c/{cluster}/groups/{group}/reset", response_class=HTMLResponse)
def reset_preview(request: Request, cluster: str, group: str, method: str, value: str | None = None,
                  topics: Annotated[list[str] | None, Query()] = None, all_topics: bool = False
                  ) -> HTMLResponse:
    """`kstream groups reset-offsets G ... --dry-run`: the plan, nothing changed."""
    ref = state_of(request).cluster(cluster)
    name = check_group_name(group)
    plan = _plan(ref, name, method, value, topics or [], all_topics)
    return render(request, "group_reset.html", ref=ref, group=name, plan=sorted(plan.items()), method=method,
                  value=value or "", topics=topics or [], all_topics=all_topics)


@router.post("/c/{cluster}/groups/{group}/reset")
def reset_execute(request: Request, cluster: str, group: str, method: Annotated[str, Form()],
                  value: Annotated[str | None, Form()] = None,
                  topics: Annotated[list[str] | None, Form()] = None,
                  all_topics: Annotated[bool, Form()] = False, force: Annotated[bool, Form()] = False
                  ) -> RedirectResponse:
    """`kstream groups reset-offsets G ... --execute [--force]`: the plan is computed again (the
    log may have moved since the preview), then applied; GroupBusyError (409) while members
    are active and ``force`` is not set."""
    ref = state_of(request).cluster(cluster)
    name = check_group_name(group)
    plan = _plan(ref, name, method, value, topics or [], all_topics)
    with open_groups(ref) as service:
        service.reset_offsets(name, plan, force=force)
    message = f"Reset {len(plan)} partition(s) of group {name}."
    return RedirectResponse(f"/c/{cluster}/groups/{quote(name)}?done={quote(message)}", status_code=303)
