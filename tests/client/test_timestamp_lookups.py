"""Every Python caller of offset-for-timestamp answers the one table (tests/log/timestamp_cases.py)
as the engine's face does: AdminClient.list_offsets(OffsetSpec.for_timestamp), Consumer.offsets_for_times,
`kstream get-offsets --time MS`, and the Spark reader's planning of startingOffsetsByTimestamp.

Before they all called :func:`kstream.log.offset_for_timestamp`, the consumer, the CLI (and the
planner, through the consumer) answered with a control frame's offset when a marker was the first
frame reaching the time (the commit-marker, log-append-time and kstream-markers cases), and none
of them left aborted records out under read_committed. The JVM reader answers the same table in
TimestampVectorTest (tests/jvm) and through Spark in tests/spark/test_jvm_reader.py.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from tests.log.timestamp_cases import CASES, ISOLATIONS, T0, build, expected, topic_name

from kstream import Consumer, IsolationLevel, TopicPartition
from kstream.admin import AdminClient, OffsetSpec
from kstream.log.cluster.cluster import Cluster
from kstream.source import planning
from kstream.source.read_options import LATEST, TimestampPosition
from kstream.tools.cli.main import cli

LEVELS = {"read_uncommitted": IsolationLevel.READ_UNCOMMITTED, "read_committed": IsolationLevel.READ_COMMITTED}
LOOKUPS = [(case, lookup) for case in CASES for lookup in case.lookups]
IDS = [f"{case.name}@{lookup.target}" for case, lookup in LOOKUPS]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("callers") / "cluster")
    for case in CASES:
        build(path, case)
    return path


def _offset(case, lookup, isolation) -> int:
    found = expected(case, lookup, isolation)
    return -1 if found is None else found[0]


@pytest.mark.parametrize("case,lookup", LOOKUPS, ids=IDS)
def test_admin_list_offsets_for_timestamp(built, case, lookup):
    with AdminClient({"cluster": built}) as admin:
        tp = TopicPartition(topic_name(case), 0)
        for isolation in ISOLATIONS:
            spec = OffsetSpec.for_timestamp(T0 + lookup.target)
            info = admin.list_offsets({tp: spec}, isolation_level=LEVELS[isolation])[tp].result()
            found = expected(case, lookup, isolation)
            assert (info.offset, info.timestamp) == (found or (-1, -1)), (lookup.why, isolation)


@pytest.mark.parametrize("case,lookup", LOOKUPS, ids=IDS)
def test_consumer_offsets_for_times(built, case, lookup):
    for isolation in ISOLATIONS:
        consumer = Consumer({"cluster": built, "isolation.level": isolation})
        try:
            asked = TopicPartition(topic_name(case), 0, T0 + lookup.target)
            unassigned = consumer.offsets_for_times([asked])
            consumer.assign([TopicPartition(topic_name(case), 0, 0)])
            assigned = consumer.offsets_for_times([asked])
        finally:
            consumer.close()
        assert [tp.offset for tp in unassigned + assigned] == [_offset(case, lookup, isolation)] * 2, \
            (lookup.why, isolation)


@pytest.mark.parametrize("case,lookup", LOOKUPS, ids=IDS)
def test_cli_get_offsets_by_time(built, case, lookup):
    """kafka-get-offsets asks as the admin does by default (read_uncommitted); no record: no line."""
    result = CliRunner().invoke(cli, ["--cluster", built, "get-offsets", "--topic", topic_name(case),
                                      "--time", str(T0 + lookup.target)])
    assert result.exit_code == 0, result.output
    offset = _offset(case, lookup, "read_uncommitted")
    assert result.output.splitlines() == ([] if offset < 0 else [f"{topic_name(case)}:0:{offset}"]), lookup.why


@pytest.mark.parametrize("case,lookup", LOOKUPS, ids=IDS)
def test_spark_planning_of_starting_offsets_by_timestamp(built, case, lookup):
    """startingTimestamp with strategy latest: the offset found, or the end the read may reach."""
    cluster = Cluster.open(built)
    try:
        tps = [(topic_name(case), 0)]
        for isolation in ISOLATIONS:
            spec = TimestampPosition(timestamp=T0 + lookup.target, strategy="latest")
            planned = planning.resolve(cluster, spec, tps, LATEST, isolation)[topic_name(case)]["0"]
            offset = _offset(case, lookup, isolation)
            end = planning.bounds(cluster, topic_name(case), 0, isolation)[1]
            assert planned == (end if offset < 0 else offset), (lookup.why, isolation)
    finally:
        cluster.close()
