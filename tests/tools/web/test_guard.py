"""The write guard: read-only refuses every write route, read-write refuses cross-origin
writes, and no page of a read-only console changes a file of the cluster."""

from __future__ import annotations

import pytest
from test_pages import PAGES
from web_helpers import ORIGIN, tree

from kstream.tools.web.app import routers
from kstream.tools.web.guard import CROSS_ORIGIN_TEXT, READ_ONLY_TEXT, refusal


def write_routes(client):
    """Every (method, path) of the app that is not a GET, with path parameters filled in."""
    found = []
    for route in (r for router in routers() for r in router.routes):
        for method in sorted(getattr(route, "methods", None) or ()):
            if method not in ("GET", "HEAD"):
                found.append((method, route.path.format(cluster="main", topic="t", group="g")))
    return found


def test_there_are_write_routes(client):
    paths = {path for _, path in write_routes(client)}
    assert {"/c/main/topics", "/c/main/topics/t/delete", "/c/main/topics/t/partitions", "/c/main/topics/t/config",
            "/c/main/topics/t/schema", "/c/main/elect", "/c/main/reassign/execute",
            "/c/main/groups/g/reset"} <= paths


def test_read_only_refuses_every_write_route_even_forged(read_only_client, cluster_dir):
    before = tree(cluster_dir)
    routes = write_routes(read_only_client)
    for method, path in [*routes, ("POST", "/c/main/nosuch"), ("PUT", "/c/main/topics"), ("DELETE", "/")]:
        for headers in (ORIGIN, {}, {"Origin": "http://evil.example"}):
            response = read_only_client.request(method, path, headers=headers,
                                                data={"name": "x", "confirm": "t", "partitions": "9",
                                                      "method": "to-earliest", "all_topics": "true"})
            assert response.status_code == 403, (method, path)
            assert response.text == READ_ONLY_TEXT
    assert tree(cluster_dir) == before


def test_read_only_pages_hide_the_forms(read_only_client):
    assert "Create a topic" not in read_only_client.get("/c/main/topics").text
    assert "Delete the topic" not in read_only_client.get("/c/main/topics/t").text
    assert "read-only" in read_only_client.get("/").text


@pytest.mark.parametrize("headers", [{}, {"Origin": "http://evil.example"}, {"Origin": "null"},
                                     {"Referer": "http://evil.example/c/main/topics"},
                                     {"Origin": "https://testserver"},
                                     {"Origin": "http://testserver.evil.example"}])
def test_cross_origin_writes_are_refused(client, cluster_dir, headers):
    response = client.post("/c/main/topics", data={"name": "x"}, headers=headers, follow_redirects=False)
    assert response.status_code == 403 and response.text == CROSS_ORIGIN_TEXT
    assert "x" not in client.get("/c/main/topics").text.split('href="/c/main/topics/')[1:]


def test_same_origin_referer_is_enough(client):
    response = client.post("/c/main/topics", data={"name": "x"}, follow_redirects=False,
                           headers={"Referer": "http://testserver/c/main/topics"})
    assert response.status_code == 303


def test_refusal_rule():
    def scope(method, **headers):
        return {"type": "http", "method": method, "scheme": "http",
                "headers": [(k.lower().encode(), v.encode()) for k, v in {"host": "h:8080", **headers}.items()]}

    assert refusal(scope("GET"), read_only=True) is None
    assert refusal(scope("POST", Origin="http://h:8080"), read_only=True) == READ_ONLY_TEXT
    assert refusal(scope("POST", Origin="http://h:8080"), read_only=False) is None
    assert refusal(scope("POST", Origin="http://h:8081"), read_only=False) == CROSS_ORIGIN_TEXT
    assert refusal(scope("POST", Referer="http://h:8080/x"), read_only=False) is None
    assert refusal(scope("POST", Referer="http://h:8080.evil/x"), read_only=False) == CROSS_ORIGIN_TEXT
    assert refusal(scope("PATCH"), read_only=False) == CROSS_ORIGIN_TEXT


def test_no_page_changes_a_read_only_cluster(read_only_client, cluster_dir):
    read_only_client.get("/c/main/topics/t")  # the first open may write derived files (docs/CLI.md)
    before = tree(cluster_dir)
    for path in [*PAGES, "/c/main/reassign?topics=t&log_dirs=1",
                 "/c/main/groups/g/reset?method=to-earliest&all_topics=true",
                 "/c/main/topics/tx/messages?decoding=hex", "/metrics",
                 "/c/main/api/series?name=lag&group=g&topic=t&partition=0"]:
        assert read_only_client.get(path).status_code == 200, path
    assert tree(cluster_dir) == before


def test_a_loopback_console_refuses_other_host_names(clusters):
    from fastapi.testclient import TestClient

    from kstream.tools.web.app import create_app

    app = create_app(clusters, allowed_hosts=["127.0.0.1", "localhost"])
    with TestClient(app, base_url="http://127.0.0.1:8080") as local:
        assert local.get("/healthz").status_code == 200
    with TestClient(app, base_url="http://rebound.example:8080") as rebound:
        assert rebound.get("/healthz").status_code == 400
        assert rebound.post("/c/main/topics", data={"name": "x"},
                            headers={"Origin": "http://rebound.example:8080"}).status_code == 400
