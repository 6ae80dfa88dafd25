"""Server-sent events for the live parts of the pages (htmx's SSE extension reads them).

An event is ``event: NAME`` plus ``data:`` lines (one per line of the payload, as the
SSE format requires) and a blank line. Every stream is bounded (a count of events
and a time between them): a browser tab reconnects by itself when one ends, so a
forgotten tab costs the server nothing once its stream is over.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi.responses import StreamingResponse

MAX_LIVE_EVENTS = 720  # one hour at the default interval; htmx reconnects after
LIVE_INTERVAL_S = 5.0
LIVE_MIN_INTERVAL_S = 1.0  # the shortest interval a client may ask for: each event costs a read


def event(name: str, data: str) -> str:
    """One SSE event; ``name`` must be one line (an assertion: names are the code's)."""
    assert "\n" not in name and "\r" not in name
    body = "".join(f"data: {line}\n" for line in data.replace("\r\n", "\n").split("\n"))
    return f"event: {name}\n{body}\n"


def stream_response(events: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(events, media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
