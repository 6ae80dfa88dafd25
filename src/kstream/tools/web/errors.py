"""How a failed request looks: a KStreamError as an error box.

The pages call the functions the CLI calls (``parse_pairs``, ``offset_reset.scope``,
the reassignment planning), so they fail with the same :class:`KStreamError` and
message. It renders as the error page with the message, status 404 for something that does not exist, 409 for a conflict
(exists already, a busy group, a fenced writer), 429 for a live stream (a tail, a
group's live lag) past the console's caps, 400 otherwise; never a 500. A
parameter that does not parse (``partition=abc``) is a 400 box too, except on the
JSON routes (``/api/``), which keep FastAPI's 422 document.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from kstream.errors import (
    FencedError,
    GroupBusyError,
    GroupNotFoundError,
    KStreamError,
    PartitionNotFoundError,
    TopicExistsError,
    TopicNotFoundError,
)
from kstream.tools.web.live_slots import TooManyLiveStreamsError
from kstream.tools.web.state import ClusterNameError, render

NOT_FOUND: tuple[type[KStreamError], ...] = (TopicNotFoundError, PartitionNotFoundError, GroupNotFoundError,
                                             ClusterNameError)
CONFLICT: tuple[type[KStreamError], ...] = (TopicExistsError, GroupBusyError, FencedError)


def status_of(err: Exception) -> int:
    if isinstance(err, NOT_FOUND):
        return 404
    if isinstance(err, CONFLICT):
        return 409
    if isinstance(err, TooManyLiveStreamsError):
        return 429
    return 400


def _page(request: Request, message: str, status: int) -> Response:
    if "/api/" in request.url.path:  # JSON/chart routes: a plain message, not a page
        return PlainTextResponse(message, status_code=status)
    response: HTMLResponse = render(request, "error.html", status_code=status, message=message,
                                    status=status)
    return response


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""

    async def kstream_error(request: Request, err: Exception) -> Response:
        return _page(request, str(err), status_of(err))

    async def bad_parameter(request: Request, err: Exception) -> Response:
        assert isinstance(err, RequestValidationError)
        if "/api/" in request.url.path:  # JSON routes keep FastAPI's 422 document
            return await request_validation_exception_handler(request, err)
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:]) or e['loc'][0]}: {e['msg']}"
                             for e in err.errors())
        return _page(request, problems, 400)

    app.add_exception_handler(RequestValidationError, bad_parameter)
    app.add_exception_handler(KStreamError, kstream_error)
