"""A console's configuration and rendering, shared by every route module.

:class:`ConsoleState` is built once by :func:`kstream.tools.web.app.create_app` and
kept on ``app.state.console``; routes reach it with :func:`state_of`. It holds
configuration (cluster refs, flags, limits, the samplers the console runs) and the
live streams' slots and threads (tails, groups' live lag), never an open cluster: each request opens what it
reads and closes it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, select_autoescape

from kstream.errors import KStreamError
from kstream.tools.web.clusters import ClusterRef
from kstream.tools.web.limits import ConsoleLimits
from kstream.tools.web.live_slots import LiveKind, LiveSlots

HERE = os.path.dirname(os.path.abspath(__file__))
THEMES = ("auto", "light", "dark")
THEME_COOKIE = "kstream_theme"


@dataclass
class ConsoleState:
    """What every route needs: clusters by name, read-only flag, samplers (cluster name ->
    kstream.tools.monitor Sampler, empty when none run), the limits on a request's cost and the
    templates."""

    clusters: Mapping[str, ClusterRef]
    read_only: bool
    samplers: Mapping[str, Any] = field(default_factory=dict)
    limits: ConsoleLimits = field(default_factory=ConsoleLimits)
    tails: LiveSlots = field(init=False)  # topic tails
    group_streams: LiveSlots = field(init=False)  # groups' live lag
    templates: Jinja2Templates = field(init=False)
    vendored: bool = field(init=False)  # htmx/uPlot present (scripts/vendor_web_assets.py ran)

    def __post_init__(self) -> None:
        env = Environment(loader=FileSystemLoader(os.path.join(HERE, "templates")),
                          autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
        env.filters["bytes"] = human_bytes
        env.filters["when"] = when
        env.filters["tojson_compact"] = lambda value: json.dumps(value, separators=(",", ":"))
        self.templates = Jinja2Templates(env=env)
        limits = self.limits
        self.tails = LiveSlots(LiveKind("live tails", limits.tail_max, limits.tail_max_per_client, "--max-tails",
                                        "--max-tails-per-client", "a tab showing messages", "kstream-tail"))
        self.group_streams = LiveSlots(LiveKind(
            "live group streams", limits.group_live_max, limits.group_live_max_per_client, "--max-group-streams",
            "--max-group-streams-per-client", "a group page (its live lag)", "kstream-group-live"))
        self.vendored = os.path.isfile(os.path.join(HERE, "static", "vendor", "htmx.min.js"))

    def cluster(self, name: str) -> ClusterRef:
        """The served cluster ``name``; an unknown one is a 404 page (TopicNotFound's kin)."""
        try:
            return self.clusters[name]
        except KeyError:
            raise ClusterNameError(f"this console serves no cluster named {name!r} (it serves "
                                   f"{', '.join(self.clusters)})") from None


class ClusterNameError(KStreamError):
    """A URL names a cluster the console does not serve."""


def state_of(request: Request) -> ConsoleState:
    console: ConsoleState = request.app.state.console
    return console


def theme_of(request: Request) -> str:
    chosen = request.cookies.get(THEME_COOKIE, "auto")
    return chosen if chosen in THEMES else "auto"


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """A page: ``template`` with the console's common context (clusters, read-only, theme)."""
    console = state_of(request)
    context.setdefault("cluster_name", request.path_params.get("cluster"))
    common = {"clusters": console.clusters, "read_only": console.read_only, "theme": theme_of(request),
              "vendored": console.vendored, "path": request.url.path,
              "query": request.url.query}
    response: HTMLResponse = console.templates.TemplateResponse(request, template, {**common, **context},
                                                                  status_code=status_code)
    return response


def human_bytes(value: int | float | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def when(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")

