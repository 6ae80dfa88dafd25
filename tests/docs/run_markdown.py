"""Run a markdown file's ```bash and ```python blocks in order, as a user pasting them would.

    python -m tests.docs.run_markdown README.md [--workdir DIR] [--times 2]

Each ```bash (``sh``, ``shell``) block runs in its own ``bash`` with ``set -euo pipefail``, and
each ```python (``py``) block in its own fresh interpreter (``python -c``): a block is what a
user pastes into a terminal or a new ``python``, so every block carries its own imports. All
run in one working directory with the interpreter's bin dir (the virtualenv's ``kstream``,
``spark-submit``, ``python3``) first on PATH and no ``KSTREAM_CLUSTER``, so ``./data`` is the
cluster, as on a fresh clone. A non-zero exit or an exception fails the run, naming the
file, the block's line and its output.

An HTML comment on the last non-blank line before a block's fence says how to run it:

``<!-- not run: why -->``
    skipped (``make run``, ``pip install``, a command needing hardware the test has not).
``<!-- run: SETTINGS; why -->``
    SETTINGS are space-separated, the text after ``;`` explains them:

    ``timeout=S``       a long-running command (a server, a consumer without a limit): after S
                        seconds its process group gets ``signal`` (as Ctrl-C does);
    ``signal=INT|TERM`` the signal (default INT);
    ``expect-exit=N``   the exit status the block must end with (default 0);
    ``expect-output=T`` text (no spaces; ``+`` stands for one) its stdout or stderr must hold;
    ``spark``           a python block gets ``spark``, the session a pyspark shell or a job
                        started with ``spark-submit --properties-file conf/spark-defaults.conf``
                        has: the block runs under spark-submit as ``make run`` runs jobs.

Blocks in languages that are data or output (``text``, ``json``, ``csv``, ...) are never run;
any other block (no language, ``console``, ``pycon``, ``java``, ...) without a marker fails
the run: mark it ``not run`` with the reason, so that nothing in the file is silently skipped.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

BASH = {"bash", "sh", "shell"}
PYTHON = {"python", "py", "python3"}
DATA = {"text", "json", "csv", "toml", "yaml", "yml", "properties", "ini", "xml", "diff", "output", "log"}
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETTINGS = {"timeout", "signal", "expect-exit", "expect-output", "spark"}
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
MARKER = re.compile(r"^<!--\s*(not run|run)\s*:(.*?)-->\s*$")
SPARK_PRELUDE = ("from pyspark.sql import SparkSession\n"
                 "spark = SparkSession.builder.getOrCreate()\n"
                 "spark.sparkContext.setLogLevel('ERROR')\n")


class MarkdownRunError(Exception):
    """A block failed, or a block cannot be run and has no marker."""


@dataclass
class Marker:
    run: bool
    reason: str = ""
    timeout: float | None = None
    signal: int = signal.SIGINT
    expect_exit: int = 0
    expect_output: str | None = None
    spark: bool = False


@dataclass
class Block:
    path: str
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    marker: Marker | None = None

    def where(self) -> str:
        return f"{self.path}:{self.line} (```{self.language or ''} block)"


@dataclass
class Outcome:
    block: Block
    ran: bool
    seconds: float = 0.0
    returncode: int | None = None
    output: str = ""
    notes: list[str] = field(default_factory=list)


def parse_marker(text: str, where: str) -> Marker:
    match = MARKER.match(text.strip())
    if match is None:
        raise MarkdownRunError(f"{where}: not a run marker: {text.strip()!r} "
                               "(expected <!-- not run: why --> or <!-- run: SETTINGS; why -->)")
    kind, body = match.group(1), match.group(2).strip()
    if kind == "not run":
        if not body:
            raise MarkdownRunError(f"{where}: <!-- not run: --> needs a reason after the colon")
        return Marker(run=False, reason=body)
    settings, _, reason = body.partition(";")
    marker = Marker(run=True, reason=reason.strip())
    for token in settings.split():
        key, _, value = token.partition("=")
        if key not in SETTINGS:
            raise MarkdownRunError(f"{where}: unknown run setting {key!r} (known: {', '.join(sorted(SETTINGS))})")
        if key == "timeout":
            marker.timeout = float(value)
        elif key == "signal":
            marker.signal = {"INT": signal.SIGINT, "TERM": signal.SIGTERM}[value]
        elif key == "expect-exit":
            marker.expect_exit = int(value)
        elif key == "expect-output":
            marker.expect_output = value.replace("+", " ")
        else:
            marker.spark = True
    return marker


def extract_blocks(path: str) -> list[Block]:
    """Every fenced block of the markdown file at ``path``, in order, with its marker."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    blocks: list[Block] = []
    previous = ""  # the last non-blank line outside a block
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            if lines[i].strip():
                previous = lines[i]
            i += 1
            continue
        fence, language = match.group(1), match.group(2).lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise MarkdownRunError(f"{path}:{start + 1}: a fenced block that never closes")
        i += 1
        block = Block(path, start + 1, language, "\n".join(body) + "\n")
        if previous.strip().startswith("<!--") and re.search(r"\b(not run|run)\s*:", previous):
            block.marker = parse_marker(previous, block.where())
        blocks.append(block)
        previous = ""
    return blocks


