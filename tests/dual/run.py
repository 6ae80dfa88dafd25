"""The dual-run harness: one script, run with confluent-kafka against Apache Kafka and with kstream.

    python -m tests.dual.run [--bootstrap HOST:PORT] [--side both|kafka|kstream] [CASE ...]

A case (tests/dual/cases.py) is one or more steps, each a Python script run as a user runs it.
Each script is written once, for one library; the harness ports it to the other with the two
edits docs/COMPAT.md documents and nothing else:

1. the import: ``from confluent_kafka[.x] import`` <-> ``from kstream[.x] import``
   (``import confluent_kafka`` <-> ``import kstream as confluent_kafka``);
2. the connection: the configuration key ``"bootstrap.servers"`` <-> ``"cluster"``.

The connection's value comes in on the command line (``{connection}`` in a step's arguments),
as in confluent's examples: the Kafka broker's bootstrap address on one side, a fresh kstream
cluster folder (one per case run) on the other. ``{topic}`` is a topic name unique to the run
(the broker is shared; scripts derive their other names from it).

What each side prints (stdout, and stderr for the steps that say so) is normalised (the run's
topic name and connection, then the case's own patterns, each explained in cases.py) and
compared. The two must be equal, or differ by exactly the case's recorded differences, each
of which names its entry in docs/COMPAT.md ("Side by side with Apache Kafka"). A recorded
difference that no longer shows fails the case too, so the list stays true.

Without --bootstrap it starts one broker (kstream.tools.perf.kafka_peer) for the run; on a
shared machine wrap it in ``flock /tmp/kstream-spark.lock``.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"
EXAMPLES = ROOT / "examples" / "confluent"
STEP_TIMEOUT_S = 60.0
SIDES = ("kafka", "kstream")


@dataclass(frozen=True)
class Step:
    """One script run: ``script`` is a path under tests/dual/scripts or examples/confluent
    (``examples/NAME``); ``origin`` the library it is written for."""

    script: str
    args: tuple[str, ...] = ()
    stdin: str = ""
    stderr: bool = False  # compare stderr too (after stdout)
    compare: bool = True  # False: a set-up step whose output is not compared
    interrupt_when: str | None = None  # SIGINT once stdout holds this many matches of ... (see below)
    interrupt_count: int = 1
    sort: bool = False  # compare the step's lines sorted (their order is not defined across partitions)

    @property
    def path(self) -> Path:
        if self.script.startswith("examples/"):
            return EXAMPLES / self.script.removeprefix("examples/")
        return SCRIPTS / self.script

    @property
    def origin(self) -> str:
        return "kstream" if self.script.startswith("examples/") else "kafka"


@dataclass(frozen=True)
class Difference:
    """A recorded difference: after normalisation Kafka's output holds ``kafka`` where kstream's
    holds ``kstream`` (regular expressions, each matching at least once); ``doc`` is the
    heading anchor of its entry in docs/COMPAT.md."""

    doc: str
    kafka: str
    kstream: str


@dataclass(frozen=True)
class Case:
    name: str
    steps: tuple[Step, ...]
    normalise: tuple[tuple[str, str], ...] = ()  # (pattern, replacement), applied to both sides
    differences: tuple[Difference, ...] = ()
    replace: tuple[tuple[str, str], ...] = ()  # literal source edits for both sides (explained in cases.py)
    slow: bool = False  # about 10 s (many steps): pytest runs it with -m slow (make test-slow)


# -- porting -----------------------------------------------------------------------------------

_TO_KSTREAM = (
    (re.compile(r"^(\s*)from confluent_kafka(\.\w+)? import", re.M), r"\1from kstream\2 import"),
    (re.compile(r"^(\s*)import confluent_kafka$", re.M), r"\1import kstream as confluent_kafka"),
    (re.compile(r"""(["'])bootstrap\.servers\1"""), '"cluster"'),
)
_TO_KAFKA = (
    (re.compile(r"^(\s*)from kstream(\.\w+)? import", re.M), r"\1from confluent_kafka\2 import"),
    (re.compile(r"^(\s*)import kstream$", re.M), r"\1import confluent_kafka as kstream"),
    (re.compile(r"""(["'])cluster\1"""), '"bootstrap.servers"'),
)


