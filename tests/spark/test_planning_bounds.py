"""The Spark reader's planning after a power cut took a partition's published HW (issue 27):
the offsets it plans to (and its check of a group's committed offset against the log end) are
the engine's bounds(). The planning functions run on the driver: no Spark session needed."""

from __future__ import annotations

from kstream.log.cluster.cluster import Cluster
from kstream.source.planning import EARLIEST, LATEST, bounds, group_offset_in_range, resolve


def test_planning_reads_up_to_the_engine_s_bounds(lost_hw):
    path, expected = lost_hw
    cluster = Cluster.open(path)
    try:
        assert bounds(cluster, "t", 0, "read_committed") == (expected.log_start_offset,
                                                             expected.last_stable_offset)
        assert bounds(cluster, "t", 0, "read_uncommitted") == (expected.log_start_offset,
                                                               expected.high_watermark)
        for level, end in (("read_committed", expected.last_stable_offset),
                           ("read_uncommitted", expected.high_watermark)):
            assert resolve(cluster, "latest", [("t", 0)], LATEST, level) == {"t": {"0": end}}
            assert resolve(cluster, "earliest", [("t", 0)], EARLIEST, level) == {
                "t": {"0": expected.log_start_offset}}
        # a group's offset between the LSO and the LEO is kept; one past the LEO is reset
        found = (expected.log_start_offset, expected.last_stable_offset)
        assert group_offset_in_range(cluster, "g", "t", 0, expected.log_end_offset, found, EARLIEST,
                                     True) == expected.log_end_offset
        assert group_offset_in_range(cluster, "g", "t", 0, expected.log_end_offset + 1, found, EARLIEST,
                                     True) == EARLIEST
    finally:
        cluster.close()
