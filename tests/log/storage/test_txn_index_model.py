"""Model-based tests of the transaction index.

1. Two writers of one replica (separate lock objects, as two processes) append plain
   frames, transactional data of several producers, commits and aborts (also stray
   markers), flush, reopen, roll segments and cut the log (a follower's truncation).
   After every step the index files hold exactly one entry per transactional frame,
   and a reader's open transactions, LSO and aborted ranges at any high watermark
   equal a plain oracle over the history.
2. Through the client API, the files' view equals the SQLite tables' view of the same
   history (where comparable: the SQLite first offset is the log end when the
   producer joined, the files' is its first frame; a single writer makes them equal).
"""

from __future__ import annotations

import os
import random
import tempfile

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from helpers import encoded, open_log
from kstream import Producer
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import format as fmt
from kstream.log.storage.retention import list_segment_bases
from kstream.log.storage.txn_index_reader import TxnIndexReader
from kstream.log.transactions.store import TransactionStore
from txn_helpers import file_entries, marker, oracle, txn_data

_CONFIG = dict(segment_bytes=1500, index_interval_bytes=300)


class TxnIndexModel(RuleBasedStateMachine):
    @initialize()
    def setup(self):
        self.directory = os.path.join(tempfile.mkdtemp(prefix="ktxn-"), "t-0")
        self.writers = [open_log(self.directory, **_CONFIG), open_log(self.directory, **_CONFIG)]
        self.events: list[tuple[int, int, int]] = []   # (kind, producer id, offset)
        self.boundaries: list[int] = [0]               # frame base offsets, then the log end
        self.reader = TxnIndexReader(self.directory)   # one polling reader across steps
        # Polling readers given the lock's generation (they keep a result while nothing below the
        # HW changed): one looks after every step, one after every third (so a cut and appends up
        # to the same HW can happen between two of its looks).
        self.cached = [TxnIndexReader(self.directory), TxnIndexReader(self.directory)]
        self.looks = 0

    @property
    def end(self) -> int:
        return self.boundaries[-1]

    def _append(self, writer, batch, kind=None, producer_id=None):
        result = self.writers[writer].append(batch)
        assert result.base_offset == self.end
        if kind is not None:
            self.events.append((kind, producer_id, result.base_offset))
        self.boundaries.append(result.base_offset + batch.record_count)

    @rule(writer=st.integers(0, 1), count=st.integers(1, 5))
    def plain(self, writer, count):
        self._append(writer, encoded([b"p" * 60] * count))

    @rule(writer=st.integers(0, 1), producer=st.integers(1, 3), count=st.integers(1, 4))
    def data(self, writer, producer, count):
        self._append(writer, txn_data([b"d" * 60] * count, producer), fmt.TXN_DATA, producer)

    @rule(writer=st.integers(0, 1), producer=st.integers(1, 3), commit=st.booleans())
    def end_transaction(self, writer, producer, commit):
        self._append(writer, marker(producer, commit), fmt.TXN_COMMIT if commit else fmt.TXN_ABORT, producer)

    @rule(writer=st.integers(0, 1))
    def flush(self, writer):
        self.writers[writer].flush()

    @rule(writer=st.integers(0, 1))
    def reopen(self, writer):
        self.writers[writer].close()
        self.writers[writer] = open_log(self.directory, **_CONFIG)
        assert self.writers[writer].log_end_offset() == self.end

    @precondition(lambda self: len(self.boundaries) > 2)
    @rule(writer=st.integers(0, 1), data=st.data())
    def truncate(self, writer, data):
        cut = data.draw(st.sampled_from(self.boundaries[1:-1]))
        log = self.writers[writer]
        with log._lock:
            log.truncate_to_locked(cut)
        self.boundaries = [b for b in self.boundaries if b <= cut]
        self.events = [e for e in self.events if e[2] < cut]

    @invariant()
    def files_hold_one_entry_per_transactional_frame(self):
        if not hasattr(self, "directory"):
            return
        entries = []
        for base in list_segment_bases(self.directory):
            found = file_entries(self.directory, base)
            assert found is not None, base
            entries += found
        assert entries == self.events

    @invariant()
    def readers_see_what_the_oracle_sees(self):
        if not hasattr(self, "directory"):
            return
        for high_watermark in {self.end, random.Random(self.end).randint(0, self.end)}:
            open_, aborted = oracle(self.events, high_watermark)
            self.looks += 1
            generation = self.writers[0]._lock.read_generation()
            cached = [(r, generation) for i, r in enumerate(self.cached) if i == 0 or self.looks % 3 == 0]
            for reader, generation in [(self.reader, None), (TxnIndexReader(self.directory), None), *cached]:
                state = reader.state(high_watermark, generation)
                assert state.open == open_
                assert list(state.aborted) == aborted
                first = min(open_.values(), default=high_watermark)
                assert state.last_stable_offset == min(first, high_watermark)

    def teardown(self):
        for writer in getattr(self, "writers", []):
            writer.close()


