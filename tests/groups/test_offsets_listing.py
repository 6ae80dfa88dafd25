"""The offsets table lists a version's files once for every group: the same files as delta-rs's
per-group pruned listing, whatever the group name escapes to, and a new version is listed anew."""

import pytest
from deltalake import DeltaTable

from kstream.client.producer import Producer
from kstream.groups import ConsumerGroups
from kstream.log.cluster.cluster import Cluster

NAMES = ["plain", "a b", "ü/x", "100%", "a%20b", "q=1&r", "dots.and-dashes_~"]


@pytest.fixture
def service(cluster_path, make_topic):
    make_topic("t", 1)
    with Producer({"cluster": cluster_path}) as producer:
        for _ in range(len(NAMES)):
            producer.produce("t", b"x")
    opened = Cluster.open(cluster_path)
    groups = ConsumerGroups(opened)
    yield groups
    groups.close()
    opened.close()


def test_listing_matches_delta_rs_pruning_for_escaped_names(service, cluster_path):
    for i, name in enumerate(NAMES):
        service.commit(name, {("t", 0): i})
    table = DeltaTable(f"{cluster_path}/__consumer_offsets")
    files = service.table._group_files(table)
    for i, name in enumerate(NAMES):
        pruned = [uri.removeprefix("file://") for uri in table.file_uris(file_pruning_predicate=[("group", "=", name)])]
        assert files[name] == pruned
        assert service.table.read(name)[("t", 0)].offset == i


def test_a_new_version_is_listed_again(service):
    service.commit("plain", {("t", 0): 1})
    assert service.table.read("plain")[("t", 0)].offset == 1
    listed_version = service.table._files[0]
    service.commit("plain", {("t", 0): 3})
    assert service.table.read("plain")[("t", 0)].offset == 3
    assert service.table._files[0] == listed_version + 1
    assert service.table.read("plain", version=listed_version)[("t", 0)].offset == 1  # time travel
