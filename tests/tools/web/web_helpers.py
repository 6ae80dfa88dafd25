"""Helpers of the console's tests (a module of its own: conftest.py is not importable by name)."""

from __future__ import annotations

from helpers import file_tree

ORIGIN = {"Origin": "http://testserver"}


def tree(path):
    """Every file and dir under ``path`` (tests/helpers.py's file_tree)."""
    return file_tree(path)