TestTxnIndexModel = TxnIndexModel.TestCase
TestTxnIndexModel.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)


def test_files_agree_with_the_sqlite_tables_on_a_random_history(cluster_path, make_topic):
    make_topic("t", 2, config={"segment.bytes": "2000"})
    rng = random.Random(14)
    producers = {}
    plain = Producer({"cluster": cluster_path, "linger.ms": 0})
    open_ids: set[str] = set()
    for step in range(80):
        choice = rng.random()
        partition = rng.randrange(2)
        if choice < 0.25:
            plain.produce("t", b"plain" * 20, partition=partition)
            plain.flush()
            continue
        name = f"tx-{rng.randrange(3)}"
        producer = producers.get(name)
        if producer is None:
            producer = producers[name] = Producer({"cluster": cluster_path, "transactional.id": name,
                                                   "linger.ms": 0})
            producer.init_transactions()
        if name not in open_ids:
            producer.begin_transaction()
            open_ids.add(name)
        if choice < 0.75:
            producer.produce("t", f"{name}-{step}".encode() * 10, partition=partition)
            producer.flush()
        else:
            (producer.commit_transaction if rng.random() < 0.5 else producer.abort_transaction)()
            open_ids.discard(name)
    cluster = Cluster.open(cluster_path)
    store = TransactionStore(cluster.metadata)
    try:
        for partition in range(2):
            handle = cluster.partition("t", partition)
            try:
                hw = handle.high_watermark() or 0
                state = TxnIndexReader(handle.leader_dir).state(hw)
            finally:
                handle.close()
            sqlite_open = {h.producer_id: h.first_offset for h in store.holders("t", partition)}
            # A row joined with no frame yet holds nothing in the files (nothing to hide).
            assert {p: o for p, o in sqlite_open.items() if o < hw and p in state.open} == state.open
            assert all(p in state.open or o == hw for p, o in sqlite_open.items()), (sqlite_open, state.open, hw)
            assert sorted(state.aborted) == sorted(store.aborted("t", partition, 0))
    finally:
        cluster.close()
        plain.close()
        for producer in producers.values():
            producer.close()


def test_followers_copies_get_the_same_entries(tmp_path):
    from kstream import Admin, NewTopic

    path = str(tmp_path / "c")
    dirs = [str(tmp_path / f"d{i}") for i in range(2)]
    with Admin({"cluster": path, "log.dirs": ",".join(dirs)}) as admin:
        admin.create_topics([NewTopic("t", 1, 2, {"segment.bytes": "3000"})])["t"].result()
    producer = Producer({"cluster": path, "transactional.id": "copy", "linger.ms": 0, "acks": "all"})
    producer.init_transactions()
    for i in range(6):
        producer.begin_transaction()
        producer.produce("t", b"v" * 200, partition=0)
        producer.flush()
        (producer.commit_transaction if i % 2 else producer.abort_transaction)()
    producer.close()
    replicas = [os.path.join(d, "t-0") for d in dirs]
    bases = list_segment_bases(replicas[0])
    assert len(bases) > 1 and bases == list_segment_bases(replicas[1])
    views = [[e for b in bases for e in file_entries(r, b)] for r in replicas]
    assert views[0] == views[1] and len(views[0]) == 12
    states = [TxnIndexReader(r).state(1 << 40) for r in replicas]
    assert states[0] == states[1] and len(states[0].aborted) == 3 and not states[0].open
