"""Samples to CSV files, one file per metric name, like Kafka's ``CsvReporter``.

``<directory>/<name>.csv`` gets one line per sample: ``ts_ms,topic,partition,group,labels,value``
(the header is written when the file is created; empty fields for nulls;
labels as JSON). Files are appended to and flushed per write; a file that
reaches ``max_file_bytes`` is renamed to ``<name>.csv.1`` (replacing an older
one) and a new file is started, so the directory holds at most two files per
name. The directory must exist (a typo should not scatter files).

Not thread-safe: one writer (the sampler's thread) per reporter.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence

from kstream.errors import ConfigError
from kstream.tools.monitor.metrics_topic import Sample

HEADER = ("ts_ms", "topic", "partition", "group", "labels", "value")
DEFAULT_MAX_FILE_BYTES = 64 << 20
MAX_FILE_BYTES = 1 << 40


class CsvReporter:
    """Appends samples to per-metric CSV files in ``directory``; usable as a sampler reporter."""

    def __init__(self, directory: str, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES):
        if not os.path.isdir(directory):
            raise ConfigError(f"csv directory {directory!r} does not exist; create it first")
        if not 1024 <= max_file_bytes <= MAX_FILE_BYTES:
            raise ConfigError(f"max_file_bytes={max_file_bytes}: must be from 1024 to {MAX_FILE_BYTES}")
        self.directory = directory
        self.max_file_bytes = max_file_bytes

    def __call__(self, samples: Sequence[Sample]) -> int:
        return self.write(samples)

    def path(self, name: str) -> str:
        return os.path.join(self.directory, f"{name}.csv")

    def write(self, samples: Sequence[Sample]) -> int:
        """Append ``samples``, grouped by name; how many lines were written."""
        by_name: dict[str, list[Sample]] = {}
        for s in samples:
            by_name.setdefault(s.name, []).append(s)
        for name, rows in by_name.items():
            path = self.path(name)
            if os.path.exists(path) and os.path.getsize(path) >= self.max_file_bytes:
                os.replace(path, path + ".1")
            new = not os.path.exists(path)
            with open(path, "a", newline="", encoding="utf-8") as f:
                out = csv.writer(f)
                if new:
                    out.writerow(HEADER)
                for s in rows:
                    out.writerow((s.ts_ms, s.topic or "", "" if s.partition is None else s.partition,
                                  s.group or "", json.dumps(dict(s.labels), sort_keys=True), repr(s.value)))
        return len(samples)
