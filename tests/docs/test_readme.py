"""Every README command and snippet runs in order on a fresh cluster, twice in the same
directory, as a user on a fresh clone runs them (issue 20, item 7); the runner
(tests/docs/run_markdown.py) takes any markdown file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from tests.docs.run_markdown import REPO, MarkdownRunError, extract_blocks, parse_marker, run_markdown

README = os.path.join(REPO, "README.md")


def _run_twice(workdir, only):
    timings = []
    for _ in range(2):
        outcomes = run_markdown(README, str(workdir), only=only)
        timings.append(sum(o.seconds for o in outcomes))
    return outcomes, timings


def test_readme_runs_in_order_twice(tmp_path):
    """The README without its Spark snippet: the quick start, the shell lines, the console, groups."""
    outcomes, timings = _run_twice(tmp_path, only="fast")
    ran = [o for o in outcomes if o.ran]
    assert len(ran) >= 5, [o.block.where() for o in ran]
    assert (tmp_path / "data" / "metadata.db").is_file()  # the README's ./data, in the working directory
    print(f"README (no Spark) ran twice: {timings[0]:.1f} s, {timings[1]:.1f} s")


@pytest.mark.slow  # spark-submit twice: ~45 s a run on a loaded 2-core machine
def test_whole_readme_with_its_spark_snippets_runs_twice(tmp_path):
    """Every block, the Spark snippet (under spark-submit, as make run runs jobs) too."""
    outcomes, timings = _run_twice(tmp_path, only=None)
    assert any(o.ran and o.block.marker is not None and o.block.marker.spark for o in outcomes)
    print(f"README ran twice: {timings[0]:.1f} s, {timings[1]:.1f} s")


def test_every_readme_block_runs_or_says_why():
    for block in extract_blocks(README):
        if block.language not in ("bash", "python"):
            assert block.marker is not None and not block.marker.run, block.where()
        if block.marker is not None and not block.marker.run:
            assert block.marker.reason, block.where()


# The runner itself: it must fail where a user's paste would.

def _md(tmp_path, text):
    path = tmp_path / "doc.md"
    path.write_text(textwrap.dedent(text))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return str(path), str(work)


def test_runner_fails_on_a_failing_command(tmp_path):
    path, work = _md(tmp_path, """\
        ```bash
        echo one > one.txt
        false
        echo never
        ```
        """)
    with pytest.raises(MarkdownRunError, match=r"doc.md:1 .*exited with 1"):
        run_markdown(path, work)


def test_runner_fails_on_an_exception_and_runs_blocks_in_order_in_one_directory(tmp_path):
    path, work = _md(tmp_path, """\
        ```bash
        echo made > made.txt
        ```

        ```python
        print(open("made.txt").read())
        ```

        ```python
        raise ValueError("boom")
        ```
        """)
    with pytest.raises(MarkdownRunError, match=r"doc.md:9 .*(?s:.*)ValueError: boom"):
        run_markdown(path, work)


def test_runner_refuses_an_unmarked_block_it_cannot_run(tmp_path):
    path, work = _md(tmp_path, """\
        ```console
        $ kstream topics list
        ```
        """)
    with pytest.raises(MarkdownRunError, match=r"cannot run.*doc.md:1"):
        run_markdown(path, work)


def test_runner_skips_not_run_blocks_and_stops_long_running_ones(tmp_path):
    path, work = _md(tmp_path, """\
        <!-- not run: it would install things -->
        ```bash
        exit 3
        ```

        <!-- run: timeout=1 expect-exit=0 expect-output=waiting; a server -->
        ```bash
        trap 'echo stopped; exit 0' INT
        echo waiting
        while true; do sleep 0.1; done
        ```

        ```json
        {"not": "a command"}
        ```
        """)
    outcomes = run_markdown(path, work)
    assert [o.ran for o in outcomes] == [False, True, False]
    assert "stopped" in outcomes[1].output


def test_runner_stops_a_block_that_never_ends_without_a_marker(tmp_path):
    path, work = _md(tmp_path, """\
        ```bash
        sleep 30
        ```
        """)
    with pytest.raises(MarkdownRunError, match="still ran after 1 s"):
        run_markdown(path, work, limit_s=1)


def test_marker_settings():
    marker = parse_marker("<!-- run: timeout=5 signal=TERM expect-exit=130 expect-output=a+b; why -->", "x")
    assert (marker.timeout, marker.signal, marker.expect_exit, marker.expect_output, marker.reason) == (
        5.0, signal.SIGTERM, 130, "a b", "why")
    with pytest.raises(MarkdownRunError, match="unknown run setting 'timout'"):
        parse_marker("<!-- run: timout=5 -->", "x")
    with pytest.raises(MarkdownRunError, match="needs a reason"):
        parse_marker("<!-- not run: -->", "x")


def test_consumer_group_snippet_pasted_twice_into_one_interpreter(tmp_path):
    """Pasted again into the same python (within the session timeout), the snippet's second
    consumer must not wait for the first one's partitions: the snippet closes its consumer."""
    blocks = [b for b in extract_blocks(README) if b.language == "python"]
    quick_start = next(b for b in blocks if "OFFSET_BEGINNING" in b.code)
    group = next(b for b in blocks if '"group.id": "billing"' in b.code)
    env = dict(os.environ)
    env.pop("KSTREAM_CLUSTER", None)
    again = ("from kstream import Producer\n"
             "with Producer({'cluster': './data'}) as p:\n    p.produce('events', b'new', key=b'user-1')\n"
             "print('--- again')\n")
    for code in (quick_start.code, group.code + again + group.code):
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
    first, second = done.stdout.split("--- again\n")
    assert "b'hello'" in first and "b'arrow!'" in first
    assert second.splitlines() == ["2 2 b'new'"], done.stdout  # the group's next record, read at once
