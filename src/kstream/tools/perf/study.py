"""``kstream perf study PLAN``: run every scenario of a plan, side by side, and write it all down.

For each point of each scenario, ``repeats`` times in turn: kstream, then
the peer, Apache Kafka (:mod:`kstream.tools.perf.study_kafka`), at its two
durabilities and with two clients (confluent-kafka; Kafka's own perf tools),
then Tansu (a secondary line, memory only), then the machine's ceiling (plain
pyarrow on the same log dirs), so every system shares the machine's state of
the moment (:mod:`kstream.tools.perf.study_systems` names them, each with its
durability). The peers run in the first ``peer_repeats`` repeats (default:
all). The median run of each system is the point's figure; every run is kept.
A Kafka line that cannot run a point says why in the point's ``skipped``;
without Java or the Kafka jars, one line says so and the study goes on.

Writes into ``out_dir``: ``study.json`` (machine, plan, every run and
median), ``study.csv`` (one row per run, the ``--csv`` columns), one PNG per
scenario (:mod:`kstream.tools.perf.plots`) and ``results.md`` (the tables). The
study cluster (three log dirs) lives in ``work_dir`` and is removed at the
end unless ``keep``.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from kstream import _version
from kstream.admin import Admin, NewTopic
from kstream.errors import KStreamError
from kstream.tools.perf import ceiling, csv_report, kafka_peer, plots, report, study_systems
from kstream.tools.perf.plan import Plan, Scenario
from kstream.tools.perf.result import PerfResult
from kstream.tools.perf.study_kafka import KafkaPeers, brokers_needed, kafka_missing, kafka_point
from kstream.tools.perf.study_points import NotApplicableError, ceiling_point, kstream_point, tansu_point
from kstream.tools.perf.study_systems import KAFKA_KEYS, KEYS

Progress = Callable[[str], None]


def run(plan: Plan, out_dir: str, work_dir: str, command: str, progress: Progress = print,
        keep: bool = False, kafka: KafkaPeers | None = None) -> dict[str, Any]:
    """Run ``plan``; write the outputs; return the study document (what study.json holds).

    ``kafka``: the Kafka brokers to use (default: started here on first use, stopped at the end).
    """
    if os.path.exists(work_dir) and os.listdir(work_dir):
        raise KStreamError(f"study work dir {work_dir} is not empty: name a new one or remove it")
    try:
        import matplotlib  # noqa: F401 - checked before a long run, not after it
    except ImportError as err:
        raise KStreamError("the study draws its plots with matplotlib: pip install 'kstream[bench]'") from err
    os.makedirs(out_dir, exist_ok=True)
    created_work_dir = not os.path.exists(work_dir)
    log_dirs = [os.path.join(work_dir, f"disk{i}") for i in range(plan.defaults.get("log_dirs", 3))]
    cluster = os.path.join(work_dir, "cluster")
    with Admin({"cluster": cluster, "log.dirs": ",".join(log_dirs)}) as admin:
        admin.create_topics([NewTopic("study-created", 1)])["study-created"].result()  # (and the cluster)
        admin.delete_topics(["study-created"])["study-created"].result()
    started = time.monotonic()
    peers = kafka or KafkaPeers()
    missing = None if peers.external else kafka_missing()
    if missing:
        progress(f"Apache Kafka peer skipped: {missing}")
    document: dict[str, Any] = {"command": command, "machine": machine(log_dirs[0]),
                                "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                                "defaults": dict(plan.defaults), "kafka": _kafka_facts(missing),
                                "systems": {s.key: {"label": s.label, "durability": s.durability}
                                            for s in study_systems.SYSTEMS},
                                "scenarios": []}
    csv_path = os.path.join(out_dir, "study.csv")
    if os.path.exists(csv_path):
        os.remove(csv_path)
    try:
        for scenario in plan.scenarios:
            document["scenarios"].append(_scenario(scenario, cluster, log_dirs, csv_path, progress, peers))
            _write(document, out_dir)
    finally:
        if kafka is None:
            peers.close()
        document["kafka"]["start_seconds"] = {str(n): round(t, 1) for n, t in peers.start_seconds.items()}
        if not keep:  # what the study made, and the work dir only if it made that too
            for path in [cluster, *log_dirs]:
                shutil.rmtree(path, ignore_errors=True)
            if created_work_dir:
                shutil.rmtree(work_dir, ignore_errors=True)
    document["seconds"] = round(time.monotonic() - started, 1)
    _write(document, out_dir)
    plots.draw_all(document, out_dir)
    progress(f"study done in {document['seconds'] / 60:.1f} min: {out_dir}")
    return document


def _write(document: dict[str, Any], out_dir: str) -> None:
    with open(os.path.join(out_dir, "study.json"), "w") as f:
        json.dump(document, f, indent=1, default=str)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(report.markdown(document))


def _kafka_facts(missing: str | None) -> dict[str, Any]:
    if missing:
        return {"missing": missing}
    return {"version": kafka_peer.kafka_version(), "heap": kafka_peer.DEFAULT_HEAP}


def _scenario(scenario: Scenario, cluster: str, log_dirs: list[str], csv_path: str, progress: Progress,
              peers: KafkaPeers) -> dict[str, Any]:
    progress(f"== {scenario.name}: {scenario.title}")
    started = time.monotonic()
    points = []
    all_points = scenario.points()
    brokers = brokers_needed(all_points)
    for index, point in enumerate(all_points):
        runs: dict[str, list[PerfResult]] = {s: [] for s in KEYS}
        skipped: dict[str, str] = {}
        peer_repeats = min(point.get("repeats", 1), point.get("peer_repeats", point.get("repeats", 1)))
        for repeat in range(point.get("repeats", 1)):
            topic = f"study-{scenario.name}-{index}-{repeat}"
            attempts: dict[str, Callable[[], PerfResult]] = {
                "kstream": lambda: kstream_point(scenario.run, point, cluster, topic),  # noqa: B023
                **{key: functools.partial(kafka_point, key, scenario.run, point, f"{topic}-{key}", peers, brokers)
                   for key in KAFKA_KEYS},
                "tansu": lambda: tansu_point(scenario.run, point, topic),  # noqa: B023
                "ceiling": lambda: ceiling_point(scenario.run, point, log_dirs),  # noqa: B023
            }
            for system, attempt in attempts.items():
                if system in skipped or (repeat >= peer_repeats and system not in ("kstream", "ceiling")):
                    continue
                try:
                    runs[system].append(attempt())
                except NotApplicableError as why:
                    skipped[system] = str(why)
                except KStreamError as err:
                    if system == "kstream":
                        raise
                    skipped[system] = f"failed: {err}"  # a peer's or the ceiling's failure is a finding, kept
        entry = _point_entry(scenario, point, runs, skipped)
        points.append(entry)
        _against_fastest_kafka(points)  # (at each point: a batch point before its twin gets it then)
        _csv_rows(csv_path, scenario, entry, runs)
        progress(_point_line(scenario, entry))
    return {"name": scenario.name, "title": scenario.title, "run": scenario.run, "vary": scenario.vary,
            "series": scenario.series, "notes": scenario.notes, "kafka_brokers": brokers,
            "seconds": round(time.monotonic() - started, 1), "points": points}


def _point_entry(scenario: Scenario, point: dict[str, Any], runs: dict[str, list[PerfResult]],
                 skipped: dict[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"x": point[scenario.vary], "line": point.get(scenario.series) if scenario.series else None,
                             "settings": point, "skipped": skipped,
                             "durability": {s: study_systems.durability(s, scenario.run, point)
                                            for s in runs if runs[s]},
                             "equal_durability": study_systems.equal_durability(scenario.run, point)}
    for system, results in runs.items():
        if results:
            entry[system] = _median(results)
    if scenario.run == "end_to_end":  # a throttled run: its records/s is the throttle's, not a figure
        return entry
    for system in ("ceiling", *KAFKA_KEYS, "tansu"):
        if "kstream" in entry and system in entry:
            entry[f"kstream_to_{system}"] = round(entry["kstream"]["records_per_s"]
                                                  / entry[system]["records_per_s"], 3)
    return entry


def _against_fastest_kafka(points: list[dict[str, Any]]) -> None:
    """Each Arrow-batch point against the fastest Kafka figure of its produce()/poll() twin (same records)."""
    for entry in points:
        if entry["settings"].get("api") != "batch" or "kstream" not in entry:
            continue
        twin_settings = dict(entry["settings"], api="record")
        twin = next((p for p in points if p["settings"] == twin_settings), None)
        figures = [] if twin is None else [(twin[k]["records_per_s"], k) for k in KAFKA_KEYS if k in twin]
        if twin is not None and figures:
            rate, key = max(figures)
            entry["fastest_kafka"] = {"system": key, "records_per_s": rate,
                                      "mb_per_s": twin[key]["mb_per_s"]}
            entry["kstream_to_fastest_kafka"] = round(entry["kstream"]["records_per_s"] / rate, 3)


def _median(results: list[PerfResult]) -> dict[str, Any]:
    """The median run by records/s (the upper one of an even count), with every run's rate."""
    ordered = sorted(results, key=lambda r: r.records_per_s)
    median = ordered[len(ordered) // 2].as_dict()
    median["runs_records_per_s"] = [round(r.records_per_s, 1) for r in results]
    median["median_records_per_s"] = statistics.median(r.records_per_s for r in results)
    return median


def _csv_rows(path: str, scenario: Scenario, entry: dict[str, Any], runs: dict[str, list[PerfResult]]) -> None:
    label = f"{scenario.vary}={entry['x']}" + (f",{scenario.series}={entry['line']}" if scenario.series else "")
    csv_report.append(path, [csv_report.row(r, scenario.name, system, label, entry["durability"][system])
                             for system, results in runs.items() for r in results])


def _point_line(scenario: Scenario, entry: dict[str, Any]) -> str:
    parts = [f"{scenario.vary}={entry['x']}" + (f" {scenario.series}={entry['line']}" if scenario.series else "")]
    for system in KEYS:
        if system in entry and scenario.run == "end_to_end":
            latency = entry[system]["latency_ms"]
            parts.append(f"{system} latency p50 {latency['p50']:.2f} ms, p99 {latency['p99']:.2f} ms")
        elif system in entry:
            parts.append(f"{system} {entry[system]['records_per_s'] / 1e6:.3f} M/s "
                         f"{entry[system]['mb_per_s']:.0f} MB/s")
    if "kstream_to_fastest_kafka" in entry:
        parts.append(f"kstream / fastest Kafka {entry['kstream_to_fastest_kafka']:.2f}")
    return "  " + " | ".join(parts)


def machine(directory: str) -> dict[str, Any]:
    """What the figures were measured on, with the disk's fdatasync pace in ``directory``."""
    import pyarrow

    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    os.makedirs(directory, exist_ok=True)
    probe = os.path.join(directory, "fdatasync.probe")
    try:
        disk = ceiling.fdatasync_write(probe, 256 << 20)
    finally:
        if os.path.exists(probe):
            os.remove(probe)
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpus": os.cpu_count(), "cpu_model": model, "memory_gib": round(memory_gib, 1),
            "python": sys.version.split()[0], "pyarrow": pyarrow.__version__, "kstream": _version.version()[0],
            "platform": platform.platform(), "fdatasync_1mib_mb_per_s": round(disk.mb_per_s, 1)}
