"""Each form does what the CLI command does, with the CLI's errors as boxes (400/404/409)."""

from __future__ import annotations

import json

from web_helpers import ORIGIN

from kstream import ConsumerGroups
from kstream.groups import MemberSpec
from kstream.log.cluster.cluster import Cluster


def post(client, path, data):
    return client.post(path, data=data, headers=ORIGIN, follow_redirects=False)


def topic(cluster_dir, name):
    cluster = Cluster.open(cluster_dir)
    try:
        return cluster.topic(name)
    finally:
        cluster.close()


def committed(cluster_dir, group):
    service = ConsumerGroups(Cluster.open(cluster_dir))
    try:
        return {key: row.offset for key, row in service.committed(group, require_stable=False).items()}
    finally:
        service.close()
        service.cluster.close()


def test_create_topic(client, cluster_dir):
    response = post(client, "/c/main/topics", {"name": "new", "partitions": "3", "configs": "retention.ms=1000",
                                                "schema": "id:int64,name:string"})
    assert response.status_code == 303, response.text
    assert response.headers["location"].startswith("/c/main/topics/new?done=Created")
    info = topic(cluster_dir, "new")
    assert info.num_partitions == 3 and info.config["retention.ms"] == "1000" and info.schemas


def test_create_topic_errors_are_the_clis(client, cluster_dir):
    from click.testing import CliRunner

    from kstream.tools.cli.main import cli

    cli_says = CliRunner().invoke(cli, ["--cluster", cluster_dir, "topics", "create", "bad/name"])
    bad = post(client, "/c/main/topics", {"name": "bad/name"})
    assert bad.status_code == 400 and 'class="box error"' in bad.text
    assert str(cli_says.exception) in bad.text.replace("&#39;", "'")
    exists = post(client, "/c/main/topics", {"name": "t"})
    assert exists.status_code == 409
    assert post(client, "/c/main/topics", {"name": "x", "configs": "novalue"}).status_code == 400
    assert post(client, "/c/main/topics", {"name": "x", "partitions": "0"}).status_code == 400
    assert "x" not in Cluster.open(cluster_dir).list_topics()


def test_delete_topic_needs_its_name(client, cluster_dir):
    refused = post(client, "/c/main/topics/t/delete", {"confirm": "nope"})
    assert refused.status_code == 400 and topic(cluster_dir, "t")
    done = post(client, "/c/main/topics/t/delete", {"confirm": "t"})
    assert done.status_code == 303
    assert "t" not in Cluster.open(cluster_dir).list_topics()
    assert post(client, "/c/main/topics/t/delete", {"confirm": "t"}).status_code == 404


def test_add_partitions_and_alter_config(client, cluster_dir):
    assert post(client, "/c/main/topics/t/partitions", {"partitions": "4"}).status_code == 303
    assert topic(cluster_dir, "t").num_partitions == 4
    assert post(client, "/c/main/topics/t/partitions", {"partitions": "2"}).status_code == 400  # no shrinking
    altered = post(client, "/c/main/topics/t/config", {"configs": "retention.ms=5000\nsegment.ms=60000"})
    assert altered.status_code == 303
    assert topic(cluster_dir, "t").config["retention.ms"] == "5000"
    assert post(client, "/c/main/topics/t/config", {"deletes": "retention.ms"}).status_code == 303
    assert "retention.ms" not in topic(cluster_dir, "t").config
    assert post(client, "/c/main/topics/t/config", {"configs": "no.such.config=1"}).status_code == 400


def test_evolve_schema(client, cluster_dir):
    assert post(client, "/c/main/topics/typed/schema", {"add_columns": "note:string"}).status_code == 303
    assert len(topic(cluster_dir, "typed").schemas) == 2
    bytes_topic = post(client, "/c/main/topics/t/schema", {"add_columns": "note:string"})
    assert bytes_topic.status_code == 400 and "bytes topic" in bytes_topic.text
    assert post(client, "/c/main/topics/typed/schema", {"add_columns": "x:nosuchtype"}).status_code == 400


def test_elect_and_reassign_generate_execute_verify(client, cluster_dir):
    assert post(client, "/c/main/elect", {}).status_code == 303
    generated = client.get("/c/main/reassign", params={"topics": ["t"], "log_dirs": [1]})
    assert generated.status_code == 200 and "Proposed assignment" in generated.text
    plan = json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]})
    executed = post(client, "/c/main/reassign/execute", {"plan": plan})
    assert executed.status_code == 200 and "Reassignment done" in executed.text
    verified = client.get("/c/main/reassign/verify", params={"plan": plan})
    assert "completed" in verified.text
    wrong = json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [7]}]})
    assert post(client, "/c/main/reassign/execute", {"plan": wrong}).status_code == 400
    assert post(client, "/c/main/reassign/execute", {"plan": "{not json"}).status_code == 400
    assert client.get("/c/main/reassign", params={"topics": ["t"], "log_dirs": [9]}).status_code == 400


def test_reset_preview_changes_nothing_then_execute(client, cluster_dir):
    preview = client.get("/c/main/groups/g/reset", params={"method": "to-earliest", "all_topics": "true"})
    assert preview.status_code == 200 and "Dry run" in preview.text
    assert committed(cluster_dir, "g") == {("t", 0): 2, ("t", 1): 5}
    done = post(client, "/c/main/groups/g/reset", {"method": "to-earliest", "all_topics": "true"})
    assert done.status_code == 303, done.text
    assert committed(cluster_dir, "g") == {("t", 0): 0, ("t", 1): 0}
    shifted = post(client, "/c/main/groups/g/reset", {"method": "shift-by", "value": "2", "topics": "t:1"})
    assert shifted.status_code == 303
    assert committed(cluster_dir, "g") == {("t", 0): 0, ("t", 1): 2}
    assert post(client, "/c/main/groups/g/reset", {"method": "to-offset"}).status_code == 400
    assert client.get("/c/main/groups/g/reset", params={"method": "by-duration", "value": "junk",
                                                        "all_topics": "true"}).status_code == 400


def test_reset_refused_while_members_are_active_unless_forced(client, cluster_dir):
    service = ConsumerGroups(Cluster.open(cluster_dir))
    service.coordinator.join("g", MemberSpec("live", ("t",)))
    try:
        refused = post(client, "/c/main/groups/g/reset", {"method": "to-latest", "all_topics": "true"})
        assert refused.status_code == 409 and "active member" in refused.text
        assert committed(cluster_dir, "g") == {("t", 0): 2, ("t", 1): 5}
        forced = post(client, "/c/main/groups/g/reset", {"method": "to-latest", "all_topics": "true",
                                                         "force": "true"})
        assert forced.status_code == 303
        assert committed(cluster_dir, "g") == {("t", 0): 5, ("t", 1): 5}
    finally:
        service.close()
        service.cluster.close()
