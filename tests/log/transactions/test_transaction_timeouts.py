"""Each transaction's own timeout: the producer's transaction.timeout.ms, as in Kafka.

Kafka: ``transaction.timeout.ms`` is a producer setting (librdkafka default 60000), refused at
``init_transactions()`` with INVALID_TRANSACTION_TIMEOUT above the broker's
``transaction.max.timeout.ms`` (900000). kstream records it with each transaction and the
expiry (whoever next touches the partitions) uses it; the cluster's value is the maximum. A
cluster an older kstream created may store ``transaction.timeout.ms``: it still opens, and what
recorded no timeout of its own (a transaction that kstream began) keeps that one.
"""

from __future__ import annotations

import os
import time

import pytest

from helpers import consume_values
from kstream import Admin, ConfigError, FencedError, KafkaError, KafkaException, NewTopic, Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.transactions.store import TransactionStore

SHORT_MS = 1000  # the smallest transaction.timeout.ms librdkafka allows
LONG_MS = 120_000


def new_cluster(tmp_path, **broker) -> str:
    path = str(tmp_path / "c")
    with Admin({"cluster": path, **broker}) as admin:
        admin.create_topics([NewTopic("t", 1)])["t"].result()
    return path


def transactional(path: str, transactional_id: str, timeout_ms: int | None, **more) -> Producer:
    config = {"cluster": path, "transactional.id": transactional_id, "linger.ms": 0, **more}
    if timeout_ms is not None:
        config["transaction.timeout.ms"] = timeout_ms
    return Producer(config)


def open_one(producer: Producer, value: bytes) -> Producer:
    producer.init_transactions()
    producer.begin_transaction()
    producer.produce("t", value, partition=0)
    producer.flush()
    return producer


def sleep_past(ms: float) -> None:
    time.sleep(ms / 1000 + 0.3)


def next_writer(path: str) -> None:
    """A writer passing by (another transactional id's init_transactions) runs the expiry."""
    with transactional(path, "passer-by", None) as writer:
        writer.init_transactions()


def test_short_timeout_is_aborted_by_the_next_writer_long_one_is_not(tmp_path):
    path = new_cluster(tmp_path)
    short = open_one(transactional(path, "short", SHORT_MS), b"short")
    long = open_one(transactional(path, "long", LONG_MS), b"long")
    sleep_past(SHORT_MS)
    next_writer(path)

    store = TransactionStore.for_cluster(Cluster.open(path))
    assert store.get("short").state == "CompleteAbort"  # aborted by the passer-by, markers written
    assert store.get("long").state == "Ongoing"
    with pytest.raises(FencedError, match="fenced") as fenced:
        short.commit_transaction()
    assert fenced.value.args[0].name() == "_FENCED" and fenced.value.args[0].fatal()  # as librdkafka's
    long.commit_transaction()
    assert consume_values(path, "t", 1) == [b"long"]
    short.close()
    long.close()


def test_the_producers_timeout_is_checked_at_its_own_writes(tmp_path):
    """check_writable and the commit decision use the transaction's own timeout too."""
    path = new_cluster(tmp_path)
    short = open_one(transactional(path, "short", SHORT_MS), b"a")
    long = open_one(transactional(path, "long", LONG_MS), b"b")
    sleep_past(SHORT_MS)
    with pytest.raises(FencedError, match=r"passed transaction.timeout.ms=1000 \(its own\)") as fenced:
        short.produce("t", b"late", partition=0)
        short.flush()
    assert fenced.value.args[0].fatal()
    long.produce("t", b"c", partition=0)
    long.flush()
    long.commit_transaction()
    assert consume_values(path, "t", 1) == [b"b", b"c"]


def test_default_is_librdkafkas_60000(tmp_path):
    path = new_cluster(tmp_path)
    producer = open_one(transactional(path, "dflt", None), b"x")
    cluster = Cluster.open(path)
    store = TransactionStore.for_cluster(cluster)
    state = store.get("dflt")
    assert store.timeout_of(state) == 60_000
    assert store.deadline_ms(state) == state.updated_ms + 60_000
    assert producer.config["transaction.timeout.ms"] == "60000"
    producer.abort_transaction()
    producer.close()


def test_above_the_clusters_maximum_is_refused_at_init_transactions(tmp_path):
    path = new_cluster(tmp_path, **{"transaction.max.timeout.ms": 30_000})
    producer = transactional(path, "big", 30_001)  # built: the broker's check comes at init
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions()
    error = raised.value.args[0]
    assert error.code() == KafkaError.INVALID_TRANSACTION_TIMEOUT == 50
    assert error.fatal() and not error.retriable()  # as librdkafka makes it
    assert "transaction.max.timeout.ms=30000" in error.str() and "at most 30000" in error.str()
    for call in (producer.init_transactions, producer.begin_transaction):  # fatal: raised again
        with pytest.raises(KafkaException) as again:
            call()
        assert again.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT
    assert TransactionStore.for_cluster(Cluster.open(path)).metadata.read_rows(
        "SELECT 1 FROM transactions WHERE transactional_id = 'big'") == []  # nothing registered or fenced
    producer.close()
    # The default maximum is Kafka's 900000 (15 min); a producer's default (60000) is under it.
    fresh = new_cluster(tmp_path / "d")
    assert Cluster.open(fresh).config["transaction.max.timeout.ms"] == 900_000
    with pytest.raises(KafkaException, match="transaction.max.timeout.ms=900000"):
        transactional(fresh, "big", 900_001).init_transactions()
    transactional(fresh, "ok", 900_000).init_transactions()


