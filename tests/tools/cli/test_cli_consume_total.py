"""`kstream consume` ends as kafka-console-consumer does: "Processed a total of N messages" on
stderr whether it stops at --max-messages, at --timeout-ms, or on Ctrl-C (SIGINT, exit 130)
(issue 20, item 7: the README's consume line)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from kstream import Producer

CLI = [sys.executable, "-c", "from kstream.tools.cli.main import main; main()"]


def _three_records(cluster_path: str) -> None:
    with Producer({"cluster": cluster_path}) as producer:
        for value in (b"a", b"b", b"c"):
            producer.produce("t", value, partition=0)


def test_consume_prints_the_total_at_its_limits(cluster_path, make_topic):
    make_topic("t", 1)
    _three_records(cluster_path)
    for limit in (["--max-messages", "2"], ["--timeout-ms", "300"]):
        done = subprocess.run([*CLI, "consume", "t", "--cluster", cluster_path, "--from-beginning", *limit],
                              capture_output=True, text=True, timeout=60)
        expected = 2 if limit[0] == "--max-messages" else 3
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["a", "b", "c"][:expected]
        assert done.stderr.strip().splitlines()[-1] == f"Processed a total of {expected} messages"


def test_ctrl_c_prints_the_total_and_exits_130(cluster_path, make_topic):
    make_topic("t", 1)
    _three_records(cluster_path)
    process = subprocess.Popen([*CLI, "consume", "t", "--cluster", cluster_path, "--from-beginning"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        lines = [process.stdout.readline() for _ in range(3)]  # all printed: now it waits for more
        assert lines == ["a\n", "b\n", "c\n"]
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert out == ""
    assert err.strip().splitlines() == ["Processed a total of 3 messages"], err
