"""Every page answers 200 on a small cluster and shows what it is for; errors are boxes."""

from __future__ import annotations

import pytest

PAGES = ["/", "/c/main", "/c/main/topics", "/c/main/topics/t", "/c/main/topics/typed", "/c/main/topics/tx",
         "/c/main/reassign", "/c/main/groups", "/c/main/groups/g", "/c/main/groups/h",
         "/c/main/topics/t/messages", "/c/main/topics/typed/messages", "/c/main/mirrors", "/c/main/api/mirrors",
         "/healthz"]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_answers(client, path):
    response = client.get(path)
    assert response.status_code == 200, response.text


def test_the_icon_is_served_where_the_pages_and_the_browser_ask_for_it(client):
    page = client.get("/c/main/topics").text
    assert '<link rel="icon" href="/static/favicon.svg"' in page
    for path in ("/static/favicon.svg", "/favicon.ico"):  # (a browser asks /favicon.ico without a link)
        response = client.get(path)
        assert response.status_code == 200 and response.headers["content-type"].startswith("image/svg+xml")
        assert response.content.startswith(b"<svg")


def test_topic_page_shows_partitions_and_the_open_transaction(client):
    page = client.get("/c/main/topics/tx").text
    assert "transactional.id=web-tx" in page  # the holder of the LSO
    t = client.get("/c/main/topics/t").text
    assert "Add partitions" in t and "Evolve the schema" not in t  # a bytes topic has no columns
    typed = client.get("/c/main/topics/typed").text
    assert "Evolve the schema" in typed and "int64" in typed


def test_topics_list(client):
    page = client.get("/c/main/topics").text
    for name in ("t", "tx", "typed"):
        assert f'href="/c/main/topics/{name}"' in page
    assert "Create a topic" in page


def test_group_page_shows_lag_per_partition(client):
    page = client.get("/c/main/groups/g").text
    assert "Offsets and lag" in page and "status-" in page
    groups = client.get("/c/main/groups").text
    assert 'href="/c/main/groups/g"' in groups and 'href="/c/main/groups/h"' in groups


def test_browser_decodes_text_json_and_columns(client):
    page = client.get("/c/main/topics/t/messages", params={"partition": 1, "offset": 0, "count": 2}).text
    assert "{&#34;n&#34;: 1}" in page or '{"n": 1}' in page.replace("&#34;", '"')
    assert "k1" in page and "h=x" in page
    typed = client.get("/c/main/topics/typed/messages").text.replace("&#34;", '"')
    assert '"name": "n2"' in typed
    hexed = client.get("/c/main/topics/t/messages", params={"decoding": "hex", "count": 1}).text
    assert "76 30" in hexed  # b"v0"


def test_browser_from_timestamp_and_bad_requests(client):
    assert client.get("/c/main/topics/t/messages", params={"timestamp": "2000-01-01T00:00:00"}).status_code == 200
    bad = client.get("/c/main/topics/t/messages", params={"count": 100000})
    assert bad.status_code == 400 and "count 100000" in bad.text
    bad_json = client.get("/c/main/topics/t/messages", params={"partition": 0, "decoding": "json"})
    assert "not JSON" in bad_json.text  # shown in its cell, not dropped


def test_missing_things_are_404_boxes(client):
    for path in ("/c/nosuch", "/c/main/topics/nosuch", "/c/main/topics/t/messages?partition=9",
                 "/c/main/groups/nosuch", "/c/main/groups/nosuch/live"):
        response = client.get(path)
        assert response.status_code == 404, path
        assert 'class="box error"' in response.text


def test_theme_cookie_comes_back_server_rendered(client):
    response = client.get("/theme", params={"mode": "dark", "next": "/c/main"}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/c/main"
    assert 'data-theme="dark"' in client.get("/c/main").text
    assert client.get("/theme", params={"next": "//evil.example"}, follow_redirects=False).headers["location"] == "/"


def test_group_page_shows_client_records_lag_beside_committed_lag(client, cluster_dir):
    import time

    from kstream.tools.monitor.metrics_topic import Sample, write_samples

    assert "client records-lag" not in client.get("/c/main/groups/g").text  # no client reports yet
    now_ms = int(time.time() * 1000)
    write_samples(cluster_dir, [Sample(now_ms, "client", "client_consumer_lag", 7.0, topic="t", partition=0,
                                       group="g", labels={"client_id": "c1", "type": "consumer"})])
    page = client.get("/c/main/groups/g").text
    assert "client records-lag" in page and '<td class="n">7</td>' in page


def test_group_page_has_a_lag_chart_fed_by_the_series_route(client):
    page = client.get("/c/main/groups/g").text
    assert 'class="chart"' in page and "/c/main/api/series?name=lag&group=g&topic=t&partition=0|t-0" in page


def test_without_vendored_assets_charts_are_tables(client, cluster_dir):
    import time

    from kstream.tools.monitor.metrics_topic import Sample, write_samples

    now_ms = int(time.time() * 1000)
    write_samples(cluster_dir, [Sample(now_ms - 1000, "group", "lag", 42.0, topic="t", partition=0, group="g")])
    client.app.app.state.console.vendored = False
    page = client.get("/c/main/groups/g").text
    assert "htmx.min.js" not in page and "sse-connect" not in page
    assert '<td class="n">42</td>' in page  # the series as a table


def test_the_metrics_topic_is_listed_as_internal(client, cluster_dir):
    from kstream.tools.monitor.metrics_topic import Sample, write_samples

    assert "internal" not in client.get("/c/main/topics").text
    write_samples(cluster_dir, [Sample(1, "log", "log_end_offset", 1.0, topic="t", partition=0)])
    assert "typed, internal" in client.get("/c/main/topics").text


def test_group_page_lists_active_members(client, cluster_dir):
    from kstream import ConsumerGroups
    from kstream.groups import MemberSpec
    from kstream.log.cluster.cluster import Cluster

    assert "No active members." in client.get("/c/main/groups/g").text
    service = ConsumerGroups(Cluster.open(cluster_dir))
    try:
        member_id = service.coordinator.join("g", MemberSpec("web-client", ("t",)))
        page = client.get("/c/main/groups/g").text
    finally:
        service.close()
        service.cluster.close()
    assert member_id in page and "web-client" in page and "1 member(s)" in page


def test_a_parameter_that_does_not_parse_is_a_400_box(client):
    response = client.get("/c/main/topics/t/messages", params={"partition": "abc"})
    assert response.status_code == 400 and 'class="box error"' in response.text and "partition" in response.text
    form = client.post("/c/main/topics", data={}, headers={"Origin": "http://testserver"})
    assert form.status_code == 400 and "name" in form.text
