"""Retention of a tiered topic deletes only segments the lake holds; describe writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from tier_helpers import SEGMENT_BYTES, fill, lake_rows, oracle, sealed_ends, segment_count

from helpers import file_tree, metadata_dump
from kstream.log.cluster.cluster import Cluster
from kstream.log.partition_bounds import bounds
from kstream.tiering import Tierer
from kstream.tools.cli.main import cli

OLD_MS = int(time.time() * 1000) - 3600_000  # an hour ago: past retention.ms below


def _retention(cluster_path, topic):
    cluster = Cluster.open(cluster_path)
    try:
        handle = cluster.partition(topic, 0)
        try:
            return handle.leader_log.apply_retention(), bounds(cluster, topic, 0).log_start_offset
        finally:
            handle.close()
    finally:
        cluster.close()


@pytest.mark.parametrize("bound", [{"retention.ms": "60000"}, {"retention.bytes": "1"}])
def test_untiered_segments_stay_until_the_lake_holds_them(cluster_path, make_topic, tmp_path, bound):
    lake = str(tmp_path / "lake")
    make_topic("t", 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake, **bound})
    make_topic("control", 1, config={"segment.bytes": SEGMENT_BYTES, **bound})
    fill(cluster_path, "t", 1, timestamp_ms=OLD_MS)
    fill(cluster_path, "control", 1, timestamp_ms=OLD_MS)
    segments = segment_count(cluster_path, "t", 0)
    assert segments > 3
    # The same log untiered loses its old segments; tiered, nothing goes before the lake has it.
    control_segments = segment_count(cluster_path, "control", 0)
    assert _retention(cluster_path, "control")[0] == control_segments - 1
    assert _retention(cluster_path, "t") == (0, 0)
    assert segment_count(cluster_path, "t", 0) == segments
    want = oracle(cluster_path, "t", 1)
    cluster = Cluster.open(cluster_path)
    try:
        Tierer(cluster).run(force=True)
    finally:
        cluster.close()
    deleted, log_start = _retention(cluster_path, "t")
    end = sealed_ends(cluster_path, "t")[0]
    assert deleted == segments - 1 and log_start == end  # every sealed segment: the lake holds them all
    in_lake = lake_rows(lake)
    assert in_lake == [row for row in want if row[1] < end]
    # What is left locally plus what the lake holds is everything a reader saw before.
    assert in_lake + [row for row in oracle(cluster_path, "t", 1) if row[1] >= log_start] == want


def test_a_segment_past_the_lake_end_stays(cluster_path, make_topic, tmp_path):
    """The lake end inside a sealed segment (an open transaction held the LSO there): that
    segment is not wholly below it, so it stays."""
    from kstream import Producer

    lake = str(tmp_path / "lake")
    make_topic("t", 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake, "retention.bytes": "1"})
    fill(cluster_path, "t", 1, rounds=2, timestamp_ms=OLD_MS)
    tx = Producer({"cluster": cluster_path, "transactional.id": "holder", "linger.ms": 0})
    tx.init_transactions()
    tx.begin_transaction()
    tx.produce("t", b"open" * 100, partition=0)
    tx.flush()
    try:
        fill(cluster_path, "t", 1, rounds=3, timestamp_ms=OLD_MS)
        cluster = Cluster.open(cluster_path)
        try:
            lso = bounds(cluster, "t", 0).last_stable_offset
            done = Tierer(cluster).run(force=True)
        finally:
            cluster.close()
        assert done[0].end_offset == lso
        _, log_start = _retention(cluster_path, "t")
        assert log_start <= lso  # the segment holding the LSO (and the open record) stays
    finally:
        tx.abort_transaction()
        tx.close()


def test_describe_shows_the_lake_and_writes_nothing(cluster_path, make_topic, tmp_path):
    lake = str(tmp_path / "lake")
    make_topic("t", 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake})
    fill(cluster_path, "t", 1)
    runner = CliRunner()
    before, dump = file_tree(str(tmp_path)), metadata_dump(cluster_path)
    out = runner.invoke(cli, ["--cluster", cluster_path, "topics", "describe", "t"], catch_exceptions=False).output
    assert file_tree(str(tmp_path)) == before and metadata_dump(cluster_path) == dump
    assert not os.path.exists(lake)
    end = sealed_ends(cluster_path, "t")[0]
    row = next(line for line in out.splitlines() if line.startswith("│ 0") and "s " in line)
    assert [cell.strip() for cell in row.split("│")[1:5]] == ["0", "0", "0", str(end)]
    result = runner.invoke(cli, ["--cluster", cluster_path, "tier", "run", "--once", "--force"],
                           catch_exceptions=False)
    assert f"t-0: tiered offsets 0..{end - 1}" in result.output
    out = runner.invoke(cli, ["--cluster", cluster_path, "topics", "describe", "t"], catch_exceptions=False).output
    row = next(line for line in out.splitlines() if line.startswith("│ 0") and "s " in line)
    assert [cell.strip() for cell in row.split("│")[1:5]] == ["0", "0", str(end), "0"]


def test_tier_run_cli_errors_and_no_topics(cluster_path, make_topic):
    runner = CliRunner()
    make_topic("plain")
    result = runner.invoke(cli, ["--cluster", cluster_path, "tier", "run", "--once"], catch_exceptions=False)
    assert result.exit_code == 0 and "no tiered topics" in result.output
    result = runner.invoke(cli, ["--cluster", cluster_path, "tier", "run", "--once", "--topic", "plain"])
    assert result.exit_code != 0 and "is not tiered" in str(result.exception)


def test_console_topic_page_shows_the_lake(cluster_path, make_topic, tmp_path):
    from fastapi.testclient import TestClient

    from kstream.tools.web.app import create_app
    from kstream.tools.web.clusters import ClusterRef, check_clusters

    lake = str(tmp_path / "lake")
    make_topic("t", 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake})
    make_topic("plain", 1)
    fill(cluster_path, "t", 1)
    cluster = Cluster.open(cluster_path)
    try:
        Tierer(cluster).run(force=True)
    finally:
        cluster.close()
    end = sealed_ends(cluster_path, "t")[0]
    with TestClient(create_app(check_clusters([ClusterRef("main", cluster_path)]))) as client:
        page = client.get("/c/main/topics/t").text
        assert "Lake (Delta)" in page and lake in page
        assert f'<td class="n">0</td><td class="n">0</td><td class="n">{end}</td>' in page
        assert "Lake (Delta)" not in client.get("/c/main/topics/plain").text


def test_every_replica_keeps_what_the_lake_lacks(tmp_path):
    """RF=2: retention of the leader and of the follower both stop at the lake end."""
    from kstream import Admin, NewTopic

    path = str(tmp_path / "rf2")
    lake = str(tmp_path / "lake")
    with Admin({"cluster": path, "log.dirs": "a,b"}) as admin:
        admin.create_topics([NewTopic("t", 1, 2, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake,
                                                         "retention.bytes": "1"})])["t"].result()
    fill(path, "t", 1, timestamp_ms=OLD_MS)
    cluster = Cluster.open(path)
    try:
        handle = cluster.partition("t", 0)
        assert len(handle.logs) == 2
        assert [log.apply_retention() for log in handle.logs.values()] == [0, 0]
        handle.close()
        Tierer(cluster).run(force=True)
        handle = cluster.partition("t", 0)
        deleted = [log.apply_retention() for log in handle.logs.values()]
        starts = {os.path.basename(os.path.dirname(log.directory)): sorted(os.listdir(log.directory))[0]
                  for log in handle.logs.values()}
        handle.close()
    finally:
        cluster.close()
    assert deleted[0] == deleted[1] > 0
    assert len(set(starts.values())) == 1  # both replicas start at the same segment


def test_tier_run_keeps_passing_until_interrupted(cluster_path, make_topic, tmp_path):
    """The continuous run: new sealed segments reach the lake at a later pass; Ctrl-C ends it."""
    import signal
    import subprocess
    import sys

    from tier_helpers import recorded_ends

    lake = str(tmp_path / "lake")
    make_topic("t", 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake, "tier.lag.bytes": "1"})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.Popen([sys.executable, "-c", "from kstream.tools.cli import main; main()", "--cluster",
                            cluster_path, "tier", "run", "--interval-ms", "100"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        fill(cluster_path, "t", 1, rounds=3)
        end = sealed_ends(cluster_path, "t")[0]
        deadline = time.monotonic() + 60
        while recorded_ends(cluster_path, "t").get(0, 0) < end:
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "the continuous run never tiered the sealed segments"
            time.sleep(0.1)
    finally:
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    assert "t-0: tiered offsets" in out


@pytest.mark.parametrize("point", ["retention.tiered-delete", "retention.tiered-delete:3"])
def test_killed_between_the_lake_end_and_a_segment_deletion(cluster_path, make_topic, tmp_path, point):
    """SIGKILL after the tierer recorded the lake end, while retention deletes what it covers
    (before the first or the third segment goes): the log starts at or below the lake end, and
    lake plus log is still everything a reader saw."""
    lake = str(tmp_path / "lake")
    make_topic("t", 1, config={"segment.bytes": SEGMENT_BYTES, "tier.delta.path": lake, "retention.ms": "60000"})
    fill(cluster_path, "t", 1, timestamp_ms=OLD_MS)
    want = oracle(cluster_path, "t", 1)
    segments = segment_count(cluster_path, "t", 0)
    cluster = Cluster.open(cluster_path)
    try:
        Tierer(cluster).run(force=True)
    finally:
        cluster.close()
    env = dict(os.environ, KSTREAM_CRASH_AT=point, PYTHONPATH=os.pathsep.join(sys.path))
    code = ("import sys; from kstream.log.cluster.cluster import Cluster; c = Cluster.open(sys.argv[1]); "
            "h = c.partition('t', 0); h.leader_log.apply_retention()")
    assert subprocess.run([sys.executable, "-c", code, cluster_path], env=env, timeout=120).returncode == -9
    skipped = 2 if point.endswith(":3") else 0
    assert segment_count(cluster_path, "t", 0) == segments - skipped  # killed before that deletion
    deleted, log_start = _retention(cluster_path, "t")  # the next retention finishes the job
    end = sealed_ends(cluster_path, "t")[0]
    assert deleted == segments - 1 - skipped and log_start == end
    assert lake_rows(lake) + [row for row in oracle(cluster_path, "t", 1) if row[1] >= log_start] == want
