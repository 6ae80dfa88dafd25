"""A small cluster for the console's tests: topics, a typed topic, an open transaction,
groups with commits; and TestClients of the console over it (read-write and read-only)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from kstream import ConsumerGroups, Producer
from kstream.admin import Admin, NewTopic
from kstream.log.cluster.cluster import Cluster
from kstream.tools.web.app import create_app
from kstream.tools.web.clusters import ClusterRef, check_clusters


@pytest.fixture
def cluster_dir(tmp_path):
    """t (2 partitions, 10 records), typed (id:int64, name:string, 3 rows), tx (1 partition,
    an open transaction holding its LSO), groups g (committed t) and h (committed t-1)."""
    import pyarrow as pa

    path = str(tmp_path / "main")
    with Admin({"cluster": path}) as admin:
        for new in (NewTopic("t", 2, 1), NewTopic("tx", 1, 1),
                    NewTopic("typed", 1, 1, schema=pa.schema([("id", pa.int64()), ("name", pa.string())]))):
            admin.create_topics([new])[new.topic].result()
    with Producer({"cluster": path, "linger.ms": 0}) as producer:
        for i in range(10):
            producer.produce("t", f'{{"n": {i}}}'.encode() if i % 2 else f"v{i}".encode(), key=f"k{i}".encode(),
                             partition=i % 2, headers=[("h", b"x")])
        for i in range(3):
            producer.produce("typed", {"id": i, "name": f"n{i}"})
        producer.produce("tx", b"committed-before")
    transactional = Producer({"cluster": path, "transactional.id": "web-tx", "linger.ms": 0})
    transactional.init_transactions()
    transactional.begin_transaction()
    transactional.produce("tx", b"open", partition=0)
    transactional.flush()
    service = ConsumerGroups(Cluster.open(path))
    service.commit("g", {("t", 0): 2, ("t", 1): 5})
    service.commit("h", {("t", 1): 1})
    service.close()
    service.cluster.close()
    yield path
    transactional.abort_transaction()
    transactional.close()


@pytest.fixture
def clusters(cluster_dir):
    return check_clusters([ClusterRef("main", cluster_dir)])


@pytest.fixture
def client(clusters):
    with TestClient(create_app(clusters)) as test_client:
        yield test_client


@pytest.fixture
def read_only_client(clusters):
    with TestClient(create_app(clusters, read_only=True)) as test_client:
        yield test_client


