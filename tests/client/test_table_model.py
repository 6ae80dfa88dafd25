"""Model-based test of ``Table.get`` against a dict oracle: random puts, deletes (tombstones),
transactions (committed, aborted, left open across lookups and cleans) and log cleaner runs at
random points, on a two-partition compacted topic.

After every step, for every key: a Table kept open since the start (its key index caught up
incrementally, across cleans that swapped the segments it read) and a Table opened now (its
index built from scratch) must both answer the oracle's latest committed value, below the
LSO of the key's partition (an open transaction's records, and whatever follows them on that
partition, are not visible yet): None for a key never written or deleted, never an aborted
or a replaced value. get_many answers the same."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from compacted_writes import CompactedWrites
from kstream import Admin, Table
from kstream.admin import NewTopic
from kstream.client.partitioner import partition_for_key
from kstream.log.cluster.cluster import Cluster

ALL_KEYS = [b"a", b"b", b"c", b"d", b"e", b"f"]
KEYS = st.sampled_from(ALL_KEYS)
PARTITIONS = 2
RETENTION_MS = 1000
COMPACT = {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01",
           "delete.retention.ms": str(RETENTION_MS)}


class TableModel(CompactedWrites):
    KEYS = KEYS
    PREFIX = "kstream-table-model-"

    def setup_topic(self) -> None:
        with Admin({"cluster": self.cluster_path, "log.dirs": "a,b"}) as admin:
            admin.create_topics([NewTopic("t", PARTITIONS, 2, config=COMPACT)])["t"].result()
        self.table = Table({"cluster": self.cluster_path}, "t")

    def oracle(self) -> dict[bytes, bytes | None]:
        """Each key's latest committed value below its partition's LSO (None: deleted)."""
        blocked: set[int] = set()  # partitions an open transaction holds from its first record on
        latest: dict[bytes, bytes | None] = {}
        for key, value, txn in self.log:
            partition = partition_for_key(key, PARTITIONS)
            if txn is not None and self.fate[txn] is None:
                blocked.add(partition)
            if partition in blocked:
                continue
            if txn is None or self.fate[txn] is True:
                latest[key] = value
        return latest

    @rule(later_ms=st.sampled_from([0, RETENTION_MS // 2, 3 * RETENTION_MS]), force=st.booleans())
    def clean(self, later_ms, force):
        self.clock_ms += later_ms
        cluster = Cluster.open(self.cluster_path)
        try:
            cluster.clean_topic("t", force=force, now_ms=self.clock_ms)
        finally:
            cluster.close()

    @invariant()
    def tables_answer_the_oracle(self):
        oracle = self.oracle()
        with Table({"cluster": self.cluster_path}, "t") as fresh:
            for table in (self.table, fresh):
                for key in ALL_KEYS:
                    message = table.get(key)
                    want = oracle.get(key)
                    got = None if message is None else message.value()
                    assert got == want, (key, got, want, "kept" if table is self.table else "fresh")
                    if message is not None:
                        assert message.key() == key and message.partition() == partition_for_key(key, PARTITIONS)
                many = table.get_many(ALL_KEYS)
                assert {k: m.value() for k, m in many.items()} == {k: v for k, v in oracle.items() if v is not None}

    def teardown(self):
        self.table.close()
        super().teardown()


TableModel.TestCase.settings = settings(max_examples=20, stateful_step_count=20, deadline=None,
                                        suppress_health_check=list(HealthCheck))
test_table_get_against_a_dict_oracle = TableModel.TestCase
