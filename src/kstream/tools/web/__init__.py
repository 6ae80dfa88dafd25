"""``kstream.tools.web``: the console (``kstream console``): FastAPI pages over one or more clusters.

The public entry is :func:`create_app` (imported lazily: ``import kstream.tools.web`` costs
nothing until it is called). See docs/CONSOLE.md for the pages, read-only mode and
the write guard.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from kstream.tools.web.app import create_app

        return create_app
    raise AttributeError(name)
