"""How `kstream produce` turns a line of stdin into a record: kafka-console-producer's
LineMessageReader.

The same ``--property`` names and defaults as Kafka's tool:

=====================  =========  ====================================================
property               default    meaning
=====================  =========  ====================================================
parse.key              false      the line holds ``key<key.separator>value``
key.separator          ``\\t``     between key and value
parse.headers          false      the line starts with ``headers<headers.delimiter>``
headers.delimiter      ``\\t``     between the headers and the rest of the line
headers.separator      ``,``      between headers (a literal string; Kafka's is a regex)
headers.key.separator  ``:``      between a header's key and value
null.marker            (none)     a key, value or header value equal to it is null
ignore.error           false      a line without a separator: key null, value the line
=====================  =========  ====================================================

A line is ``[headers<delimiter>][key<separator>]value``. A line missing a
separator it must have is refused with its line number (unless ignore.error),
as Kafka does. Lines are bytes: kstream does not decode them, so any encoding
passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kstream.errors import ConfigError, InvalidRecordError
from kstream.tools.cli.formatter import parse_bool, unescape

PROPERTIES = ("parse.key", "key.separator", "parse.headers", "headers.delimiter", "headers.separator",
              "headers.key.separator", "null.marker", "ignore.error")
"""Every property the reader takes (the rest are refused)."""


@dataclass(frozen=True)
class ParsedLine:
    """One record read from a line."""

    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] | None


@dataclass(frozen=True)
class LineReader:
    """Parses lines as kafka-console-producer's default reader does. Immutable; safe to share."""

    parse_key: bool = False
    key_separator: bytes = b"\t"
    parse_headers: bool = False
    headers_delimiter: bytes = b"\t"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_marker: bytes | None = None
    ignore_error: bool = False

    def __post_init__(self) -> None:
        separators = {"key.separator": self.key_separator, "headers.delimiter": self.headers_delimiter,
                      "headers.separator": self.headers_separator,
                      "headers.key.separator": self.headers_key_separator}
        for name, value in separators.items():
            if not value:
                raise ConfigError(f"property {name} must not be empty")
        pairs = [("headers.delimiter", "headers.separator"), ("headers.delimiter", "headers.key.separator"),
                 ("headers.separator", "headers.key.separator")]
        if self.null_marker is not None:
            pairs += [(name, "null.marker") for name in separators]
            separators = {**separators, "null.marker": self.null_marker}
        for first, second in pairs:
            if separators[first] == separators[second]:
                raise ConfigError(f"properties {first} and {second} may not be equal")

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> LineReader:
        """From ``--property`` pairs; an unknown name or a bad value raises ConfigError."""
        unknown = sorted(set(properties) - set(PROPERTIES))
        if unknown:
            raise ConfigError(f"unknown reader properties {unknown}; kstream's line reader takes "
                              f"{', '.join(PROPERTIES)}")
        fields: dict[str, object] = {}
        for name, value in properties.items():
            attribute = name.replace(".", "_")
            if name in ("parse.key", "parse.headers", "ignore.error"):
                fields[attribute] = parse_bool(name, value)
            else:
                fields[attribute] = unescape(value).encode()
        return cls(**fields)  # type: ignore[arg-type]

    def parse(self, line: bytes, line_number: int) -> ParsedLine:
        """The record in ``line`` (without its line ending); InvalidRecordError if a required
        separator is missing (unless ignore.error)."""
        start = 0
        headers: list[tuple[str, bytes | None]] | None = None
        if self.parse_headers:
            text = self._until(line, start, self.headers_delimiter, "headers delimiter", line_number)
            if text is not None:
                start += len(text) + len(self.headers_delimiter)
                headers = None if text == self.null_marker else self._headers(text, line_number)
        key = None
        if self.parse_key:
            key = self._until(line, start, self.key_separator, "key separator", line_number)
            if key is not None:
                start += len(key) + len(self.key_separator)
        value: bytes | None = line[start:]
        return ParsedLine(None if key == self.null_marker else key,
                          None if value == self.null_marker else value, headers)

    def _until(self, line: bytes, start: int, separator: bytes, what: str, line_number: int) -> bytes | None:
        end = line.find(separator, start)
        if end == -1:
            if self.ignore_error:
                return None
            raise InvalidRecordError(f"no {what} {separator.decode(errors='replace')!r} found on line "
                                     f"number {line_number}: {line[:200].decode(errors='replace')!r} "
                                     "(set the property ignore.error=true to read such lines as a value)")
        return line[start:end]

    def _headers(self, text: bytes, line_number: int) -> list[tuple[str, bytes | None]]:
        result: list[tuple[str, bytes | None]] = []
        for pair in text.split(self.headers_separator):
            key, sep, value = pair.partition(self.headers_key_separator)
            if not sep:
                if not self.ignore_error:
                    raise InvalidRecordError(
                        f"no header key separator {self.headers_key_separator.decode(errors='replace')!r} "
                        f"found in pair {pair.decode(errors='replace')!r} on line number {line_number}")
                result.append((pair.decode(errors="replace"), None))
                continue
            if key == self.null_marker:
                raise InvalidRecordError(f"header keys cannot be null: {key!r} on line number "
                                         f"{line_number} equals the null.marker")
            result.append((key.decode(errors="replace"), None if value == self.null_marker else value))
        return result
