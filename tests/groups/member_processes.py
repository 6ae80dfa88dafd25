"""Helpers for tests that run group members as child processes and stop them (SIGSTOP)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from helpers import produce_range


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


class MemberPair:
    """Members "a" and "b" of group "g" on topic "work" (child processes running ``child``
    with the files they report through, plus ``extra`` arguments), and a producer feeding
    the topic. :meth:`stop` resumes and ends both."""

    names = ("a", "b")

    def __init__(self, cluster_path: str, tmp_path, groups, child: str, partitions: int, *extra: str):
        self.cluster_path = cluster_path
        self.groups = groups
        self.partitions = partitions
        self.produced = 0
        self.files = {n: {k: str(tmp_path / f"{n}.{k}") for k in ("out", "flag", "status")} for n in self.names}
        self.children: dict[str, subprocess.Popen] = {}
        for n in self.names:
            f = self.files[n]
            self.children[n] = subprocess.Popen([sys.executable, child, cluster_path, "g", "work", f["out"], n,
                                                 f["flag"], f["status"], *extra])

    def produce(self, count: int = 40) -> None:
        produce_range(self.cluster_path, "work", self.produced, count, prefix="r", partitions=self.partitions,
                      config={"acks": "1", "linger.ms": 0})
        self.produced += count

    def both_working(self) -> bool:
        """Feeds the topic; True once the group is stable with both members consuming."""
        self.produce()
        group = self.groups.coordinator.describe("g")
        return (group is not None and group.state == "Stable" and len(group.members) == 2
                and all(m.assignment for m in group.members)
                and all(len(file_words(self.files[n]["out"])) > 0 for n in self.names))

    def stop(self) -> None:
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGCONT)
                child.send_signal(signal.SIGTERM)
        for child in self.children.values():
            child.wait(timeout=30)
