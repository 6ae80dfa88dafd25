"""No file in the repository keeps a merge's conflict markers (docs/MIRROR.md once shipped with them)."""

from __future__ import annotations

import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(rb"^(<{7} |={7}$|>{7} )", re.MULTILINE)
TEXT = (".py", ".java", ".md", ".toml", ".cfg", ".sh", ".xml", ".yml", ".yaml", ".json", ".properties", ".html",
        ".js", ".css", ".txt", "Makefile")


def test_no_tracked_file_holds_conflict_markers():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    marked = []
    for name in listed.decode().split("\0"):
        if not name.endswith(TEXT):
            continue
        try:
            with open(os.path.join(ROOT, name), "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            continue  # deleted in the work tree, not yet in git
        if MARKER.search(data):
            marked.append(name)
    assert marked == [], f"merge conflict markers left in: {marked}"
