"""The console's mirrors page and its JSON (routes_mirrors): mirrors' own heartbeats, read only."""

from __future__ import annotations

import time

from web_helpers import tree

from kstream.mirror import MirrorError, MirrorOptions, parse_endpoint
from kstream.mirror.progress import Progress
from kstream.mirror.status import StatusWriter, run_base


def report(cluster_dir, name, state, *, age_s=0.0, error=None, direction="into-kafka"):
    """A status record as a mirror run writes it (``age_s``: how long ago its heartbeat was)."""
    options = MirrorOptions(parse_endpoint(f"cluster:{cluster_dir}"), parse_endpoint("kafka:broker:9092"), name,
                            topics=("t",), progress_interval_s=1.0, timeout_s=1.0)
    progress = Progress(name)
    progress.positions.update({("t", 0): 5, ("t", 1): 3})
    progress.ends.update({("t", 0): 5, ("t", 1): 8})
    progress.targets.update({("t", 0): 105})
    progress.records = 8
    writer = StatusWriter(cluster_dir, run_base(options, direction))
    try:
        return writer.write(state, progress, error, now_ms=int((time.time() - age_s) * 1000))
    finally:
        writer.close()


def test_a_cluster_no_mirror_reported_to_says_so(client):
    page = client.get("/c/main/mirrors")
    assert page.status_code == 200 and "No mirror reported to this cluster in the last 24 h" in page.text
    assert client.get("/c/main/api/mirrors").json()["mirrors"] == []


def test_the_page_shows_each_mirror_with_its_state_and_partitions(client, cluster_dir):
    report(cluster_dir, "orders", "running")
    report(cluster_dir, "killed", "running", age_s=3600)  # stopped heartbeating an hour ago: stale
    report(cluster_dir, "failing", "failed", error=MirrorError("broker at broker:9092 did not answer"))
    page = client.get("/c/main/mirrors").text
    for name, state in (("orders", "running"), ("killed", "stale"), ("failing", "failed")):
        row = page.split(f'<tr data-mirror="{name}">')[1].split("</tr>")[0]
        assert f">{state}</span>" in row, (name, row)
        assert "into-kafka" in row and "kafka:broker:9092" in row and ">8<" in row and ">5<" in row  # records, lag
    assert "MirrorError: broker at broker:9092 did not answer" in page
    section = page.split('id="mirror-orders"')[1].split("</section>")[0]
    cells = [c.split(">")[-1] for c in section.split("</td>")[:-1]]
    assert cells[:12] == ["t", "0", "5", "5", "105", "0", "t", "1", "3", "8", "-", "5"]
    assert 'href="/c/main/mirrors"' in client.get("/c/main").text  # the nav links it


def test_the_json_endpoint_gives_the_records_with_the_shown_state(client, cluster_dir):
    report(cluster_dir, "orders", "running")
    report(cluster_dir, "old", "stopped", age_s=2 * 3600)
    body = client.get("/c/main/api/mirrors").json()
    assert [m["mirror"] for m in body["mirrors"]] == ["orders", "old"]  # newest first
    orders = body["mirrors"][0]
    assert (orders["shown_state"], orders["direction"], orders["total_lag"], orders["topics"]) == (
        "running", "into-kafka", 5, ["t"])
    assert orders["partitions"][0] == {"topic": "t", "partition": 0, "source_position": 5, "source_end": 5,
                                       "target_position": 105, "lag": 0}
    assert [m["mirror"] for m in client.get("/c/main/api/mirrors?since_h=1").json()["mirrors"]] == ["orders"]
    assert client.get("/c/main/api/mirrors?since_h=0").status_code == 422
    assert client.get("/c/nope/api/mirrors").status_code == 404


def test_a_read_only_console_shows_mirrors_and_writes_nothing(read_only_client, cluster_dir):
    report(cluster_dir, "orders", "running")
    read_only_client.get("/c/main/topics/t")  # the first open may write derived files (docs/CLI.md)
    before = tree(cluster_dir)
    assert ">orders</a>" in read_only_client.get("/c/main/mirrors").text
    assert read_only_client.get("/c/main/api/mirrors").json()["mirrors"][0]["mirror"] == "orders"
    assert tree(cluster_dir) == before


def test_a_status_record_of_another_type_is_an_error_box_not_a_500(client, cluster_dir):
    import json

    from kstream import Producer
    from kstream.mirror.status import TOPIC

    doc = json.loads(report(cluster_dir, "orders", "running").to_json())
    with Producer({"cluster": cluster_dir}) as producer:
        producer.produce(TOPIC, json.dumps({**doc, "heartbeat_ms": "soon"}).encode(), key=b"orders/1-1", partition=0)
    page = client.get("/c/main/mirrors")
    assert page.status_code == 400 and "offset 1: not a mirror status record" in page.text
    assert "heartbeat_ms" in page.text and f"kstream topics delete {TOPIC}" in page.text
    assert client.get("/c/main/api/mirrors").status_code == 400
