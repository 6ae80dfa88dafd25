"""A benchmark study plan (conf/study.toml): scenarios of points to run side by side.

A plan has ``[defaults]`` (the settings of every point), ``[quick]`` (what
``--quick`` changes, to run the whole study in minutes: its numbers cap the
settings of every scenario, its other values replace them), and one
``[[scenario]]`` table per sweep: the setting it varies (``vary`` over
``values``), optionally a second one drawn as separate lines (``series`` over
``series_values``), and any default it overrides. ``quick_values`` and
``quick_series_values`` replace the sweeps under ``--quick``.

Every setting is checked here, before anything runs: an unknown name, a
wrong type or a value out of range is a ConfigError naming the scenario, the
setting, the value and what is allowed.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kstream.errors import ConfigError

RUNS = ("produce", "consume", "pair", "end_to_end")
MAX_SCENARIOS = 64
MAX_POINTS = 64
MAX_REPEATS = 20


@dataclass(frozen=True)
class Setting:
    kind: type
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()

    def check(self, where: str, name: str, value: Any) -> Any:
        if self.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, self.kind) or (self.kind is int and isinstance(value, bool)):
            raise ConfigError(f"{where}: {name} = {value!r} must be a {self.kind.__name__}")
        if self.choices and value not in self.choices:
            raise ConfigError(f"{where}: {name} = {value!r} must be one of {', '.join(map(str, self.choices))}")
        number = float(value) if isinstance(value, (int, float)) else None
        if number is not None and ((self.low is not None and number < self.low)
                                   or (self.high is not None and number > self.high)):
            raise ConfigError(f"{where}: {name} = {value!r} must be {self.low}-{self.high}")
        return value


SETTINGS: dict[str, Setting] = {
    "records": Setting(int, 1, 100_000_000),
    "max_bytes": Setting(int, 1, 10 * 1024**3),
    "record_size": Setting(int, 0, 16 * 1024**2),
    "partitions": Setting(int, 1, 10_000),
    "replication_factor": Setting(int, 1, 8),
    "min_insync_replicas": Setting(int, 1, 8),
    "acks": Setting(str, choices=("0", "1", "all")),
    "api": Setting(str, choices=("record", "batch")),
    "payload": Setting(str, choices=("random", "varied", "text")),
    "producers": Setting(int, 1, 16),
    "threads": Setting(int, 1, 16),
    "consumers": Setting(int, 1, 16),
    "batch_size": Setting(int, 1, 2**31 - 1),
    "linger_ms": Setting(int, 0, 60_000),
    "compression": Setting(str, choices=("none", "lz4", "zstd", "gzip", "snappy")),
    "max_poll_records": Setting(int, 1, 10_000_000),
    "fetch_max_bytes": Setting(int, 1, 2**31 - 1),
    "check_crcs": Setting(bool),
    "throughput": Setting(float, -1, 10_000_000),
    "warm_up": Setting(bool),
    "repeats": Setting(int, 1, MAX_REPEATS),
    "peer_repeats": Setting(int, 1, MAX_REPEATS),
    "peer": Setting(bool),
    "kafka": Setting(bool),
    "kafka_tools": Setting(bool),
    "tansu": Setting(bool),
    "log_dirs": Setting(int, 1, 16),
}
"""Every setting a point can have, with its type and range."""

_SCENARIO_KEYS = {"name", "title", "run", "vary", "values", "series", "series_values", "quick_values",
                  "quick_series_values", "notes"}


@dataclass(frozen=True)
class Scenario:
    """One sweep: ``points()`` gives each point's full settings."""

    name: str
    title: str
    run: str
    vary: str
    values: tuple[Any, ...]
    series: str | None
    series_values: tuple[Any, ...]
    settings: Mapping[str, Any]
    notes: str = ""

    def points(self) -> list[dict[str, Any]]:
        series = self.series_values if self.series else (None,)
        points = []
        for line in series:
            for value in self.values:
                point = dict(self.settings, **{self.vary: value})
                if self.series:
                    point[self.series] = line
                points.append(point)
        return points


@dataclass(frozen=True)
class Plan:
    defaults: Mapping[str, Any]
    scenarios: tuple[Scenario, ...]

    def only(self, names: list[str]) -> Plan:
        unknown = sorted(set(names) - {s.name for s in self.scenarios})
        if unknown:
            raise ConfigError(f"no scenario {', '.join(unknown)} in the plan; it has "
                              f"{', '.join(s.name for s in self.scenarios)}")
        return Plan(self.defaults, tuple(s for s in self.scenarios if s.name in names))


