"""The writes of the compacted-topic model tests (the cleaner's, the Table's): a hypothesis
state machine that puts, deletes (tombstones) and writes transactions (committed, aborted,
or left open across the subclass's other steps) to topic ``t`` of ``self.cluster_path``,
keeping the log as written for the subclass's oracle."""

from __future__ import annotations

import shutil
import tempfile
import time

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from kstream import Producer


class CompactedWrites(RuleBasedStateMachine):
    """Subclasses set ``KEYS`` (a strategy), make topic ``t`` in ``setup_topic`` and add their
    own rules (cleaning, reading) and invariants."""

    KEYS: st.SearchStrategy[bytes]
    PREFIX = "kstream-compacted-model-"

    def __init__(self):
        super().__init__()
        self.root = tempfile.mkdtemp(prefix=self.PREFIX)
        self.cluster_path = f"{self.root}/c"
        self.setup_topic()
        self.producer = Producer({"cluster": self.cluster_path, "linger.ms": 0})
        # The log as written, in offset order: (key, value, transaction or None); a transaction's
        # fate: True committed, False aborted, None open. Latest wins by offset, as in Kafka.
        self.log: list[tuple[bytes, bytes | None, int | None]] = []
        self.fate: dict[int, bool | None] = {}
        self.open_txn: Producer | None = None
        self.open_id: int | None = None
        self.clock_ms = int(time.time() * 1000)
        self.serial = 0

    def setup_topic(self) -> None:
        raise NotImplementedError

    def value(self) -> bytes:
        self.serial += 1
        return f"v{self.serial}".encode()

    def _transactional(self, keys: list[bytes]) -> tuple[Producer, int]:
        txn = self.serial
        producer = Producer({"cluster": self.cluster_path, "transactional.id": f"x{txn}", "linger.ms": 0})
        producer.init_transactions()
        producer.begin_transaction()
        self.fate[txn] = None
        for key in keys:
            value = self.value()
            producer.produce("t", value, key=key)
            producer.flush()
            self.log.append((key, value, txn))
        return producer, txn

    def _end(self, producer: Producer, txn: int, commit: bool) -> None:
        try:
            (producer.commit_transaction if commit else producer.abort_transaction)()
            self.fate[txn] = commit
        finally:
            producer.close()

    @rule(data=st.data())
    def put(self, data):
        key = data.draw(self.KEYS)
        value = self.value()
        self.producer.produce("t", value, key=key)
        self.producer.flush()
        self.log.append((key, value, None))

    @rule(data=st.data())
    def delete(self, data):
        key = data.draw(self.KEYS)
        self.producer.produce("t", None, key=key)
        self.producer.flush()
        self.log.append((key, None, None))

    @rule(data=st.data(), commit=st.booleans())
    def transaction(self, data, commit):
        keys = data.draw(st.lists(self.KEYS, min_size=1, max_size=3))
        self._end(*self._transactional(keys), commit)

    @precondition(lambda self: self.open_txn is None)
    @rule(data=st.data())
    def begin_open_transaction(self, data):
        keys = data.draw(st.lists(self.KEYS, min_size=1, max_size=2))
        self.open_txn, self.open_id = self._transactional(keys)

    @precondition(lambda self: self.open_txn is not None)
    @rule(commit=st.booleans())
    def end_open_transaction(self, commit):
        producer, self.open_txn = self.open_txn, None
        assert self.open_id is not None
        self._end(producer, self.open_id, commit)

    def teardown(self):
        if self.open_txn is not None:
            self.open_txn.close()
        self.producer.close()
        shutil.rmtree(self.root, ignore_errors=True)