def environment(bin_dir: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KSTREAM_CLUSTER", None)  # the README's ./data
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    python = os.path.join(bin_dir, "python")
    env.setdefault("PYSPARK_PYTHON", python)  # the README's "set PYSPARK_PYTHON" (as make does)
    env.setdefault("PYSPARK_DRIVER_PYTHON", python)
    return env


def command(block: Block, bin_dir: str, scratch: str) -> list[str]:
    if block.language in BASH:
        return ["bash", "-c", "set -euo pipefail\n" + block.code]
    code = block.code
    if block.marker is not None and block.marker.spark:
        script = os.path.join(scratch, f"block-{block.line}.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write(SPARK_PRELUDE + code)
        return [os.path.join(bin_dir, "spark-submit"), "--properties-file",
                os.path.join(REPO, "conf", "spark-defaults.conf"), *jar_args(), script]
    return [os.path.join(bin_dir, "python"), "-c", code]


def jar_args() -> list[str]:
    jar = os.path.join(REPO, "src", "kstream", "jars", "kstream-spark.jar")
    return ["--jars", jar] if os.path.isfile(jar) else []  # as make run passes it


def run_block(block: Block, workdir: str, bin_dir: str, scratch: str, limit_s: float) -> Outcome:
    marker = block.marker or Marker(run=True)
    started = time.monotonic()
    process = subprocess.Popen(command(block, bin_dir, scratch), cwd=workdir, env=environment(bin_dir),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    outcome = Outcome(block, ran=True)
    try:
        output, _ = process.communicate(timeout=marker.timeout if marker.timeout is not None else limit_s)
    except subprocess.TimeoutExpired:
        if marker.timeout is None:  # a block that should end by itself did not
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            raise MarkdownRunError(f"{block.where()} still ran after {limit_s:.0f} s (killed); a long-running "
                                   f"command needs <!-- run: timeout=S ...; why -->\n--- output:\n{output}") from None
        os.killpg(process.pid, marker.signal)
        outcome.notes.append(f"signal {signal.Signals(marker.signal).name} after {marker.timeout:g} s")
        try:
            output, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            raise MarkdownRunError(f"{block.where()} did not stop within 30 s of "
                                   f"{signal.Signals(marker.signal).name}\n--- output:\n{output}") from None
    outcome.seconds = time.monotonic() - started
    outcome.returncode = process.returncode
    outcome.output = output
    if process.returncode != marker.expect_exit:
        raise MarkdownRunError(f"{block.where()} exited with {process.returncode} (expected {marker.expect_exit})"
                               f"\n--- block:\n{block.code}--- output:\n{output}")
    if marker.expect_output is not None and marker.expect_output not in output:
        raise MarkdownRunError(f"{block.where()}: output lacks {marker.expect_output!r}\n--- output:\n{output}")
    return outcome


def run_markdown(path: str, workdir: str, bin_dir: str | None = None, limit_s: float = 300.0,
                 only: str | None = None) -> list[Outcome]:
    """Run every block of ``path`` in order in ``workdir``; raise MarkdownRunError at the first
    failure. ``only``: "spark" runs only the blocks marked spark, "fast" all others."""
    bin_dir = bin_dir or os.path.dirname(sys.executable)
    blocks = extract_blocks(path)
    unrunnable = [b for b in blocks if b.marker is None and b.language not in BASH | PYTHON | DATA]
    if unrunnable:
        raise MarkdownRunError("blocks the runner cannot run and no marker explains: "
                               + ", ".join(b.where() for b in unrunnable)
                               + " (put <!-- not run: why --> or <!-- run: ...; why --> right before each)")
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="run-markdown-") as scratch:
        for block in blocks:
            marker = block.marker
            runnable = block.language in BASH | PYTHON and (marker is None or marker.run)
            if runnable and only is not None and (marker is not None and marker.spark) != (only == "spark"):
                runnable = False
            if not runnable:
                outcomes.append(Outcome(block, ran=False, notes=[marker.reason if marker else "data"]))
                continue
            outcomes.append(run_block(block, workdir, bin_dir, scratch, limit_s))
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("markdown")
    parser.add_argument("--workdir", help="where the blocks run (default: a new temporary directory)")
    parser.add_argument("--times", type=int, default=1, help="run the whole file this many times")
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="run-markdown-work-")
    for n in range(args.times):
        for outcome in run_markdown(os.path.abspath(args.markdown), workdir):
            state = f"{outcome.seconds:6.1f} s" if outcome.ran else "not run"
            print(f"run {n + 1}: {outcome.block.where()}: {state} {'; '.join(outcome.notes)}")
    print(f"all blocks passed in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
