"""Browser tests: Debian's chromium driven by playwright against a real console server.

Each test gets a demo cluster under tmp_path (scripts/console_screenshots.py's
``demo_cluster``: topics orders / payments (typed) / audit (an open transaction),
groups billing and reports) and starts the console over it with :func:`serve`
(uvicorn in a thread on a free port, as ``kstream console`` builds the app).

Without playwright or chromium every test here skips with ONE line saying which is
missing (:func:`pytest_runtest_setup`):
``make test`` installs both (the ``dev`` extra; scripts/ensure-browser.sh).
One chromium is launched per session; each page gets its own browser context
(cookies and storage of its own) and a context is closed before its server stops.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

SCRIPTS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts")
sys.path.insert(0, os.path.abspath(SCRIPTS))
screens = importlib.import_module("console_screenshots")

PAGE_TIMEOUT_MS = 15_000  # a wait on the page that takes longer fails the test


def _missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    if importlib.util.find_spec("playwright") is None:
        return "the Python package playwright is not installed (pip install -e '.[dev]')"
    if screens.find_chromium() is None:
        return ("no chromium (scripts/ensure-browser.sh installs Debian's as root; "
                "or set KSTREAM_CHROMIUM to a chromium executable)")
    return None


MISSING = _missing()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip every test of this directory when chromium or playwright is missing. Raised from
    this hook (not from a fixture, whose skips pytest reports at each test's line), the
    skips share one location, so ``pytest -ra`` prints them as ONE line."""
    if MISSING is not None:
        pytest.skip(f"browser tests skipped: {MISSING}")


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = screens.launch_chromium(playwright, screens.find_chromium())
        yield launched
        launched.close()


@pytest.fixture
def demo(tmp_path, browser):
    """The demo cluster's path (no lag history: the tests that need one start a sampler)."""
    path = str(tmp_path / screens.DEMO)
    with screens.demo_cluster(path, history_rounds=0):
        yield path


@dataclass
class Console:
    """A served console: its base ``url``, the cluster ``path``, and pages on it."""

    url: str
    path: str
    browser: Any
    contexts: list[Any] = field(default_factory=list)

    def page(self, **context_options: Any) -> Any:
        """A page in a new browser context (1280x800; ``context_options`` as playwright's
        ``new_context``, e.g. ``java_script_enabled=False``, ``color_scheme="dark"``)."""
        context = self.browser.new_context(viewport=screens.VIEWPORT, base_url=self.url, **context_options)
        context.set_default_timeout(PAGE_TIMEOUT_MS)
        self.contexts.append(context)
        return context.new_page()


@pytest.fixture
def serve(demo, browser):
    """serve(read_only=False, samplers=None) -> Console over the demo cluster; everything
    it started stops at the end of the test (pages first, then the server)."""
    from kstream.tools.web.clusters import ClusterRef, check_clusters

    stack = contextlib.ExitStack()

    def start(read_only: bool = False, samplers: Any = None) -> Console:
        clusters = check_clusters([ClusterRef(screens.DEMO, demo)])
        url = stack.enter_context(screens.serve_console(clusters, read_only=read_only, samplers=samplers))
        console = Console(url, demo, browser)
        stack.callback(lambda: [context.close() for context in console.contexts])
        return console

    with stack:
        yield start
