"""One PNG per study scenario: kstream, Apache Kafka at both durabilities and the ceiling on one chart.

Two panels, records/s and MB/s (latency p50 and p99 for end-to-end
scenarios), against the varied setting (a log axis when it spans more than
10x; categories for words). A scenario with a ``series`` draws one line per
series value. Every Kafka line's legend names its durability; Tansu is a
thin secondary line. Needs matplotlib (``kstream[bench]``).
"""

from __future__ import annotations

import os
from typing import Any

from kstream.tools.perf.study_systems import BY_KEY

_STYLE: dict[str, dict[str, Any]] = {"kstream": {"color": "#1f77b4", "linestyle": "-", "marker": "o", "linewidth": 2.2},
          "kafka": {"color": "#ff7f0e", "linestyle": "--", "marker": "s"},
          "kafka_fsync": {"color": "#d62728", "linestyle": "--", "marker": "D"},
          "kafka_tools": {"color": "#ff7f0e", "linestyle": "-.", "marker": "x", "linewidth": 1.0},
          "kafka_tools_fsync": {"color": "#d62728", "linestyle": "-.", "marker": "+", "linewidth": 1.0},
          "tansu": {"color": "#9467bd", "linestyle": ":", "marker": ".", "linewidth": 0.8},
          "ceiling": {"color": "#555555", "linestyle": ":", "marker": "^"}}
_LABEL = {key: f"{BY_KEY[key].label} ({BY_KEY[key].durability})" for key in _STYLE}
_LABEL["kstream"] = "kstream (durability per its acks)"
_LABEL["ceiling"] = "ceiling: raw Arrow IPC"


_CEILING_SETTINGS = {"acks", "replication_factor", "min_insync_replicas", "record_size", "batch_size",
                     "producers", "threads", "records", "max_bytes"}
"""Settings the ceiling's own run depends on; over any other series it is one line (their mean)."""


def _plot_ceiling_once(axis: Any, points: list[dict[str, Any]], xs: list[Any], position: dict[Any, Any],
                       key: str, scale: float) -> None:
    at = [(position[x], [p["ceiling"][key] for p in points if p["x"] == x and "ceiling" in p]) for x in xs]
    at = [(x, values) for x, values in at if values]
    if at:
        axis.plot([x for x, _ in at], [sum(v) / len(v) / scale for _, v in at], label=_LABEL["ceiling"],
                  **_STYLE["ceiling"])


def draw_all(document: dict[str, Any], out_dir: str) -> list[str]:
    """Draw every scenario of ``document`` into ``out_dir``; the PNG paths."""
    import matplotlib

    matplotlib.use("Agg")
    return [draw(scenario, document, out_dir) for scenario in document["scenarios"]]


def draw(scenario: dict[str, Any], document: dict[str, Any], out_dir: str) -> str:
    import matplotlib.pyplot as plt

    points = scenario["points"]
    xs = list(dict.fromkeys(p["x"] for p in points))
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs)
    position = {x: (x if numeric else i) for i, x in enumerate(xs)}
    lines = list(dict.fromkeys(p["line"] for p in points))
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = ((axes[0], "records_per_s", "records/s (millions)"), (axes[1], "mb_per_s", "MB/s"))
    if scenario["run"] == "end_to_end":  # a throttled run: its figure is the latency
        points = [dict(p, **{s: dict(p[s], p50=p[s]["latency_ms"]["p50"], p99=p[s]["latency_ms"]["p99"])
                             for s in _STYLE if s in p and p[s].get("latency_ms")}) for p in points]
        points = [{k: v for k, v in p.items() if k not in _STYLE or "p50" in v} for p in points]
        panels = ((axes[0], "p50", "latency p50 (ms)"), (axes[1], "p99", "latency p99 (ms)"))
    for axis, key, unit in panels:
        scale = 1e6 if key == "records_per_s" else 1.0
        for system in _STYLE:
            if system == "ceiling" and len(lines) > 1 and scenario["series"] not in _CEILING_SETTINGS:
                _plot_ceiling_once(axis, points, xs, position, key, scale)
                continue
            for n, line in enumerate(lines):
                chosen = [p for p in points if p["line"] == line and system in p]
                if not chosen:
                    continue
                label = _LABEL[system] + (f", {scenario['series']}={line}" if scenario["series"] else "")
                style: dict[str, Any] = dict(_STYLE[system])
                if len(lines) > 1:
                    style["alpha"] = 0.45 + 0.55 * (n + 1) / len(lines)
                    style["marker"] = "osD^v<>p*h"[n % 10]
                axis.plot([position[p["x"]] for p in chosen], [p[system][key] / scale for p in chosen],
                          label=label, **style)
        axis.set_ylabel(unit)
        axis.set_xlabel(scenario["vary"])
        axis.grid(True, alpha=0.3)
        if numeric and max(xs) / max(min(xs), 1e-9) > 10:
            axis.set_xscale("log")
        if numeric:
            axis.set_xticks(xs, [f"{x:,}" for x in xs])
            axis.minorticks_off()
        if not numeric:
            axis.set_xticks(range(len(xs)), [str(x) for x in xs])
        values = [p[s][key] for p in points for s in _STYLE if s in p]
        if values and min(values) > 0 and max(values) / min(values) > 10:
            axis.set_yscale("log")
    axes[0].legend(fontsize=6, loc="best")
    machine = document["machine"]
    figure.suptitle(f"{scenario['title']}  ({machine['cpus']} CPUs, median of "
                    f"{document['defaults'].get('repeats', 1)})", fontsize=11)
    figure.tight_layout()
    path = os.path.join(out_dir, f"{scenario['name']}.png")
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path
