"""The message browser looks keys up on a compacted topic's page (a kstream.Table per request)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient

from helpers import file_tree
from kstream import Producer
from kstream.admin import Admin, NewTopic
from kstream.client.partitioner import partition_for_key
from kstream.tools.web.app import create_app
from kstream.tools.web.clusters import ClusterRef, check_clusters

COMPACT = {"cleanup.policy": "compact"}


@pytest.fixture
def lookup_cluster(tmp_path):
    """users (compacted, 3 partitions): alice twice, bob then deleted, carol in an aborted
    transaction; profiles (compacted, typed); log (not compacted)."""
    path = str(tmp_path / "main")
    with Admin({"cluster": path}) as admin:
        for new in (NewTopic("users", 3, 1, config=COMPACT), NewTopic("log", 1, 1),
                    NewTopic("profiles", 1, 1, config=COMPACT,
                             schema=pa.schema([("id", pa.int64()), ("name", pa.string())]))):
            admin.create_topics([new])[new.topic].result()
    with Producer({"cluster": path, "linger.ms": 0}) as producer:
        producer.produce("users", b'{"v": 1}', key=b"alice")
        producer.produce("users", b'{"v": 2}', key=b"alice")
        producer.produce("users", b"bob-1", key=b"bob")
        producer.produce("users", None, key=b"bob")
        producer.produce("profiles", {"id": 7, "name": "Ann"}, key=b"ann")
        producer.produce("log", b"x", key=b"alice")
    with Producer({"cluster": path, "transactional.id": "lookup-abort"}) as aborted:
        aborted.init_transactions()
        aborted.begin_transaction()
        aborted.produce("users", b"never", key=b"carol")
        aborted.abort_transaction()
    return path


@pytest.fixture
def lookup_client(lookup_cluster):
    with TestClient(create_app(check_clusters([ClusterRef("main", lookup_cluster)]), read_only=True)) as client:
        yield client


def test_a_compacted_topic_page_has_a_key_field_that_answers_the_latest_value(lookup_client):
    page = lookup_client.get("/c/main/topics/users/messages").text
    assert 'id="key-lookup"' in page and 'name="key"' in page
    page = lookup_client.get("/c/main/topics/users/messages", params={"key": "alice"}).text
    result = page.split('id="key-result"')[1].split("</table>")[0].replace("&#34;", '"')
    assert '{"v": 2}' in result and '{"v": 1}' not in result and "alice" in result
    assert f'<td class="n">{partition_for_key(b"alice", 3)}</td><td class="n">1</td>' in result  # partition, offset


@pytest.mark.parametrize("key", ["bob", "carol", "nobody"], ids=["deleted", "aborted", "never written"])
def test_a_key_without_a_value_says_so(lookup_client, key):
    page = lookup_client.get("/c/main/topics/users/messages", params={"key": key}).text
    result = page.split('id="key-result"')[1].split("</table>")[0]
    assert f"Key {key} has no value in partition {partition_for_key(key.encode(), 3)}" in result
    assert "never" not in result.replace("never written", "")  # the aborted value is not shown


def test_a_typed_topic_answers_its_columns_and_decoding_applies(lookup_client):
    page = lookup_client.get("/c/main/topics/profiles/messages", params={"key": "ann"}).text.replace("&#34;", '"')
    assert '"name": "Ann"' in page.split('id="key-result"')[1]
    hexed = lookup_client.get("/c/main/topics/users/messages", params={"key": "bob", "decoding": "hex"})
    assert hexed.status_code == 200


def test_a_topic_that_is_not_compacted_has_no_key_field_and_refuses_a_key(lookup_client):
    assert 'id="key-lookup"' not in lookup_client.get("/c/main/topics/log/messages").text
    refused = lookup_client.get("/c/main/topics/log/messages", params={"key": "alice"})
    assert refused.status_code == 400 and "a Table reads compacted topics only" in refused.text


def test_a_lookup_writes_nothing(lookup_cluster, lookup_client):
    before = file_tree(lookup_cluster)
    for key in ("alice", "bob", "carol"):
        assert lookup_client.get("/c/main/topics/users/messages", params={"key": key}).status_code == 200
    assert file_tree(lookup_cluster) == before
