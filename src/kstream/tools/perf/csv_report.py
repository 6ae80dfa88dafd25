"""``--csv FILE``: one row per perf result, appended, like Kafka's perf tools' CSV reporter.

The header is written when the file is new or empty; a file whose header is
different (written by another kstream version) is refused rather than mixed.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
from collections.abc import Mapping
from typing import Any

from kstream.errors import ConfigError
from kstream.tools.perf.result import PERCENTILES, PerfResult

COLUMNS = ("time", "scenario", "system", "durability", "point", "name", "clients", "records", "seconds", "record_size",
           "records_per_s", "mb_per_s", "latency_avg_ms",
           *(f"latency_p{q:g}_ms" for q in PERCENTILES), "latency_max_ms", "config")


def row(result: PerfResult, scenario: str = "", system: str = "kstream", point: str = "",
        durability: str = "") -> dict[str, Any]:
    """One CSV row; ``durability`` says what an acknowledgement promised (the study's systems carry one)."""
    lat = result.latency_ms
    return {
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "scenario": scenario,
        "system": system, "durability": durability, "point": point, "name": result.name, "clients": result.clients,
        "records": result.records, "seconds": round(result.seconds, 6), "record_size": result.record_size,
        "records_per_s": round(result.records_per_s, 1), "mb_per_s": round(result.mb_per_s, 3),
        "latency_avg_ms": _ms(lat.get("avg")),
        **{f"latency_p{q:g}_ms": _ms(lat.get(f"p{q:g}")) for q in PERCENTILES},
        "latency_max_ms": _ms(lat.get("max")),
        "config": json.dumps(result.config, sort_keys=True, default=str),
    }


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def append(path: str, rows: list[Mapping[str, Any]]) -> None:
    """Append ``rows`` (from :func:`row`) to the CSV file at ``path``."""
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    if not new:
        with open(path, newline="") as existing:
            header = next(csv.reader(existing), [])
        if tuple(header) != COLUMNS:
            raise ConfigError(f"--csv {path}: the file has other columns ({','.join(header)[:80]}...); "
                              "name a new file")
    with open(path, "a", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        writer.writerows(rows)
