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
3. runs pytest on each copied file in a child process of its own, with a
   per-test time limit (a ``conftest.py`` arms SIGALRM: several tests loop until
   a callback fires, which would otherwise hang forever) and a SIGINT guard
   (upstream's "wakeable" tests send SIGINT to their own process and expect a
   KeyboardInterrupt in the call it interrupts; one sent after that call returned
   is ignored, and one no test catches fails that test instead of ending the
   run), and reads each file's JUnit XML report;
4. prints a pass/fail table per file, the total, and every failing test with
   the first line of its failure; ``--json`` also writes them to a file.

Exit status: 0 when the run completed (whatever passed; a file whose pytest
died counts its tests as errors), 2 when there were no test files. The kstream imported is the one the
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
    # test_Producer's produce_batch memory test writes to five topics of its own
    **{f"memory-pressure-topic-{i}": 1 for i in range(5)},
}

_FROM_IMPORT = re.compile(r"^(\s*from\s+)confluent_kafka(\.[\w.]+)?(\s+import\b)")
_PLAIN_IMPORT = re.compile(r"^(\s*)import\s+confluent_kafka\s*$")

CONFTEST = '''\
"""Written by kstream's scripts/confluent_compat.py: a fresh cluster, a time limit and a
SIGINT guard per test."""
import itertools
import os
import shutil
import signal
import threading
import time

import pytest

LIMIT_SECONDS = {limit!r}
TEMPLATE = {template!r}
_numbers = itertools.count()
_in_test_call = False
stray_interrupts = []


class TestTimeLimit(BaseException):
    """Raised in a test that ran past the limit (a BaseException, so a test's
    ``except Exception`` cannot swallow it)."""


class StrayInterrupt(Exception):
    """A KeyboardInterrupt no test caught: that test's failure (pytest would otherwise
    stop the whole run on it)."""


def _expired(signum, frame):
    raise TestTimeLimit(f"test ran longer than {{LIMIT_SECONDS}} s (kstream compat harness limit)")


def _on_sigint(signum, frame):
    # Upstream's wakeable tests send SIGINT to this process from a thread and expect a
    # KeyboardInterrupt in the call it interrupts. Outside a test's body (sent after that
    # call had returned) it is recorded and ignored, so it cannot end the run.
    if _in_test_call:
        raise KeyboardInterrupt
    stray_interrupts.append(time.monotonic())


signal.signal(signal.SIGINT, _on_sigint)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    global _in_test_call
    _in_test_call = True
    try:
        return (yield)
    except KeyboardInterrupt as err:
        raise StrayInterrupt("KeyboardInterrupt (SIGINT) escaped the test") from err
    finally:
        _in_test_call = False


@pytest.fixture(autouse=True)
def _fresh_cluster_and_time_limit():
    # Upstream runs these without a broker, so nothing a test creates or deletes is seen
    # by the next; here each test gets its own copy of the prepared cluster.
    cluster = f"{{TEMPLATE}}-{{os.getpid()}}-{{next(_numbers)}}"  # one pytest process per file
    shutil.copytree(TEMPLATE, cluster)
    os.environ["KSTREAM_CLUSTER"] = cluster
    before = set(threading.enumerate())
    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, LIMIT_SECONDS)
    try:
        yield
        # The threads this test started (upstream's delayed SIGINT senders) end here, where
        # their signal is ignored, not in the next test; kstream's own threads are not waited for.
        deadline = time.monotonic() + 2.0
        for thread in set(threading.enumerate()) - before:
            if not thread.name.startswith("kstream"):
                thread.join(max(0.0, deadline - time.monotonic()))
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
        "from kstream.log.cluster.cluster import Cluster\n"
        "cluster = Cluster.open(sys.argv[1], {}, create=True)\n"
        f"for name, partitions in {TOPICS!r}.items():\n"
        "    cluster.create_topic(name, partitions, 1)\n"
        "cluster.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)


def run_pytest(work: Path, name: str, cluster: Path, extra: list[str]) -> tuple[Path, int]:
    """Run one test file in a pytest process of its own (a crash or a stray signal there
    loses that file's results, not the others'); return its JUnit report's path and the
    exit status."""
    report = work / f"{Path(name).stem}.xml"
    env = dict(os.environ, KSTREAM_CLUSTER=str(cluster))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               f"--junitxml={report}", "-o", "junit_family=xunit2", *extra, name]
    done = subprocess.run(command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return report, done.returncode


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


def read_report(report: Path, work: Path, file: str, returncode: int = 0) -> FileSummary:
    """The results of ``file`` from its JUnit report. A file that failed to import counts
    each of its tests as an error with the import error; with no report at all (pytest died)
    each test is an error naming the exit status."""
    summary = FileSummary(file)
    if not report.exists():
        _all_errors(summary, work, f"pytest exited with status {returncode} and wrote no report")
        return summary
    for case in ET.parse(report).getroot().iter("testcase"):
        if not case.get("classname"):  # the file failed to import: all its tests fail
            error = case.find("error")
            text = (error.text or "") if error is not None else ""
            reason = next((line[2:].strip() for line in text.splitlines() if line.startswith("E ")),
                          "collection failure")
            _all_errors(summary, work, f"import failed: {reason[:180]}")
            continue
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
    return summary


def _all_errors(summary: FileSummary, work: Path, message: str) -> None:
    for index in range(count_tests(work / summary.file)):
        summary.tests.append(TestResult(summary.file, f"(test {index + 1}, not collected)", "error", message))
        summary.failed += 1


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
        extra = ["-k", args.keyword] if args.keyword else []
        summaries = {}
        for name in names:
            report, returncode = run_pytest(work, name, cluster, extra)
            summaries[name] = read_report(report, work, name, returncode)
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
