"""The dual-run harness (tests/dual/run.py): each case's script run with confluent-kafka against
Apache Kafka and with kstream, their outputs equal up to the differences docs/COMPAT.md records.

The harness's own parts (porting, comparing) are tested without a broker below.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.dual.cases import CASES
from tests.dual.run import ROOT, Case, Difference, Step, compare, port, run_case


@pytest.mark.kafka
@pytest.mark.parametrize("name", [pytest.param(name, marks=[pytest.mark.slow] if case.slow else [])
                                  for name, case in CASES.items()])
def test_side_by_side(name, kafka_broker):
    result = run_case(CASES[name], kafka_broker)
    assert not result.problems, result.report()


# -- the harness itself (no broker) ------------------------------------------------------------

CONFLUENT_SCRIPT = '''\
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
import confluent_kafka

conf = {"bootstrap.servers": sys.argv[1], "client.id": "bootstrap.servers"}
'''


def test_port_to_kstream_changes_the_imports_and_the_connection_key_only():
    ported = port(CONFLUENT_SCRIPT, "kafka", "kstream")
    assert ported == CONFLUENT_SCRIPT.replace("from confluent_kafka import", "from kstream import") \
        .replace("from confluent_kafka.admin import", "from kstream.admin import") \
        .replace("import confluent_kafka\n", "import kstream as confluent_kafka\n") \
        .replace('{"bootstrap.servers":', '{"cluster":').replace('"client.id": "bootstrap.servers"',
                                                                 '"client.id": "cluster"')
    assert port(CONFLUENT_SCRIPT, "kafka", "kafka") == CONFLUENT_SCRIPT


def test_port_of_a_kstream_example_to_confluent_kafka():
    source = (ROOT / "examples" / "confluent" / "get_watermark_offsets.py").read_text()
    ported = port(source, "kstream", "kafka")
    assert "import confluent_kafka as kstream\n" in ported and '{"bootstrap.servers": cluster' in ported
    assert '"cluster"' not in ported and "\nimport kstream\n" not in ported


def test_port_refuses_a_script_that_imports_neither_library():
    with pytest.raises(ValueError, match="imports no kafka names"):
        port("import json\n", "kafka", "kstream")


def case_with(*differences: Difference) -> Case:
    return Case("c", (Step("x.py"),), differences=differences)


def test_compare_accepts_equal_outputs_and_shows_a_diff_otherwise():
    assert compare(case_with(), "a\nb\n", "a\nb\n") == []
    [problem] = compare(case_with(), "a\nb\n", "a\nc\n")
    assert "-b" in problem and "+c" in problem


def test_compare_accepts_a_recorded_difference_and_flags_one_that_no_longer_shows():
    recorded = Difference("dual-1", r"^leader 1$", r"^leader 0$")
    assert compare(case_with(recorded), "x\nleader 1\n", "x\nleader 0\n") == []
    problems = compare(case_with(recorded), "x\nleader 1\n", "x\nleader 1\n")
    assert "dual-1 no longer shows on the kstream side" in problems[0]
    assert compare(case_with(recorded), "y\nleader 1\n", "x\nleader 0\n")  # the rest must still agree


def test_every_recorded_difference_has_its_entry_in_compat_md():
    compat = (Path(ROOT) / "docs" / "COMPAT.md").read_text()
    entries = set(re.findall(r"^\| (dual-\d+) \|", compat, flags=re.M))
    recorded = {d.doc for case in CASES.values() for d in case.differences}
    assert recorded <= entries, f"no entry in docs/COMPAT.md for {sorted(recorded - entries)}"


def test_every_script_is_in_a_case():
    used = {step.script for case in CASES.values() for step in case.steps}
    scripts = {path.name for path in (Path(__file__).parent / "scripts").glob("*.py")}
    examples = {f"examples/{path.name}" for path in (ROOT / "examples" / "confluent").glob("*.py")}
    assert scripts | examples <= used, sorted((scripts | examples) - used)


def test_a_sorted_step_is_sorted_after_normalising(tmp_path, monkeypatch):
    """Lines that differ only in what normalising hides (a partition) sort the same on both sides."""
    import tests.dual.run as run

    script = tmp_path / "lines.py"
    script.write_text("import sys\nfrom confluent_kafka import Producer\n"
                      "print('  1 0 b\\'one\\'' if sys.argv[1] == 'a' else '  0 0 b\\'one\\'')\n"
                      "print('  0 1 b\\'two\\'')\n")
    monkeypatch.setattr(run, "SCRIPTS", tmp_path)
    case = Case("c", (Step("lines.py", ("a",), sort=True),), normalise=((r"^  \d+ \d+", "  P N"),))
    other = Case("c", (Step("lines.py", ("b",), sort=True),), normalise=case.normalise)
    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    first = run.run_side(case, "kafka", "127.0.0.1:1", "topic-x", tmp_path / "1")
    second = run.run_side(other, "kafka", "127.0.0.1:1", "topic-x", tmp_path / "2")
    assert first.text.splitlines()[1:] == second.text.splitlines()[1:] == ["  P N b'one'", "  P N b'two'"]
