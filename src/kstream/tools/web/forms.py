"""Form fields as the CLI's arguments: textarea lines to ``K=V`` pairs, lists, integers.

Each helper turns what a form posts into what the matching CLI option would
hold, then the parser the CLI uses too checks it (:mod:`kstream.config.option_text`:
``parse_pairs``, ``parse_schema``), so a bad value gets the same message."""

from __future__ import annotations

from kstream.config.option_text import parse_pairs
from kstream.errors import ConfigError

MAX_FORM_LINES = 1000


def lines(text: str | None) -> tuple[str, ...]:
    """Non-empty, stripped lines of a textarea. Only newlines split: commas belong to
    values (``cleanup.policy=compact,delete``)."""
    found = tuple(line.strip() for line in (text or "").splitlines() if line.strip())
    if len(found) > MAX_FORM_LINES:
        raise ConfigError(f"{len(found)} lines: at most {MAX_FORM_LINES}")
    return found


def pairs(text: str | None, what: str) -> dict[str, str]:
    """``K=V`` lines as ``--config K=V`` options (the CLI's parser and its message)."""
    return parse_pairs(lines(text), what)


def integer_or(text: str | None, what: str, default: int) -> int:
    """The integer in ``text``; ``default`` when it is empty (the CLI option left out)."""
    if text is None or not text.strip():
        return default
    try:
        return int(text.strip())
    except ValueError as err:
        raise ConfigError(f"{what} {text!r} is not an integer") from err
