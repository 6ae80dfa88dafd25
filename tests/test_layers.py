"""The layer checker (scripts/check_layers.py, run by `make lint`, issue 27): each rule catches a
violation in a tiny fake package tree, a clean tree passes, and the real src/ passes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_layers.py"
_spec = importlib.util.spec_from_file_location("check_layers", SCRIPT)
assert _spec and _spec.loader
check_layers = importlib.util.module_from_spec(_spec)
sys.modules["check_layers"] = check_layers  # dataclasses look their module up
_spec.loader.exec_module(check_layers)

# A clean little house: every import goes down, the faces name their own layer or below.
CLEAN = {
    "kstream/__init__.py": '_LAZY = {"Producer": "kstream.client.producer"}\n',
    "kstream/errors.py": "class KStreamError(Exception): ...\n",
    "kstream/log/__init__.py": '_LAZY = {"Segment": "kstream.log.storage.segment"}\n',
    "kstream/log/storage/__init__.py": "",
    "kstream/log/storage/format.py": "from kstream.errors import KStreamError\n",
    "kstream/log/storage/segment.py": "from kstream.log.storage import format\n",
    "kstream/log/cluster/__init__.py": "",
    "kstream/log/cluster/cluster.py": "from kstream.log.storage.segment import *\n",
    "kstream/groups/__init__.py": "",
    "kstream/groups/service.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from kstream.log.storage import segment\n"
        "from kstream.log.cluster import cluster\n"
        "def table():\n    import deltalake\n    return deltalake\n"),
    "kstream/client/__init__.py": "",
    "kstream/client/producer.py": "from . import partitioner\nfrom kstream.groups.service import table\n",
    "kstream/client/partitioner.py": "",
    "kstream/source/__init__.py": "",
    "kstream/source/reader.py": "from kstream.client.producer import *\n",
    "kstream/sink/__init__.py": "",
    "kstream/sink/writer.py": "from kstream.client import producer\n",
    "kstream/data_source.py": "from kstream.source import reader\nfrom kstream.sink import writer\n",
    "kstream/tools/__init__.py": "",
    "kstream/tools/monitor/__init__.py": "",
    "kstream/tools/monitor/lag.py": "from kstream.groups import service\n",
    "kstream/tools/web/__init__.py": "",
    "kstream/tools/web/app.py": "from kstream.tools.monitor.lag import *\n",
    "kstream/tools/cli/__init__.py": "",
    "kstream/tools/cli/main.py": "from kstream.tools.web import app\n",
}


def build(tmp_path: Path, changes: dict[str, str]) -> Path:
    files = {**CLEAN, **changes}
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def rules(tmp_path: Path, changes: dict[str, str]) -> list[str]:
    return [str(v) for v in check_layers.check([build(tmp_path, changes)], tmp_path)]


def test_a_clean_tree_passes(tmp_path):
    assert rules(tmp_path, {}) == []


@pytest.mark.parametrize(("name", "text", "expected"), [
    # storage reaching up into groups
    ("kstream/log/storage/segment.py", "from kstream.groups.service import table\n",
     "kstream/log/storage/segment.py:1: from kstream.groups.service import table: upward import: "
     "kstream.log.storage.segment (log.storage) must not import kstream.groups.service (groups)"),
    # `from package import module` names the module (and its layer)
    ("kstream/log/cluster/cluster.py", "from kstream.groups import service\n",
     "upward import: kstream.log.cluster.cluster (log.cluster) must not import kstream.groups.service"),
    # inside tools: web must not import cli
    ("kstream/tools/web/app.py", "from kstream.tools.cli.main import *\n",
     "upward import: kstream.tools.web.app (tools.web) must not import kstream.tools.cli.main (tools.cli)"),
    # a relative import is resolved before it is judged
    ("kstream/groups/service.py", "from ..client import producer\n",
     "upward import: kstream.groups.service (groups) must not import kstream.client.producer (client)"),
    # a face's lazy map may not name a module above it
    ("kstream/log/__init__.py", '_LAZY = {"Producer": "kstream.client.producer"}\n',
     "kstream/log/__init__.py:1: 'kstream.client.producer': upward import: kstream.log (log (face))"),
])
def test_an_upward_import_fails(tmp_path, name, text, expected):
    found = rules(tmp_path, {name: text})
    assert any(expected in line for line in found), found


def test_source_and_sink_must_not_see_each_other(tmp_path):
    found = rules(tmp_path, {"kstream/sink/writer.py": "from kstream.source.reader import *\n"})
    assert len(found) == 1
    assert "kstream/sink/writer.py:1:" in found[0]
    assert "sibling import: kstream.sink.writer (sink) and kstream.source.reader (source)" in found[0]


def test_a_circle_between_rooms_fails(tmp_path):
    # storage -> cluster is upward, and it closes a circle with cluster -> storage
    found = rules(tmp_path, {"kstream/log/storage/format.py": "from kstream.log.cluster import cluster\n"})
    circle = [line for line in found if "import circle between rooms" in line]
    assert [line.split(": ")[0] for line in circle] == [
        "kstream/log/cluster/cluster.py:1", "kstream/log/storage/format.py:1"]
    assert all("kstream.log.cluster -> kstream.log.storage" in line for line in circle)


def test_a_circle_between_modules_of_one_room_fails(tmp_path):
    found = rules(tmp_path, {"kstream/client/partitioner.py": "from kstream.client import producer\n"})
    assert len(found) == 2, found
    assert all("import circle between modules: kstream.client.partitioner -> kstream.client.producer" in line
               for line in found)


@pytest.mark.parametrize("text", [
    "def f():\n    from kstream.log.storage import format\n",
    "class C:\n    import kstream.errors\n",
    "try:\n    from kstream.errors import KStreamError\nexcept ImportError:\n    pass\n",
    "import sys\nif sys.platform:\n    from kstream import errors\n",
])
def test_a_function_level_import_of_a_kstream_module_fails(tmp_path, text):
    found = rules(tmp_path, {"kstream/log/cluster/cluster.py": text})
    assert len(found) == 1, found
    assert "function-level import of a kstream module" in found[0]
    assert found[0].startswith("kstream/log/cluster/cluster.py:")


def test_a_type_checking_import_may_not_go_up_either(tmp_path):
    text = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kstream.groups.service import table\n"
    found = rules(tmp_path, {"kstream/log/storage/segment.py": text})
    assert len(found) == 1, found
    assert found[0].startswith("kstream/log/storage/segment.py:3: from kstream.groups.service import table: "
                               "upward import")


def test_lazy_third_party_and_type_checking_imports_pass(tmp_path):
    text = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kstream.log.storage import segment\n"
            "def plot():\n    import matplotlib\n    import pyspark.sql\n    return matplotlib, pyspark\n")
    assert rules(tmp_path, {"kstream/log/cluster/cluster.py": text}) == []


def test_the_command_line_fails_with_one_line_per_violation(tmp_path):
    build(tmp_path, {"kstream/log/storage/segment.py": "def f():\n    from kstream.groups import service\n"})
    result = subprocess.run([sys.executable, str(SCRIPT), "."], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2  # upward, and function-level
    assert all(line.startswith("kstream/log/storage/segment.py:2: from kstream.groups import service: ")
               for line in lines)
    assert "2 layer violation(s)" in result.stderr


def test_the_real_source_keeps_the_layers():
    result = subprocess.run([sys.executable, str(SCRIPT), "src"], cwd=ROOT, capture_output=True, text=True)
    assert result.stdout == ""
    assert result.returncode == 0