def port(source: str, origin: str, side: str) -> str:
    """``source`` (written for ``origin``'s library) as it runs on ``side``: the import and the
    connection key changed, nothing else. Raises when it imports neither library."""
    if origin == side:
        return source
    edits = _TO_KSTREAM if side == "kstream" else _TO_KAFKA
    ported, imports = edits[0][0].subn(edits[0][1], source)
    ported, more = edits[1][0].subn(edits[1][1], ported)
    if imports + more == 0:
        raise ValueError(f"the script imports no {origin} names: nothing to port")
    return edits[2][0].sub(edits[2][1], ported)


# -- running -----------------------------------------------------------------------------------

@dataclass
class Outcome:
    side: str
    text: str = ""  # the compared output, normalised
    raw: list[str] = field(default_factory=list)  # every step's command, exit, stdout and stderr
    failed: list[str] = field(default_factory=list)  # steps that exited other than 0
    seconds: float = 0.0


def _env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}
    env.pop("KSTREAM_CLUSTER", None)
    return env


def _run_step(command: list[str], step: Step, cwd: Path) -> subprocess.CompletedProcess[str]:
    if step.interrupt_when is None:
        return subprocess.run(command, input=step.stdin, env=_env(), cwd=cwd, capture_output=True,
                              text=True, timeout=STEP_TIMEOUT_S)
    # Run until stdout shows interrupt_when interrupt_count times, then Ctrl-C (as a user stops it).
    out_path, err_path = cwd / "stdout", cwd / "stderr"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=out, stderr=err, env=_env(),
                                 cwd=cwd, text=True)
        child.stdin.write(step.stdin)
        child.stdin.close()
        deadline = time.monotonic() + STEP_TIMEOUT_S
        pattern = re.compile(step.interrupt_when)
        while child.poll() is None and time.monotonic() < deadline:
            if len(pattern.findall(out_path.read_text())) >= step.interrupt_count:
                break
            time.sleep(0.05)
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
        try:
            child.wait(STEP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return subprocess.CompletedProcess(command, child.returncode, out_path.read_text(), err_path.read_text())


def normalise(text: str, case: Case, names: dict[str, str]) -> str:
    for literal, name in names.items():
        text = text.replace(literal, name)
    for pattern, replacement in case.normalise:
        text = re.sub(pattern, replacement, text, flags=re.M)
    return text


def run_side(case: Case, side: str, bootstrap: str, topic: str, work: Path) -> Outcome:
    """Every step of ``case`` on ``side``; its output normalised."""
    connection = bootstrap if side == "kafka" else str(work / "cluster")
    names = {connection: "{connection}", topic: "{topic}"}
    outcome = Outcome(side)
    started = time.monotonic()
    parts = []
    for number, step in enumerate(case.steps):
        source = step.path.read_text()
        for old, new in case.replace:
            source = source.replace(old, new.format(topic=topic))
        script = work / f"{side}-{number}-{step.path.name}"
        script.write_text(port(source, step.origin, side))
        args = [a.format(connection=connection, topic=topic) for a in step.args]
        command = [sys.executable, str(script), *args]
        cwd = work / f"{side}-{number}"
        cwd.mkdir()
        done = _run_step(command, step, cwd)
        outcome.raw.append(f"$ {step.script} {' '.join(args)}  (exit {done.returncode})\n"
                           f"--- stdout\n{done.stdout}--- stderr\n{done.stderr}")
        if done.returncode != 0:  # every step must succeed: two equal crashes are no agreement
            outcome.failed.append(f"{side}: step {number} ({step.script}) exited {done.returncode}")
        if not step.compare:
            continue
        text = normalise(done.stdout + (done.stderr if step.stderr else ""), case, names)
        if step.sort:  # after normalising: what it hides must not decide the order either
            text = "".join(sorted(text.splitlines(keepends=True)))
        parts.append(f"## {step.script} {' '.join(step.args)} (exit {done.returncode})\n{text}")
    outcome.text = "".join(parts)
    outcome.seconds = time.monotonic() - started
    return outcome


def compare(case: Case, kafka: str, kstream: str) -> list[str]:
    """What is wrong with the pair (empty when they agree up to the case's recorded differences)."""
    problems = []
    for number, difference in enumerate(case.differences):
        for side, pattern in (("kafka", difference.kafka), ("kstream", difference.kstream)):
            if not re.search(pattern, kafka if side == "kafka" else kstream, flags=re.M):
                problems.append(f"recorded difference {difference.doc} no longer shows on the {side} "
                                f"side (no match for {pattern!r}): update cases.py and docs/COMPAT.md")
        mark = f"<difference {number}: {difference.doc}>"
        kafka = re.sub(difference.kafka, mark, kafka, flags=re.M)
        kstream = re.sub(difference.kstream, mark, kstream, flags=re.M)
    if kafka != kstream:
        diff = difflib.unified_diff(kafka.splitlines(), kstream.splitlines(), "confluent_kafka -> Kafka",
                                    "kstream", lineterm="")
        problems.append("the outputs differ:\n" + "\n".join(diff))
    return problems


@dataclass
class Result:
    case: Case
    kafka: Outcome
    kstream: Outcome
    problems: list[str]

    def report(self) -> str:
        lines = [f"{self.case.name}: {'ok' if not self.problems else 'DIFFERENT'} "
                 f"(kafka {self.kafka.seconds:.1f} s, kstream {self.kstream.seconds:.1f} s)"]
        lines += self.problems
        if self.problems:
            for outcome in (self.kafka, self.kstream):
                lines.append(f"==== {outcome.side}: what the steps printed")
                lines += outcome.raw
        return "\n".join(lines)


def run_case(case: Case, bootstrap: str, sides: tuple[str, ...] = SIDES) -> Result:
    topic = f"dual-{case.name.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix=f"dual-{case.name}-") as folder:
        work = Path(folder)
        outcomes = {side: run_side(case, side, bootstrap, topic, work) if side in sides else Outcome(side)
                    for side in SIDES}
    problems = [failure for outcome in outcomes.values() for failure in outcome.failed]
    if len(sides) == 2:
        problems += compare(case, outcomes["kafka"].text, outcomes["kstream"].text)
    return Result(case, outcomes["kafka"], outcomes["kstream"], problems)


def main(argv: list[str] | None = None) -> int:
    from tests.dual.cases import CASES

    parser = argparse.ArgumentParser(prog="python -m tests.dual.run", description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", help=f"case names (default: all): {', '.join(CASES)}")
    parser.add_argument("--bootstrap", help="a running Kafka broker (default: start one for the run)")
    parser.add_argument("--side", choices=("both", *SIDES), default="both")
    parser.add_argument("--show", action="store_true", help="print each side's normalised output")
    parser.add_argument("--raw", action="store_true", help="print what every step printed, as it printed it")
    args = parser.parse_args(argv)
    unknown = [name for name in args.cases if name not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    sides = SIDES if args.side == "both" else (args.side,)
    selected = [CASES[name] for name in args.cases or CASES]
    if args.bootstrap or sides == ("kstream",):
        return _run_all(selected, args.bootstrap or "", sides, args.show, args.raw)
    from kstream.tools.perf.kafka_peer import KafkaPeer

    with KafkaPeer(1) as peer:
        return _run_all(selected, peer.bootstrap, sides, args.show, args.raw)


def _run_all(cases: list[Case], bootstrap: str, sides: tuple[str, ...], show: bool, raw: bool) -> int:
    failed = 0
    for case in cases:
        result = run_case(case, bootstrap, sides)
        print(result.report(), flush=True)
        if show:
            for outcome in (result.kafka, result.kstream):
                if outcome.side in sides:
                    print(f"---- {outcome.side} (normalised)\n{outcome.text}", flush=True)
        if (raw and not result.problems) or (result.problems and len(sides) == 1):
            for outcome in (result.kafka, result.kstream):
                print(f"==== {outcome.side}: what the steps printed", *outcome.raw, sep="\n", flush=True)
        failed += bool(result.problems)
    print(f"{len(cases) - failed} of {len(cases)} cases agree")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
