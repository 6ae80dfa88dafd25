"""Enforcing ``transaction.timeout.ms``: whoever next touches a transaction's partitions ends it.

Each transaction has its own deadline: its begin time plus its producer's
``transaction.timeout.ms``, recorded with it (a Spark task's write, or a
transaction an older kstream began: the cluster's,
:attr:`~kstream.log.transactions.store.TransactionStore.default_timeout_ms`).

DESIGN §9: a timeout is enforced by whoever next touches the partition, never
only by the party that might be dead. :func:`expire` runs from writers only:
``init_transactions()`` and ``begin_transaction()``, and when a Spark sink task
starts. Readers never write: they apply what it would write in their own view
(:mod:`kstream.log.transactions.view`). It

1. fences every Ongoing transaction past its deadline (epoch bumped, decided
   abort), so its producer's next write, commit or abort fails;
2. fences every Spark task write past its deadline that no commit decision
   names (its ``sink_producers`` row goes), and rolls forward commit decisions
   whose driver died;
3. finishes every decided transaction past its deadline (markers, Complete);
4. aborts orphan rows: open partitions whose writer was fenced or aborted.

Every step is idempotent and safe to run in several processes at once (markers
are guarded under the partition lock, :mod:`kstream.log.transactions.writer`).
"""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

from kstream.errors import KStreamError
from kstream.log.transactions.sink import SinkStore
from kstream.log.transactions.store import TransactionStore
from kstream.log.transactions.writer import abort_orphans, finish

if TYPE_CHECKING:
    from kstream.log.cluster.cluster import Cluster

log = logging.getLogger(__name__)


def expire(cluster: Cluster, store: TransactionStore | None = None) -> int:
    """Run the expiry once; returns how many transactions and orphan rows it ended."""
    store = store or TransactionStore.for_cluster(cluster)
    store.fence_expired()
    ended = 0
    sinks = SinkStore(cluster, store)
    for sink_id in sinks.fence_expired():
        sinks.recover(sink_id)
    for decided in store.decided_expired():
        finish(cluster, store, decided)
        ended += 1
    ended += abort_orphans(cluster, store)
    return ended


def try_expire(store: TransactionStore) -> bool:
    """Run the expiry for a writer that only passes by (another producer, a sink task): a marker it
    cannot write (say, below min.insync.replicas) is logged, not raised, since its own work
    does not depend on it. False when the expiry failed."""
    if store.cluster is None:
        raise KStreamError("this transaction store has no cluster; build it with TransactionStore.for_cluster")
    try:
        expire(store.cluster, store)
        return True
    except (KStreamError, sqlite3.Error, OSError) as err:
        log.warning("could not abort the transactions past transaction.timeout.ms (%s); the next "
                    "writer tries again", err)
        return False

