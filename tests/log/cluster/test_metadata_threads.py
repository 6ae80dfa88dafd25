"""The metadata store used from several threads and after fork: each thread of each process has
its own SQLite connection, transactions do not mix, close() closes them all."""

from __future__ import annotations

import os
import threading

import pytest

from kstream.log.cluster.cluster import Cluster
from kstream.log.cluster.metadata import Metadata
from kstream.log.storage import format as fmt


@pytest.fixture
def metadata(make_topic, cluster_path):
    make_topic("t")
    store = Metadata(os.path.join(cluster_path, fmt.METADATA_DB))
    yield store
    store.close()


def _in_threads(count, target):
    errors: list[BaseException] = []
    results: list = [None] * count

    def run(i):
        try:
            results[i] = target()
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    if errors:
        raise errors[0]
    return results


def test_threads_get_their_own_connections_and_transactions(metadata):
    main = metadata.connection
    counters = _in_threads(4, lambda: [metadata.next_counter("c") for _ in range(50)])
    values = sorted(v for chunk in counters for v in chunk)
    assert values == list(range(1, 201))  # no transaction mixed with another, none lost
    assert metadata.connection is main
    assert metadata.topic("t").num_partitions == 1


def test_data_version_differs_between_threads(metadata):
    """A cache shared by threads compares versions from different connections: they never
    look equal, so it re-reads rather than missing a change."""
    mine = metadata.data_version()
    theirs = _in_threads(1, metadata.data_version)[0]
    assert mine != theirs
    assert metadata.data_version() == mine
    metadata.next_counter("c")
    assert metadata.data_version() != mine


def test_close_closes_every_threads_connection(metadata):
    opened = _in_threads(2, lambda: metadata.connection)
    connections = [metadata.connection, *opened]
    metadata.close()
    for connection in connections:
        with pytest.raises(Exception, match="closed"):
            connection.execute("SELECT 1")
    assert metadata.topic("t").name == "t"  # reopened on use, in this thread and in others
    assert _in_threads(1, lambda: metadata.topic("t").name) == ["t"]


def test_finished_threads_connections_are_closed_when_another_opens(metadata):
    done = _in_threads(1, lambda: metadata.connection)[0]
    _in_threads(1, lambda: metadata.connection)
    with pytest.raises(Exception, match="closed"):
        done.execute("SELECT 1")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_opens_its_own_connection(cluster_path, make_topic):
    make_topic("t")
    cluster = Cluster.open(cluster_path)
    parent = cluster.metadata.connection
    assert cluster.topic("t").name == "t"
    pid = os.fork()
    if pid == 0:  # the child: exit status says what went wrong
        status = 0
        try:
            if cluster.metadata.connection is parent:
                status = 2
            elif cluster.topic("t").name != "t" or cluster.metadata.next_counter("c") < 1:
                status = 3
            elif _in_threads(1, lambda: cluster.topic("t").name) != ["t"]:
                status = 4
        except BaseException:
            status = 1
        os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert cluster.metadata.connection is parent  # the parent's is untouched
    assert cluster.topic("t").name == "t"
    cluster.close()
