"""Model-based test of the cleaner against a dict oracle: random puts, deletes (tombstones),
transactions (committed, aborted, left open across cleans) and cleans at random times.

After every step, a read_committed reader of the whole partition must see, per key, the
oracle's latest committed value (a tombstone, or nothing once the tombstone was dropped, for a
deleted key), offsets strictly increasing, no aborted record and no value that was replaced
(nothing resurrected). Cleaning must never change that view, only shrink the log."""

from __future__ import annotations

from cleaner_helpers import frames, make_compacted, polled, replica_dirs
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from compacted_writes import CompactedWrites
from kstream.log.cluster.cluster import Cluster

KEYS = st.sampled_from([b"a", b"b", b"c", b"d", b"e"])
RETENTION_MS = 1000


class CleanerModel(CompactedWrites):
    KEYS = KEYS
    PREFIX = "kstream-cleaner-model-"

    def setup_topic(self) -> None:
        make_compacted(self.cluster_path, replicas=2, config={"delete.retention.ms": str(RETENTION_MS)})

    @property
    def oracle(self) -> dict[bytes, bytes | None]:
        """Each key's latest committed value (None: deleted)."""
        latest: dict[bytes, bytes | None] = {}
        for key, value, txn in self.log:
            if txn is None or self.fate[txn] is True:
                latest[key] = value
        return latest

    @rule(later_ms=st.sampled_from([0, RETENTION_MS // 2, RETENTION_MS, 3 * RETENTION_MS]), force=st.booleans())
    def clean(self, later_ms, force):
        self.clock_ms += later_ms
        before = self.view()
        Cluster.open(self.cluster_path).clean_topic("t", force=force, now_ms=self.clock_ms)
        after = self.view()
        # Cleaning changes nothing a reader's latest-per-key view depends on, except a tombstone
        # whose delete.retention.ms passed, which may go.
        for key in set(before) | set(after):
            assert after.get(key) == before.get(key) or (before.get(key) is None and key not in after), key

    def view(self) -> dict[bytes, bytes | None]:
        records = polled(self.cluster_path)
        offsets = [offset for offset, _, _ in records]
        assert offsets == sorted(set(offsets)), "offsets must strictly increase"
        latest: dict[bytes, bytes | None] = {}
        for _, key, value in records:
            latest[key] = value
        return latest

    @invariant()
    def readers_see_the_oracle(self):
        if self.open_txn is not None:
            return  # read_committed stops at the open transaction (the LSO); checked once it ends
        latest = self.view()
        oracle = self.oracle
        for key, value in latest.items():  # nothing aborted, replaced or deleted comes back
            assert value == oracle.get(key), (key, value, oracle.get(key))
        for key, value in oracle.items():
            assert latest.get(key) == value or (value is None and key not in latest), (key, value)

    @invariant()
    def replicas_agree_frame_by_frame(self):
        first, second = (frames(d) for d in replica_dirs(self.cluster_path))
        assert [raw for _, raw in first] == [raw for _, raw in second]



CleanerModel.TestCase.settings = settings(max_examples=25, stateful_step_count=20, deadline=None,
                                          suppress_health_check=list(HealthCheck))
test_cleaner_against_a_dict_oracle = CleanerModel.TestCase
