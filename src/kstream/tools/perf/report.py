"""The study's tables in Markdown (``results.md``), from the study document alone."""

from __future__ import annotations

from typing import Any

_SYSTEM_NAMES = {"kstream": "kstream", "peer": "peer (Tansu, memory)", "ceiling": "ceiling (raw IPC)"}


def markdown(document: dict[str, Any]) -> str:
    """Every scenario as a table: the point, each system's median records/s and MB/s, the ratios."""
    machine = document["machine"]
    lines = [
        "# Study results",
        "",
        f"Made by `{document['command']}` on {document['started']}"
        + (f", in {document['seconds'] / 60:.1f} min." if "seconds" in document else " (still running)."),
        "",
        f"Machine: {machine['cpus']} CPUs ({machine['cpu_model']}), {machine['memory_gib']} GiB, "
        f"Python {machine['python']}, pyarrow {machine['pyarrow']}, kstream {machine['kstream']}; "
        f"write + fdatasync of 1 MiB blocks in the log dirs: {machine['fdatasync_1mib_mb_per_s']} MB/s.",
        "",
        "Figures are medians of the repeats (records/s in millions; MB/s of value bytes). The peer keeps "
        "data in memory only, which flatters it; the ceiling is plain pyarrow on the same dirs.",
    ]
    for scenario in document["scenarios"]:
        lines += ["", f"## {scenario['title']}", ""]
        if scenario["notes"]:
            lines += [scenario["notes"], ""]
        head = [scenario["vary"]] + ([scenario["series"]] if scenario["series"] else [])
        lines.append("| " + " | ".join(head + [f"{_SYSTEM_NAMES[s]} M rec/s | MB/s" for s in _SYSTEM_NAMES]
                                       + ["kstream ÷ peer", "kstream ÷ ceiling", "latency p50 / p99 ms"]) + " |")
        lines.append("|" + "---|" * (len(head) + 2 * len(_SYSTEM_NAMES) + 3))
        for point in scenario["points"]:
            cells = [str(point["x"])] + ([str(point["line"])] if scenario["series"] else [])
            for system in _SYSTEM_NAMES:
                figure = point.get(system)
                cells += ([f"{figure['records_per_s'] / 1e6:.3f}", f"{figure['mb_per_s']:.0f}"] if figure
                          else ["-", "-"])
            cells.append(_ratio(point.get("kstream_to_peer")))
            cells.append(_ratio(point.get("kstream_to_ceiling")))
            latency = point.get("kstream", {}).get("latency_ms", {})
            cells.append(f"{latency['p50']:.1f} / {latency['p99']:.1f}" if latency else "-")
            lines.append("| " + " | ".join(cells) + " |")
        skipped = {f"{s}: {why}" for p in scenario["points"] for s, why in p["skipped"].items()}
        if skipped:
            lines += ["", "Not measured: " + "; ".join(sorted(skipped)) + "."]
    return "\n".join(lines) + "\n"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
