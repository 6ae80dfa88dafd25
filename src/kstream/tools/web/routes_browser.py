"""The message browser, its live tail (SSE) and the chart data route.

* ``GET /c/C/topics/T/messages?partition=&offset=|timestamp=&count=&decoding=``: a bounded
  read (:mod:`kstream.tools.web.browser`), server-rendered; with ``key=`` (a compacted
  topic) also that key's latest value (``browser.lookup``, a :class:`kstream.Table`).
* ``GET /c/C/topics/T/tail?partition=``: SSE, event ``record`` per new record (a table
  row), from the log end at connect (or ``offset``); bounded by ``max_events`` and
  :data:`TAIL_MAX_SECONDS`, and in number by the console's tail caps (429 past them).
* ``GET /c/C/api/series?name=&topic=&partition=&group=&since_ms=&limit=``: JSON
  ``{"name":..., "points": [[ts_ms, value], ...]}`` for uPlot.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import time
import weakref
from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse

from kstream.client.consumer import Consumer
from kstream.errors import ConfigError
from kstream.message import TopicPartition
from kstream.tools.web import figures
from kstream.tools.web.browser import (
    DECODINGS,
    MAX_RECORDS,
    BrowseRequest,
    DecodeBudget,
    Row,
    browse,
    is_compacted,
    lookup,
    row_of,
)
from kstream.tools.web.live_slots import LiveSlot
from kstream.tools.web.sse import event, stream_response
from kstream.tools.web.state import render, state_of

router = APIRouter()
TAIL_MAX_EVENTS = 10_000
TAIL_MAX_SECONDS = 3600.0
TAIL_POLL_S = 0.5


def _timestamp_ms(text: str | None) -> int | None:
    """Milliseconds, or an ISO-8601 time (UTC when it names no zone)."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as err:
        raise ConfigError(f"timestamp {text!r}: give milliseconds or an ISO-8601 time") from err
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


@router.get("/c/{cluster}/topics/{topic}/messages", response_class=HTMLResponse)
def messages_page(request: Request, cluster: str, topic: str, partition: int = 0, offset: str | None = None,
                  timestamp: str | None = None, count: int = 50, decoding: str = "auto",
                  avro_schema: str | None = None, key: str | None = None) -> HTMLResponse:
    console = state_of(request)
    ref = console.cluster(cluster)
    compacted = is_compacted(ref.path, topic)  # (TopicNotFound: the 404 page)
    found = None
    if key:  # a compacted topic's key lookup (a Table refuses any other topic, saying why)
        found = lookup(ref.path, topic, key, decoding, avro_schema or None, console.limits)
    start = int(offset) if offset is not None and offset.strip().lstrip("-").isdigit() else None
    if offset is not None and offset.strip() and start is None:
        raise ConfigError(f"offset {offset!r} is not an integer")
    wanted = BrowseRequest(topic, partition, start, _timestamp_ms(timestamp), count, decoding,
                           avro_schema or None)
    rows = browse(ref.path, wanted, console.limits)
    return render(request, "messages.html", ref=ref, topic=topic, request_=wanted, rows=rows,
                  decodings=DECODINGS, max_records=MAX_RECORDS, offset=offset or "", timestamp=timestamp or "",
                  compacted=compacted, key=key or "", found=found)


@router.get("/c/{cluster}/topics/{topic}/tail")
async def tail(request: Request, cluster: str, topic: str, partition: int = 0, offset: int | None = None,
               decoding: str = "auto",
               max_events: Annotated[int, Query(ge=1, le=TAIL_MAX_EVENTS)] = TAIL_MAX_EVENTS
               ) -> StreamingResponse:
    """SSE: new records of one partition as table rows (event ``record``); a ``: waiting``
    comment when nothing arrived for a while, so proxies keep the stream open. At most
    ``tail.max`` tails at once on the console and ``tail.max.per.client`` per client address
    (:mod:`kstream.tools.web.live_slots`): past either, 429 before anything is opened."""
    console = state_of(request)
    ref = console.cluster(cluster)
    if decoding == "avro":
        raise ConfigError("the live tail decodes as auto, text, json or hex (avro: use the browser above)")
    BrowseRequest(topic, partition, decoding=decoding).check()
    slot = console.tails.acquire(request.client.host if request.client else "unknown")
    executor = console.tails.executor()  # one thread per slot: a tail never waits for one

    def open_consumer() -> Consumer:
        consumer = Consumer({"cluster": ref.path, "enable.partition.eof": False,
                             "decode.max.items": console.limits.decode_max_items})  # typed values: the page's bound
        try:
            consumer.cluster.partition(topic, partition).close()  # TopicNotFound/PartitionNotFound: 404 now
            consumer.assign([TopicPartition(topic, partition, -1 if offset is None else offset)])
        except BaseException:
            consumer.close()
            raise
        return consumer

    opening = executor.submit(open_consumer)  # (opening reads files: not on the event loop)
    try:
        consumer = await asyncio.wrap_future(opening)
    except BaseException:
        opening.add_done_callback(_close_opened)  # a client gone mid-open: the open still finishes
        slot.release()
        raise
    template = console.templates.get_template("message_row.html")

    def poll() -> Row | None:
        message = consumer.poll(TAIL_POLL_S)
        return None if message is None else row_of(message, decoding, None, DecodeBudget.start(console.limits))

    async def events() -> AsyncIterator[str]:
        deadline = time.monotonic() + TAIL_MAX_SECONDS
        sent = idle = 0
        polling: concurrent.futures.Future[Row | None] | None = None
        try:
            yield f": tail of {topic}-{partition}\n\n"
            while sent < max_events and time.monotonic() < deadline:
                if await request.is_disconnected():
                    return
                polling = executor.submit(poll)
                row = await asyncio.wrap_future(polling)
                if row is None:
                    idle += 1
                    if idle % 30 == 0:
                        yield ": waiting\n\n"
                    continue
                idle = 0
                sent += 1
                yield event("record", template.render(row=row))
        finally:
            # A disconnect cancels the await above, not the poll on its thread: wait for the poll
            # (at most TAIL_POLL_S) before closing the consumer it uses, shielded from the cancel.
            with anyio.CancelScope(shield=True):
                if polling is not None:
                    await asyncio.wait([asyncio.wrap_future(polling)])
            _close(consumer, slot)

    stream = events()
    # A stream never started (the client left before the response began) runs no finally:
    # its consumer and slot are given back when the generator is collected.
    weakref.finalize(stream, _close, consumer, slot)
    return stream_response(stream)


def _close_opened(opening: concurrent.futures.Future[Consumer]) -> None:
    """Close the consumer an abandoned open made, if it made one."""
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()


def _close(consumer: Consumer, slot: LiveSlot) -> None:
    """Close a tail's consumer and give back its slot, once (the stream's end or its finalizer)."""
    if slot.release():
        consumer.close()


@router.get("/c/{cluster}/api/series")
def api_series(request: Request, cluster: str, name: str, topic: str | None = None, partition: int | None = None,
               group: str | None = None, since_ms: int | None = None, until_ms: int | None = None,
               limit: Annotated[int, Query(ge=1, le=figures.MAX_SERIES_POINTS)] = 500) -> JSONResponse:
    ref = state_of(request).cluster(cluster)
    since = since_ms if since_ms is not None else int(time.time() * 1000) - 3600_000
    points = figures.series(ref, name, topic=topic, partition=partition, group=group, since_ms=since,
                            until_ms=until_ms, limit=limit)
    return JSONResponse({"name": name, "topic": topic, "partition": partition, "group": group,
                         "points": [[ts, value] for ts, value in points]})
