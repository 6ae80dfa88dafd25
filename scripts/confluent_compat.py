"""Run confluent-kafka-python's broker-less unit tests against kstream, import swapped.

Usage::

    python scripts/confluent_compat.py DIR [--timeout 10] [--json out.json] [-k EXPR]
    make compat CONFLUENT_TESTS=DIR

``DIR`` holds upstream's ``tests/test_*.py`` files, unchanged (docs/COMPAT.md
says which ones, at which commits, and how to get them; they are not part of
this repository and this script contains none of their code). The script:

1. copies the ``test_*.py`` files (and helper modules in subdirectories, such as
   upstream's ``tests/common/__init__.py``, at their relative paths) to a temporary
   directory and rewrites only their import lines: ``from confluent_kafka[.x] import ...`` becomes
   ``from kstream[.x] import ...`` and ``import confluent_kafka`` becomes
   ``import kstream as confluent_kafka`` (so ``confluent_kafka.version()`` in a
   test body calls kstream's);
2. creates a throw-away cluster in that directory with the topics the tests
   produce to and assign (upstream runs them without a broker, so its topics
   need not exist; kstream's embedded log needs them); each test runs on a
   fresh copy of it, named by ``KSTREAM_CLUSTER`` (without a broker nothing a
   test creates or deletes upstream reaches the next test);
3. runs pytest on the copies in a child process, with a per-test time limit
   (a ``conftest.py`` arms SIGALRM: several tests loop until a callback fires,
   which would otherwise hang forever), and reads its JUnit XML report;
4. prints a pass/fail table per file, the total, and every failing test with
   the first line of its failure; ``--json`` also writes them to a file.

Exit status: 0 when the run completed (whatever passed), 2 when it could not
run (no test files, pytest crashed). The kstream imported is the one the
interpreter running this script finds (``PYTHONPATH`` is passed through).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Topics the upstream tests produce to, assign or describe, with the partition count
# their calls need (a test assigns "test" partitions 0..99 and produces to partition 9).
TOPICS: dict[str, int] = {
    "test": 100,
    "mytopic": 1,
    "mytopic2": 1,
    "another_topic": 10,
    "some_topic": 10,
    "someother": 1,
    "atopic": 1,
    "topic": 1,
    "test-topic": 3,
}

_FROM_IMPORT = re.compile(r"^(\s*from\s+)confluent_kafka(\.[\w.]+)?(\s+import\b)")
_PLAIN_IMPORT = re.compile(r"^(\s*)import\s+confluent_kafka\s*$")

CONFTEST = '''\
"""Written by kstream's scripts/confluent_compat.py: a fresh cluster and a time limit per test."""
import itertools
import os
import shutil
import signal

import pytest

LIMIT_SECONDS = {limit!r}
TEMPLATE = {template!r}
_numbers = itertools.count()


class TestTimeLimit(BaseException):
    """Raised in a test that ran past the limit (a BaseException, so a test's
    ``except Exception`` cannot swallow it)."""


def _expired(signum, frame):
    raise TestTimeLimit(f"test ran longer than {{LIMIT_SECONDS}} s (kstream compat harness limit)")


@pytest.fixture(autouse=True)
def _fresh_cluster_and_time_limit():
    # Upstream runs these without a broker, so nothing a test creates or deletes is seen
    # by the next; here each test gets its own copy of the prepared cluster.
    cluster = f"{{TEMPLATE}}-{{next(_numbers)}}"
    shutil.copytree(TEMPLATE, cluster)
    os.environ["KSTREAM_CLUSTER"] = cluster
    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, LIMIT_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
