"""One PNG per study scenario: kstream, the peer and the ceiling on one chart.

Two panels, records/s and MB/s, against the varied setting (a log axis when
it spans more than 10x; categories for words). A scenario with a ``series``
draws one line per series value. Needs matplotlib (``kstream[bench]``).
"""

from __future__ import annotations

import os
from typing import Any

_STYLE = {"kstream": {"color": "#1f77b4", "linestyle": "-", "marker": "o"},
          "peer": {"color": "#ff7f0e", "linestyle": "--", "marker": "s"},
          "ceiling": {"color": "#555555", "linestyle": ":", "marker": "^"}}
_LABEL = {"kstream": "kstream", "peer": "peer: Tansu (memory) + confluent-kafka", "ceiling": "ceiling: raw Arrow IPC"}


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
    for axis, key, unit in ((axes[0], "records_per_s", "records/s (millions)"), (axes[1], "mb_per_s", "MB/s")):
        scale = 1e6 if key == "records_per_s" else 1.0
        for system in _STYLE:
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
        if not numeric:
            axis.set_xticks(range(len(xs)), [str(x) for x in xs])
        values = [p[s][key] for p in points for s in _STYLE if s in p]
        if values and min(values) > 0 and max(values) / min(values) > 30:
            axis.set_yscale("log")
    axes[0].legend(fontsize=7, loc="best")
    machine = document["machine"]
    figure.suptitle(f"{scenario['title']}  ({machine['cpus']} CPUs, median of "
                    f"{document['defaults'].get('repeats', 1)})", fontsize=11)
    figure.tight_layout()
    path = os.path.join(out_dir, f"{scenario['name']}.png")
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path
