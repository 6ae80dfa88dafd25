"""peers/kafka/resolve.sh (`make kafka`) with stand-in java/mvn: it says in one line (exit 3) what
is missing, fails loudly on anything else, and swaps the jar folders whole (no stale jar)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("bash", "touch", "dirname", "mktemp", "grep", "cat", "date", "basename", "mv", "rm", "ls", "wc", "mkdir")

FAKE_MVN = """#!/usr/bin/env bash
# a stand-in for mvn: $MODE says what it does
for arg in "$@"; do
  case "$arg" in
    -Dlib.dir=*) dir="${arg#-Dlib.dir=}";;
    -f) next=pom;;
    *) [ "${next:-}" = pom ] && pom="$arg"; next=;;
  esac
done
case "$MODE" in
  offline) echo "[ERROR] Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.4.0: Unknown host"; exit 1;;
  broken) echo "[ERROR] Malformed POM: unexpected end of file"; exit 1;;
esac
mkdir -p "$dir"
case "$pom" in
  */connector/pom.xml) touch "$dir/spark-sql-kafka-0-10_2.13-$VERSION.jar" "$dir/kafka-clients-3.9.2.jar";;
  *) touch "$dir/kafka_2.13-$VERSION.jar" "$dir/kafka-tools-$VERSION.jar";;
esac
"""


@pytest.fixture
def peers(tmp_path):
    """A copy of peers/kafka (its lib/ in tmp_path) and a PATH of the basic tools only."""
    here = tmp_path / "peers" / "kafka"
    shutil.copytree(ROOT / "peers" / "kafka", here, ignore=shutil.ignore_patterns("lib"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    return here, bin_dir


def run(peers, mode=None, version="4.4.0"):
    here, bin_dir = peers
    if mode is not None:
        for name in ("java", "mvn"):
            (bin_dir / name).write_text(FAKE_MVN if name == "mvn" else "#!/bin/sh\nexit 0\n")
            (bin_dir / name).chmod(0o755)
    return subprocess.run([shutil.which("bash"), str(here / "resolve.sh")], capture_output=True, text=True,
                          env={"PATH": str(bin_dir), "MODE": mode or "", "VERSION": version}, timeout=60, check=False)


def test_without_java_or_maven_it_says_so_in_one_line(peers):
    done = run(peers)
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1 and "no java on PATH" in done.stderr and "kafka tests skip" in done.stderr


def test_without_maven_central_it_says_so_in_one_line(peers):
    done = run(peers, "offline")
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1 and "could not fetch the broker jars" in done.stderr
    assert not (peers[0] / "lib" / "broker").exists()


def test_another_maven_failure_is_shown_whole(peers):
    done = run(peers, "broken")
    assert done.returncode == 1
    assert "Malformed POM" in done.stderr


def test_a_new_version_replaces_the_old_jars(peers):
    lib = peers[0] / "lib"
    assert run(peers, "ok", "4.3.1").returncode == 0
    done = run(peers, "ok", "4.4.0")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (lib / "broker").iterdir()) == ["kafka-tools-4.4.0.jar", "kafka_2.13-4.4.0.jar"]
    assert "spark-sql-kafka-0-10_2.13-4.4.0.jar" in (lib / "VERSIONS").read_text()
    assert sorted(p.name for p in lib.iterdir()) == ["VERSIONS", "broker", "connector"]
    assert "kafka_2.13-4.4.0.jar" in done.stdout


def test_connector_jars_are_every_connector_jar_once_the_connector_is_resolved(tmp_path):
    from kstream.tools.perf.kafka_peer import connector_jars, connector_version

    connector = tmp_path / "connector"
    connector.mkdir()
    (connector / "kafka-clients-3.9.2.jar").touch()
    assert connector_jars(tmp_path) == [] and connector_version(tmp_path) is None  # no connector jar
    (connector / "spark-sql-kafka-0-10_2.13-4.2.0.jar").touch()
    (connector / "VERSIONS").touch()
    assert connector_jars(tmp_path) == [str(connector / "kafka-clients-3.9.2.jar"),
                                        str(connector / "spark-sql-kafka-0-10_2.13-4.2.0.jar")]
    assert connector_version(tmp_path) == "4.2.0"
    assert connector_jars(tmp_path / "nowhere") == []


def test_the_spark_test_session_carries_the_connector_beside_kstreams_jars(tmp_path):
    from tests.spark.conftest import session_jars

    bench = tmp_path / "bench.jar"
    assert session_jars(None, str(bench), []) == []
    assert session_jars("k.jar", str(bench), ["c1.jar", "c2.jar"]) == ["k.jar", "c1.jar", "c2.jar"]
    bench.touch()
    assert session_jars("k.jar", str(bench), ["c1.jar"]) == ["k.jar", str(bench), "c1.jar"]
    assert session_jars(None, str(bench), ["c1.jar"]) == ["c1.jar"]
