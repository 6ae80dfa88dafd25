"""/metrics, the chart JSON, and the SSE routes."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from kstream.tools.monitor.metrics_topic import Sample, write_samples


def test_metrics_parse_as_prometheus_text(client):
    response = client.get("/metrics")
    assert response.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    leo = families["kstream_log_end_offset"]
    by_partition = {(s.labels["topic"], s.labels["partition"]): s.value for s in leo.samples}
    assert by_partition[("t", "0")] == 5 and by_partition[("t", "1")] == 5
    assert all(s.labels["cluster"] == "main" for s in leo.samples)
    assert any(s.labels.get("group") == "g" for s in families["kstream_lag"].samples)


def test_series_json(client, cluster_dir):
    write_samples(cluster_dir, [Sample(1000 + i, "group", "lag", float(i), topic="t", partition=0, group="g")
                                for i in range(5)])
    response = client.get("/c/main/api/series", params={"name": "lag", "group": "g", "topic": "t",
                                                        "partition": 0, "since_ms": 0})
    assert response.status_code == 200
    assert response.json()["points"] == [[1000 + i, float(i)] for i in range(5)]
    assert client.get("/c/main/api/series", params={"name": "lag", "limit": 0}).status_code == 422


def read_event(response):
    """The first SSE event of a streaming response: (event name, data)."""
    name, data = None, []
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data.append(line[len("data: "):])
        elif line == "" and name is not None:
            return name, "\n".join(data)
    raise AssertionError("the stream ended without an event")


def test_tail_yields_a_record_event(client):
    with client.stream("GET", "/c/main/topics/t/tail", params={"partition": 1, "offset": 3, "max_events": 1}) \
            as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        name, data = read_event(response)
    assert name == "record" and "<tr>" in data and ">3<" in data


def test_group_live_yields_the_lag_table(client):
    with client.stream("GET", "/c/main/groups/g/live", params={"max_events": 1}) as response:
        name, data = read_event(response)
    assert name == "lag" and "<table>" in data and "status-" in data


def test_tail_of_a_missing_topic_is_404(client):
    assert client.get("/c/main/topics/nosuch/tail").status_code == 404


def test_topics_list_shows_the_samplers_rates(clusters, cluster_dir):
    from fastapi.testclient import TestClient

    from helpers import produce_range
    from kstream import ConsumerGroups
    from kstream.log.cluster.cluster import Cluster
    from kstream.tools.web.app import create_app
    from kstream.tools.web.figures import make_samplers

    samplers = make_samplers(clusters, 10.0, write=False)
    samplers["main"].sample(now_ms=1_000_000)
    produce_range(cluster_dir, "t", 0, 8, partitions=2)  # +8 records on t
    service = ConsumerGroups(Cluster.open(cluster_dir))
    service.commit("g", {("t", 0): 4, ("t", 1): 7})  # g: +4 records consumed
    service.close()
    service.cluster.close()
    samplers["main"].sample(now_ms=1_004_000)
    with TestClient(create_app(clusters, samplers=samplers)) as client:
        row = client.get("/c/main/topics").text.split('href="/c/main/topics/t"')[1].split("</tr>")[0]
    assert '<td class="n">2.0</td>' in row and '<td class="n">1.0</td>' in row  # 8 in / 4 s, 4 out / 4 s