def test_librdkafkas_client_side_rules(tmp_path):
    """Checked at construction, as librdkafka's conf finalize does: 1000..2147483647, and an
    explicit message.timeout.ms (delivery.timeout.ms) at most the transaction timeout."""
    path = new_cluster(tmp_path)
    for bad in (999, 2147483648):
        with pytest.raises(ConfigError) as raised:
            transactional(path, "x", bad)
        assert raised.value.args[0].code() == KafkaError._INVALID_ARG
    for name in ("message.timeout.ms", "delivery.timeout.ms"):
        with pytest.raises(ConfigError, match="`message.timeout.ms` must be set <= `transaction.timeout.ms`"):
            transactional(path, "x", 10_000, **{name: 20_000})
    with pytest.raises(ConfigError, match="must be set <="):
        transactional(path, "x", None, **{"message.timeout.ms": 120_000})  # above the default 60000
    # Not transactional: no rule. Transactional without message.timeout.ms: it defaults to the timeout.
    Producer({"cluster": path, "transaction.timeout.ms": 5000, "message.timeout.ms": 20_000}).close()
    producer = transactional(path, "x", 10_000)
    assert producer.config["delivery.timeout.ms"] == "10000"
    producer.close()
    producer = transactional(path, "x", 10_000, **{"message.timeout.ms": 10_000})
    producer.close()


def test_a_consumer_or_admin_ignores_a_producers_transaction_timeout(tmp_path):
    """Another client kind's option, as librdkafka ignores it; no longer a cluster setting."""
    path = new_cluster(tmp_path)
    with Admin({"cluster": path, "transaction.timeout.ms": 5000}) as admin:
        admin.list_topics()
    assert "transaction.timeout.ms" not in open(os.path.join(path, "cluster.properties")).read()


def make_old_cluster(tmp_path, timeout_ms: int) -> str:
    """A cluster as kstream made it before transaction.timeout.ms became the producer's: the
    value stored in cluster.properties (as the cluster options of then were written)."""
    path = new_cluster(tmp_path)
    properties = os.path.join(path, "cluster.properties")
    with open(properties, "a") as f:
        f.write(f"transaction.timeout.ms={timeout_ms}\n")
    return path


def old_begin(store: TransactionStore, transactional_id: str) -> None:
    """What begin_transaction() wrote before timeouts were recorded (it knows no transaction_timeouts)."""
    with store.metadata.transaction() as tx:
        tx.execute("UPDATE transactions SET state = 'Ongoing', partitions = '[]', updated_ms = ? "
                   "WHERE transactional_id = ?", (int(time.time() * 1000), transactional_id))


def begin_as_an_older_kstream(path: str, transactional_id: str) -> Producer:
    """An open transaction begun by a kstream that recorded no timeout of its own."""
    producer = transactional(path, transactional_id, None)
    producer.init_transactions()
    old_begin(TransactionStore.for_cluster(Cluster.open(path)), transactional_id)
    producer._transactions.open = True
    producer.produce("t", b"old", partition=0)
    producer.flush()
    return producer


def test_an_old_cluster_keeps_its_stored_timeout(tmp_path):
    path = make_old_cluster(tmp_path, SHORT_MS)
    cluster = Cluster.open(path)
    # The maximum stays Kafka's default (a producer's 60000 default still works), and the old
    # value is the timeout of what recorded none.
    assert cluster.config["transaction.max.timeout.ms"] == 900_000
    assert cluster.legacy_transaction_timeout_ms == SHORT_MS
    store = TransactionStore.for_cluster(cluster)
    assert store.default_timeout_ms == SHORT_MS

    old = begin_as_an_older_kstream(path, "old")
    new = open_one(transactional(path, "new", None), b"new")
    assert store.timeout_of(store.get("old")) == SHORT_MS
    assert store.timeout_of(store.get("new")) == 60_000
    sleep_past(SHORT_MS)
    next_writer(path)
    assert store.get("old").state == "CompleteAbort"
    assert store.get("new").state == "Ongoing"
    new.commit_transaction()
    assert consume_values(path, "t", 1) == [b"new"]
    old.close()
    new.close()


def test_an_old_cluster_with_a_long_timeout_raises_the_maximum(tmp_path):
    """A producer that had to ask the cluster's value before (it was refused otherwise) still may."""
    path = make_old_cluster(tmp_path, 3_600_000)
    assert Cluster.open(path).config["transaction.max.timeout.ms"] == 3_600_000
    producer = transactional(path, "hour", 3_600_000)
    producer.init_transactions()
    producer.close()


def test_an_old_timeout_row_does_not_outlive_its_transaction(tmp_path):
    """The recorded timeout belongs to one begin (producer id and start): a transaction an older
    kstream begins later on the same id (rolled back to) has the cluster's, not the stale one."""
    path = make_old_cluster(tmp_path, 5000)
    producer = open_one(transactional(path, "id", LONG_MS), b"a")
    producer.commit_transaction()
    store = TransactionStore.for_cluster(Cluster.open(path))
    time.sleep(0.01)
    old_begin(store, "id")  # an older kstream's begin: the stale row stays
    assert store.metadata.read_rows("SELECT timeout_ms FROM transaction_timeouts") == [(LONG_MS,)]
    assert store.timeout_of(store.get("id")) == 5000
    producer.close()
