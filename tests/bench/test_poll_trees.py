"""bench.poll_trees end to end on this checkout at a tiny size: the child code still runs against
kstream's perf API and bench.harness (it is passed as text, so nothing else would notice it
breaking), each checkout gets its own process and row, and a directory that is not a checkout is
refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import poll_trees

ROOT = Path(__file__).resolve().parents[2]


def test_each_tree_is_measured_in_its_own_process_and_gets_a_row(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the children's clusters
    assert poll_trees.main(["--records", "3000", "--repeats", "2", "--rounds", "2", str(ROOT), str(ROOT)]) == 0
    out = capsys.readouterr().out
    rounds = re.findall(r"^round (\d) (\S+): records_per_s \[([^\]]*)\], cpu_us \[([^\]]*)\]$", out, re.M)
    assert [(r, tree) for r, tree, _, _ in rounds] == [("0", str(ROOT)), ("0", str(ROOT)),
                                                       ("1", str(ROOT)), ("1", str(ROOT))]
    for _, _, rates, cpus in rounds:
        assert len(rates.split(",")) == 2 and all(float(v) > 0 for v in rates.split(","))
        assert all(float(v) >= 0 for v in cpus.split(","))
    rows = [line for line in out.splitlines() if line.startswith(f"| {ROOT} |")]
    assert len(rows) == 2
    assert rows[0].count("(1.00)") == 2  # the first tree is the reference of both figures
    assert "÷ confluent" not in out  # no mock run without --confluent
    assert "medians of 4 repeats per tree (3,000 records)" in out


def test_a_directory_that_is_not_a_checkout_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        poll_trees.main([str(ROOT), str(tmp_path)])
    assert exit_info.value.code == 2
    assert f"{tmp_path} is not a kstream checkout (no src/kstream)" in capsys.readouterr().err
