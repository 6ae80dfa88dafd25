"""What issue 12's page-speed work changed, seen from the pages: the message browser stops at
the partition's end (no poll timeout), Burrow's group status in /metrics, ISR shrinks on the
overview. (Timings are bench/console_pages.py's job, not a test's.)"""

from __future__ import annotations

import time

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from kstream.client.consumer import Consumer
from kstream.tools.monitor.lag import groups_summary
from kstream.tools.web import browser
from kstream.tools.web.app import create_app


def test_browser_stops_at_the_partition_end_without_waiting(cluster_dir, monkeypatch):
    empty_polls = []
    poll = Consumer.poll

    def counting_poll(self, timeout=None):
        message = poll(self, timeout)
        if message is None:
            empty_polls.append(timeout)  # the old way to find the end: a poll that times out
        return message

    monkeypatch.setattr(Consumer, "poll", counting_poll)
    rows = browser.browse(cluster_dir, browser.BrowseRequest("t", 1, count=50))
    assert [row.offset for row in rows] == [0, 1, 2, 3, 4]
    middle = browser.browse(cluster_dir, browser.BrowseRequest("t", 0, offset=2, count=2))
    assert [row.offset for row in middle] == [2, 3]  # count still stops first
    past = browser.browse(cluster_dir, browser.BrowseRequest("t", 0, offset=5, count=5))
    assert past == []
    assert empty_polls == []


def test_metrics_expose_burrow_group_status_as_its_number(client, cluster_dir):
    families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
    got = {s.labels["group"]: s.value for s in families["kstream_group_status"].samples}
    expected = {s.group: float(s.status.severity) for s in groups_summary(cluster_dir)}
    assert got == expected and set(got) == {"g", "h"}
    assert all(1 <= value <= 6 for value in got.values())


def test_overview_counts_isr_shrinks_the_sampler_saw(clusters):
    app = create_app(clusters)
    with TestClient(app) as client:
        assert "has not finished its first round" in client.get("/c/main").text
        tracker = app.app.state.console.samplers["main"].isr_shrinks
        tracker.observe(1000, {("t", 0): 1, ("t", 1): 1})
        now_ms = time.time() * 1000
        tracker.observe(int(now_ms) - 5000, {("t", 0): 0, ("t", 1): 1})
        tracker.observe(int(now_ms) - 4000, {("t", 0): 1, ("t", 1): 1})
        tracker.observe(int(now_ms) - 3000, {("t", 0): 0, ("t", 1): 0})
        page = client.get("/c/main").text
    assert "3 ISR shrink(s) since" in page
    assert '<a href="/c/main/topics/t">t</a></td><td class="n">0</td><td class="n">2</td>' in page