def load(path: str, quick: bool = False) -> Plan:
    """Read and check the plan at ``path``; ``quick`` applies its ``[quick]`` table and quick sweeps."""
    try:
        with open(path, "rb") as f:
            document = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"no study plan at {path}: pass a plan file such as conf/study.toml") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"study plan {path} is not valid TOML: {err}") from err
    return parse(document, quick, where=path)


def parse(document: Mapping[str, Any], quick: bool = False, where: str = "plan") -> Plan:
    unknown = sorted(set(document) - {"defaults", "quick", "scenario"})
    if unknown:
        raise ConfigError(f"{where}: unknown table(s) {', '.join(unknown)}; a plan has [defaults], [quick] "
                          "and [[scenario]]")
    defaults = _settings(f"{where} [defaults]", document.get("defaults", {}))
    caps = _settings(f"{where} [quick]", document.get("quick", {})) if quick else {}
    defaults = _capped(defaults, caps)
    tables = document.get("scenario", [])
    if not 1 <= len(tables) <= MAX_SCENARIOS:
        raise ConfigError(f"{where}: {len(tables)} scenarios; a plan has 1-{MAX_SCENARIOS}")
    scenarios = tuple(_scenario(f"{where} scenario #{i + 1}", table, defaults, caps, quick)
                      for i, table in enumerate(tables))
    names = [s.name for s in scenarios]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: scenario names repeat: {', '.join(sorted(names))}")
    return Plan(defaults, scenarios)


def _settings(where: str, table: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for name, value in table.items():
        if name not in SETTINGS:
            raise ConfigError(f"{where}: unknown setting {name!r}; settings are {', '.join(sorted(SETTINGS))}")
        out[name] = SETTINGS[name].check(where, name, value)
    return out


def _capped(settings: Mapping[str, Any], caps: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with each ``[quick]`` value applied: numbers as upper bounds, others as set."""
    out = dict(settings)
    for name, cap in caps.items():
        number = isinstance(cap, (int, float)) and not isinstance(cap, bool)
        out[name] = min(out[name], cap) if number and name in out else cap
    return out


def _scenario(where: str, table: Mapping[str, Any], defaults: Mapping[str, Any], caps: Mapping[str, Any],
              quick: bool) -> Scenario:
    name = table.get("name")
    if not isinstance(name, str) or not name.replace("_", "").isalnum() or len(name) > 64:
        raise ConfigError(f"{where}: name = {name!r} must be 1-64 letters, digits and '_'")
    where = f"{where} ({name})"
    run = table.get("run")
    if run not in RUNS:
        raise ConfigError(f"{where}: run = {run!r} must be one of {', '.join(RUNS)}")
    settings = dict(defaults)
    settings.update(_settings(where, {k: v for k, v in table.items() if k not in _SCENARIO_KEYS}))
    settings = _capped(settings, caps)
    vary = table.get("vary")
    if vary not in SETTINGS:
        raise ConfigError(f"{where}: vary = {vary!r} must name a setting ({', '.join(sorted(SETTINGS))})")
    values = _sweep(where, vary, table.get("quick_values") if quick and "quick_values" in table
                    else table.get("values"))
    series = table.get("series")
    series_values: tuple[Any, ...] = ()
    if series is not None:
        if series not in SETTINGS or series == vary:
            raise ConfigError(f"{where}: series = {series!r} must name a setting other than {vary!r}")
        series_values = _sweep(where, series, table.get("quick_series_values")
                               if quick and "quick_series_values" in table else table.get("series_values"))
    if len(values) * max(1, len(series_values)) > MAX_POINTS:
        raise ConfigError(f"{where}: more than {MAX_POINTS} points")
    return Scenario(name, str(table.get("title", name)), run, vary, values, series, series_values, settings,
                    str(table.get("notes", "")))


def _sweep(where: str, name: str, values: Any) -> tuple[Any, ...]:
    if not isinstance(values, list) or not 1 <= len(values) <= MAX_POINTS:
        raise ConfigError(f"{where}: the values of {name} must be a list of 1-{MAX_POINTS}")
    return tuple(SETTINGS[name].check(where, name, v) for v in values)
