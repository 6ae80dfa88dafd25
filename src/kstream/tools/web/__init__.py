"""``kstream.tools.web``: the console (``kstream console``): FastAPI pages over one or more clusters.

The public entries are :func:`create_app` and :func:`make_samplers` (imported lazily: ``import kstream.tools.web`` costs
nothing until it is called). See docs/CONSOLE.md for the pages, read-only mode and
the write guard.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstream._lazy import lazy_exports

if TYPE_CHECKING:
    from kstream.tools.web.app import create_app
    from kstream.tools.web.figures import make_samplers

__all__ = ["create_app", "make_samplers"]

__getattr__, __dir__ = lazy_exports(__name__, {"create_app": "kstream.tools.web.app",
                                               "make_samplers": "kstream.tools.web.figures"}, __all__)
