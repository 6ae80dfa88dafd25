"""Shared fixtures: a fresh cluster per test under tmp_path."""

from __future__ import annotations

import os
import signal
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from kstream.admin import Admin, NewTopic
from kstream.tools.perf.kafka_peer import KafkaPeer


def pytest_configure(config):
    """Tests stop example programs and jobs with SIGINT, as a user's Ctrl-C does. A shell that
    starts `make test` in the background without job control ignores SIGINT, and a child
    inherits an ignored signal across exec, so it would never see it and such a test would hang.
    A handler instead is reset to the default in each child, whose Python then raises
    KeyboardInterrupt as it should."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


FD_LEAK_LIMIT = 16  # files a test may leave open (caches a first use fills); its logs are closed


def _open_files() -> dict[str, str]:
    """This process's descriptors of files (not sockets, pipes or event fds): fd -> path."""
    files = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, closed by now
        if target.startswith("/"):
            files[fd] = target
    return files


@pytest.fixture(autouse=True)
def no_leaked_files():
    """Close the replica logs a test opened (tests/helpers.open_log), then fail a test that left
    more than FD_LEAK_LIMIT other files open: a test process holding over 1,024 descriptors breaks
    py4j's select() loop (docs/SPARK.md), and a leak in kstream itself shows here first."""
    from helpers import OPEN_LOGS

    before = _open_files()
    yield
    for log in list(OPEN_LOGS):
        log.close()
    if len(_open_files()) - len(before) <= FD_LEAK_LIMIT:
        return
    import gc

    gc.collect()  # clients dropped without close() are freed by their finalizers
    leaked = sorted(path for fd, path in _open_files().items() if before.get(fd) != path)
    if len(leaked) > FD_LEAK_LIMIT:
        pytest.fail(f"the test left {len(leaked)} files open (limit {FD_LEAK_LIMIT}): close what it "
                    f"opens; first ones: {leaked[:8]}")


@pytest.fixture(scope="session")
def kafka_broker():
    """The bootstrap address of the session's one Apache Kafka broker (docs/KAFKA_PEER.md), started
    on first use and stopped when the session ends; skipped with one line without Java, the jars
    (`make kafka`) or confluent-kafka. Use a topic of your own (tests/kafka's ``topic_name``)."""
    from tests.kafka.kafka_support import skip_without_peer

    skip_without_peer()
    with KafkaPeer(1) as peer:
        yield peer.bootstrap


@pytest.fixture
def cluster_path(tmp_path):
    return str(tmp_path / "cluster")


@pytest.fixture
def admin(cluster_path):
    with Admin({"cluster": cluster_path}) as client:
        yield client


@pytest.fixture
def make_topic(admin):
    def make(name="t", partitions=1, config=None, schema=None):
        admin.create_topics([NewTopic(name, partitions, 1, config=config or {}, schema=schema)])[name].result()
        return name

    return make


@pytest.fixture
def journal(tmp_path, monkeypatch):
    """The power-cut journal (kstream.log.storage.faults) for this test: what each fsync made durable."""
    from kstream.log.storage import faults

    path = str(tmp_path / "journal")
    monkeypatch.setattr(faults, "JOURNAL", None)
    faults.start_journal(path)
    yield path
    monkeypatch.setattr(faults, "JOURNAL", None)


@pytest.fixture(params=["missing", "zeroed"])
def lost_hw(request, tmp_path):
    """A cluster (two log dirs) whose topic "t" (one partition, two replicas) holds 7 records and
    an open transaction's record (HW 8, LSO 7) and whose published HW a power cut took (the
    lock file gone, or its HW zeroed). Yields (cluster path, the bounds before the loss): every
    reader must show those figures. The transaction stays open until the test ends."""
    from helpers import lose_high_watermark, open_transaction, produce_range
    from kstream.log.cluster.cluster import Cluster
    from kstream.log.partition_bounds import bounds

    path = str(tmp_path / "lost-hw")
    with Admin({"cluster": path, "log.dirs": "d0,d1"}) as admin:
        admin.create_topics([NewTopic("t", 1, 2)])["t"].result()
    produce_range(path, "t", 0, 7)
    producer = open_transaction(path, "holder", "t", b"open")
    try:
        cluster = Cluster.open(path)
        try:
            expected = bounds(cluster, "t", 0)
        finally:
            cluster.close()
        assert (expected.log_end_offset, expected.high_watermark, expected.last_stable_offset) == (8, 8, 7)
        lose_high_watermark(path, "t", 0, request.param)
        yield path, expected
    finally:
        producer.abort_transaction()
        producer.close()
