"""Helpers for tests that run group members as child processes and stop them (SIGSTOP)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def file_words(path: str) -> list[str]:
    """The whitespace-separated words a child wrote to ``path`` (none if it wrote nothing yet)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().split()


def process_state(pid: int) -> str:
    """The kernel's one-letter state of ``pid`` ("T": stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def is_stopped(pid: int) -> bool:
    return process_state(pid) == "T"


def wait_until(condition: Callable[[], bool], seconds: float, what: str,
               detail: Callable[[], str] | None = None) -> None:
    """Poll ``condition`` until it holds; AssertionError naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (detail() if detail else ""))
        time.sleep(0.02)
