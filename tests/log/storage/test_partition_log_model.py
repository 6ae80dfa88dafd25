"""Model-based test: a partition log against a plain list of records.

Two writer objects (as two processes would: separate locks on one lock file)
append, reopen, leave torn tails and roll segments; after every step the log
read from any offset must equal the list from that offset.
"""

from __future__ import annotations

import os

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from helpers import encoded, open_log, read_all
from kstream.log.storage import format as fmt
from kstream.log.storage.retention import list_segment_bases

_CONFIG = dict(segment_bytes=4096, index_interval_bytes=300)


class PartitionLogModel(RuleBasedStateMachine):
    @initialize(directory=st.builds(lambda: __import__("tempfile").mkdtemp(prefix="kmodel-")))
    def setup(self, directory):
        self.directory = os.path.join(directory, "t-0")
        self.writers = [open_log(self.directory, **_CONFIG), open_log(self.directory, **_CONFIG)]
        self.oracle: list[bytes] = []

    @rule(writer=st.integers(0, 1), values=st.lists(st.binary(min_size=0, max_size=300), min_size=1,
                                                    max_size=12))
    def append(self, writer, values):
        result = self.writers[writer].append(encoded(values))
        assert result.base_offset == len(self.oracle)
        self.oracle.extend(values)

    @rule(writer=st.integers(0, 1))
    def reopen(self, writer):
        self.writers[writer].close()
        self.writers[writer] = open_log(self.directory, **_CONFIG)
        assert self.writers[writer].log_end_offset() == len(self.oracle)

    @rule(cut=st.integers(1, 200), flush=st.booleans())
    def torn_tail(self, cut, flush):
        """A writer died mid-frame: a prefix of a frame is left at the end of the file."""
        if flush:
            self.writers[0].flush()
        bases = list_segment_bases(self.directory)
        path = os.path.join(self.directory, fmt.segment_file_name(bases[-1]))
        frame = encoded([b"lost" * 20])
        raw = fmt.pack_header(payload_size=frame.payload.size, attributes=0, base_offset=len(self.oracle),
                              record_count=1, leader_epoch=0, producer_id=-1, producer_epoch=-1,
                              base_sequence=-1, min_timestamp=0, max_timestamp=0,
                              schema_length=frame.payload.schema_length, payload_crc=frame.payload.crc)
        whole = raw + frame.payload.to_bytes()
        with open(path, "ab") as f:
            f.write(whole[: min(cut, len(whole) - 1)])

    @rule(offset=st.integers(0, 10_000))
    def read_from(self, offset):
        offset = min(offset, len(self.oracle))
        got = read_all(self.directory, offset)
        assert [v for _, v in got] == self.oracle[offset:]
        assert [o for o, _ in got] == list(range(offset, len(self.oracle)))

    @invariant()
    def end_offset_matches(self):
        if hasattr(self, "writers"):
            assert self.writers[1].log_end_offset() == len(self.oracle)

    def teardown(self):
        if hasattr(self, "writers"):
            for writer in self.writers:
                writer.close()


TestPartitionLogModel = PartitionLogModel.TestCase
TestPartitionLogModel.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
