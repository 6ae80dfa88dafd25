"""The console's topic page after a power cut took a partition's published HW (issue 27): its
figures are the engine's bounds(), shown on the page."""

from __future__ import annotations

from kstream.log.cluster.cluster import Cluster
from kstream.tools.web.clusters import ClusterRef, check_clusters
from kstream.tools.web.topic_view import topic_view


def test_the_topic_page_shows_the_engine_s_bounds(lost_hw):
    path, expected = lost_hw
    cluster = Cluster.open(path)
    try:
        [row] = topic_view(cluster, "t").partitions
    finally:
        cluster.close()
    assert (row.details.log_start_offset, row.details.log_end_offset, row.details.high_watermark,
            row.last_stable_offset) == (expected.log_start_offset, expected.log_end_offset,
                                        expected.high_watermark, expected.last_stable_offset)
    assert [h.producer_id for h in row.holders] == [expected.open_transaction]


def test_the_topic_page_renders_them(lost_hw):
    from fastapi.testclient import TestClient

    from kstream.tools.web.app import create_app

    path, expected = lost_hw
    with TestClient(create_app(check_clusters([ClusterRef("main", path)]), read_only=True)) as client:
        page = client.get("/c/main/topics/t")
    assert page.status_code == 200
    assert f">{expected.high_watermark}<" in page.text and f">{expected.last_stable_offset}<" in page.text
