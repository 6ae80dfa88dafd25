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


@pytest.mark.slow  # about 9 s, for a benchmark tool: make test-slow
def test_each_tree_is_measured_in_its_own_process_in_alternating_order(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the children's clusters
    other = tmp_path / "other-checkout"
    other.symlink_to(ROOT)  # a second name for this checkout: the rows and the order are told apart
    trees = [str(ROOT), str(other)]
    assert poll_trees.main(["--records", "2000", "--repeats", "1", "--rounds", "2", *trees]) == 0
    out = capsys.readouterr().out
    rounds = re.findall(r"^round (\d) (\S+): records_per_s \[([^\]]*)\], cpu_us \[([^\]]*)\]$", out, re.M)
    assert [(r, tree) for r, tree, _, _ in rounds] == [("0", trees[0]), ("0", trees[1]),
                                                       ("1", trees[1]), ("1", trees[0])]
    for _, _, rate, cpu in rounds:
        assert float(rate) > 0 and float(cpu) >= 0
    rows = [line for line in out.splitlines() if line.startswith("| /")]
    assert [row.split(" | ")[0] for row in rows] == [f"| {tree}" for tree in trees]
    assert rows[0].count("(1.00)") == 2  # the first tree is the reference of both figures
    assert "÷ confluent" not in out  # no mock run without --confluent
    assert "medians of 2 repeats per tree (2,000 records)" in out


def test_a_directory_that_is_not_a_checkout_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        poll_trees.main([str(ROOT), str(tmp_path)])
    assert exit_info.value.code == 2
    assert f"{tmp_path} is not a kstream checkout (no src/kstream)" in capsys.readouterr().err