'''


@dataclass
class TestResult:
    file: str
    name: str
    outcome: str  # passed | failed | error | skipped
    message: str = ""


@dataclass
class FileSummary:
    file: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    tests: list[TestResult] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped


def swap_imports(source: str) -> str:
    """``source`` with its confluent_kafka import lines pointed at kstream; nothing else changes."""
    lines = []
    for line in source.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        match = _FROM_IMPORT.match(body)
        if match:
            body = f"{match.group(1)}kstream{match.group(2) or ''}{body[match.start(3):]}"
        elif _PLAIN_IMPORT.match(body):
            body = f"{_PLAIN_IMPORT.match(body).group(1)}import kstream as confluent_kafka"  # type: ignore[union-attr]
        lines.append(body + ending)
    return "".join(lines)


def prepare(upstream: Path, work: Path, limit_seconds: float, template: Path) -> list[str]:
    """Copy and rewrite the test files into ``work``; return their names.

    Modules in subdirectories of ``upstream`` (upstream's ``tests/common/__init__.py``,
    ``tests/test_wakeable_utilities.py``: helpers the newer test files import as
    ``tests.common`` ...) are copied too, at the same relative path and with the same
    import rewriting, so that those imports resolve; they are not run as tests."""
    names = sorted(p.name for p in upstream.glob("test_*.py"))
    for name in names:
        text = (upstream / name).read_text(encoding="utf-8")
        (work / name).write_text(swap_imports(text), encoding="utf-8")
    for helper in sorted(upstream.rglob("*.py")):
        relative = helper.relative_to(upstream)
        if len(relative.parts) > 1:
            (work / relative).parent.mkdir(parents=True, exist_ok=True)
            (work / relative).write_text(swap_imports(helper.read_text(encoding="utf-8")), encoding="utf-8")
    (work / "conftest.py").write_text(CONFTEST.format(limit=limit_seconds, template=str(template)), encoding="utf-8")
    return names


def make_cluster(path: Path) -> None:
    """A fresh cluster at ``path`` holding :data:`TOPICS` (in a child process, so this
    script's own interpreter never imports kstream)."""
    code = (
        "import sys\n"
        "from kstream.log.cluster import Cluster\n"
        "cluster = Cluster.open(sys.argv[1], {}, create=True)\n"
        f"for name, partitions in {TOPICS!r}.items():\n"
        "    cluster.create_topic(name, partitions, 1)\n"
        "cluster.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)


def run_pytest(work: Path, names: list[str], cluster: Path, extra: list[str]) -> Path:
    report = work / "report.xml"
    env = dict(os.environ, KSTREAM_CLUSTER=str(cluster))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--continue-on-collection-errors", f"--junitxml={report}", "-o", "junit_family=xunit2", *extra, *names]
    subprocess.run(command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return report


def count_tests(path: Path) -> int:
    """How many tests pytest would collect from ``path``: its ``test_*`` functions, a
    parametrized one counted once per literal parameter set. Used for a file that fails
    to import, where pytest reports one error instead of its tests."""
    count = 0
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            count += _parameter_sets(node)
    return count


def _parameter_sets(function: ast.FunctionDef) -> int:
    sets = 1
    for decorator in function.decorator_list:
        if (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == "parametrize" and len(decorator.args) >= 2
                and isinstance(decorator.args[1], (ast.List, ast.Tuple))):
            sets *= len(decorator.args[1].elts)
    return sets


def read_report(report: Path, work: Path, names: list[str]) -> dict[str, FileSummary]:
    summaries = {name: FileSummary(name) for name in names}
    for case in ET.parse(report).getroot().iter("testcase"):
        classname = case.get("classname", "")
        if not classname:  # the file failed to import: all its tests fail
            file = f"{case.get('name')}.py"
            error = case.find("error")
            text = (error.text or "") if error is not None else ""
            reason = next((line[2:].strip() for line in text.splitlines() if line.startswith("E ")),
                          "collection failure")
            summary = summaries.setdefault(file, FileSummary(file))
            for index in range(count_tests(work / file)):
                summary.tests.append(TestResult(file, f"(test {index + 1}, not collected)", "error",
                                                f"import failed: {reason[:180]}"))
                summary.failed += 1
            continue
        file = f"{classname.split('.')[0]}.py"
        summary = summaries.setdefault(file, FileSummary(file))
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                first_lines = (child.get("message") or child.text or "").strip().splitlines()
                message = first_lines[0][:200] if first_lines else ""
                break
            if child.tag == "skipped":
                outcome, message = "skipped", (child.get("message") or "")[:200]
                break
        summary.tests.append(TestResult(file, case.get("name", "?"), outcome, message))
        if outcome == "passed":
            summary.passed += 1
        elif outcome == "skipped":
            summary.skipped += 1
        else:
            summary.failed += 1
    return summaries


def print_table(summaries: dict[str, FileSummary]) -> None:
    width = max([len(s) for s in summaries] + [len("file")])
    print(f"{'file':<{width}}  passed  failed  skipped  total")
    for s in summaries.values():
        print(f"{s.file:<{width}}  {s.passed:>6}  {s.failed:>6}  {s.skipped:>7}  {s.total:>5}")
    passed = sum(s.passed for s in summaries.values())
    failed = sum(s.failed for s in summaries.values())
    skipped = sum(s.skipped for s in summaries.values())
    print(f"{'TOTAL':<{width}}  {passed:>6}  {failed:>6}  {skipped:>7}  {passed + failed + skipped:>5}")
    failures = [t for s in summaries.values() for t in s.tests if t.outcome in ("failed", "error")]
    if failures:
        print("\nfailing:")
    for file in dict.fromkeys(t.file for t in failures):
        uncollected = [t for t in failures if t.file == file and t.name.startswith("(test ")]
        if uncollected:  # one line for a file that did not import
            print(f"  {file}: {len(uncollected)} tests not collected, {uncollected[0].message}")
        for t in failures:
            if t.file == file and not t.name.startswith("(test "):
                print(f"  {file}::{t.name}: {t.message}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("upstream", type=Path, help="directory of confluent-kafka-python's tests/test_*.py")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per test (default 10)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (printed)")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression")
    args = parser.parse_args(argv)
    if not sorted(args.upstream.glob("test_*.py")):
        print(f"no test_*.py files in {args.upstream}: see docs/COMPAT.md for how to get them",
              file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="kstream-compat-"))
    try:
        cluster = work / "cluster"
        names = prepare(args.upstream, work, args.timeout, cluster)
        make_cluster(cluster)
        report = run_pytest(work, names, cluster, ["-k", args.keyword] if args.keyword else [])
        if not report.exists():
            print("pytest wrote no report (it crashed before running the tests)", file=sys.stderr)
            return 2
        summaries = read_report(report, work, names)
        print_table(summaries)
        if args.json:
            args.json.write_text(json.dumps(
                {name: {**asdict(s), "total": s.total} for name, s in summaries.items()}, indent=2))
    finally:
        if args.keep:
            print(f"\nkept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
