"""The study's tables in Markdown (``results.md``), from the study document alone.

Each system's column is headed by its name and durability
(:mod:`kstream.tools.perf.study_systems`); each row says at which durability
kstream's figure was made, and compares it with Kafka at the same durability.
"""

from __future__ import annotations

from typing import Any

from kstream.tools.perf.study_systems import BY_KEY, KEYS, full_label


def markdown(document: dict[str, Any]) -> str:
    """Every scenario as a table: the point, each system's median figure, the ratios."""
    machine = document["machine"]
    kafka = document.get("kafka", {})
    peer = (f"Apache Kafka {kafka['version']} on loopback (KRaft, one JVM per broker, {kafka['heap']} heap; "
            "three brokers in a scenario with replicas)" if "version" in kafka
            else f"Apache Kafka not measured: {kafka.get('missing', 'no peer facts in this document')}")
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
        f"The peer: {peer}. Figures are medians of the repeats: M records/s · MB/s of value bytes "
        "(latency p50 / p99 ms for end-to-end scenarios). Each column names its durability:",
        "",
        *[f"- **{BY_KEY[key].label}**: {BY_KEY[key].durability}" for key in KEYS],
        "",
        "\"kstream ÷ Kafka (equal durability)\" compares kstream with confluent-kafka → Kafka at kstream's "
        "durability: flush.messages=1 for acks=all writes, Kafka's default for acks=1/0 and for reads. "
        "Arrow-batch rows have no Kafka run (a kstream API); \"kstream ÷ fastest Kafka\" compares them with "
        "the fastest Kafka figure of the same point per record.",
    ]
    for scenario in document["scenarios"]:
        lines += _scenario(scenario)
    return "\n".join(lines) + "\n"


def _scenario(scenario: dict[str, Any]) -> list[str]:
    lines = ["", f"## {scenario['title']}", ""]
    if scenario["notes"]:
        lines += [scenario["notes"], ""]
    points = scenario["points"]
    shown = [k for k in KEYS if any(k in p for p in points)]
    latency = scenario["run"] == "end_to_end"
    head = [scenario["vary"]] + ([scenario["series"]] if scenario["series"] else []) + ["kstream durability"]
    head += [full_label(k) for k in shown]
    if not latency:
        head += ["kstream ÷ Kafka (equal durability)", "kstream ÷ fastest Kafka", "kstream ÷ ceiling",
                 "kstream latency p50 / p99 ms"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for point in points:
        cells = [str(point["x"])] + ([str(point["line"])] if scenario["series"] else [])
        cells.append(point.get("durability", {}).get("kstream", "-"))
        cells += [_figure(point.get(k), latency) for k in shown]
        if not latency:
            equal = point.get("equal_durability", "kafka")
            ratio = point.get(f"kstream_to_{equal}")
            cells.append("-" if ratio is None else f"{ratio:.2f} (vs {BY_KEY[equal].label})")
            fastest = point.get("fastest_kafka")
            cells.append("-" if fastest is None else
                         f"{point['kstream_to_fastest_kafka']:.2f} (vs {BY_KEY[fastest['system']].label})")
            cells.append(_ratio(point.get("kstream_to_ceiling")))
            own = point.get("kstream", {}).get("latency_ms", {})
            cells.append(f"{own['p50']:.1f} / {own['p99']:.1f}" if own else "-")
        lines.append("| " + " | ".join(cells) + " |")
    skipped: dict[str, set[str]] = {}
    for point in points:
        for system, why in point["skipped"].items():
            skipped.setdefault(f"{BY_KEY[system].label} ({BY_KEY[system].durability})", set()).add(why)
    if skipped:
        lines += ["", "Not measured:", ""]
        lines += [f"- {label}: {'; '.join(sorted(whys))}." for label, whys in skipped.items()]
    return lines


def _figure(figure: dict[str, Any] | None, latency: bool) -> str:
    if not figure:
        return "-"
    if latency:
        lat = figure.get("latency_ms", {})
        return f"{lat['p50']:.1f} / {lat['p99']:.1f}" if lat else "-"
    return f"{figure['records_per_s'] / 1e6:.3f} · {figure['mb_per_s']:.0f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
