"""Spark reads of a compacted topic after the cleaner ran: the Python reader reads the gaps as
gaps (failOnDataLoss keeps its meaning: data below the log start); the JVM reader, which reads
frame version 1 only, refuses the cleaned frames with an error naming the file."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "log", "cleaner"))
from cleaner_helpers import make_compacted, produce
from jvm_support import JAR, NO_JAR_REASON, load

from kstream.log.cluster.cluster import Cluster

pytestmark = pytest.mark.spark


@pytest.fixture
def cleaned(cluster_path):
    make_compacted(cluster_path)
    produce(cluster_path, [(f"k{i % 3}".encode(), f"v{i}".encode()) for i in range(12)] + [(b"z", b"end")])
    assert Cluster.open(cluster_path).clean_topic("t", force=True)[0].records_removed == 9
    return cluster_path


def test_the_python_reader_reads_a_cleaned_partition_with_its_gaps(spark, cleaned):
    frame = load(spark, cleaned, "python", subscribe="t", failOnDataLoss="true")
    rows = sorted((r.offset, r.key, r.value) for r in frame.select("offset", "key", "value").collect())
    assert rows == [(9, b"k0", b"v9"), (10, b"k1", b"v10"), (11, b"k2", b"v11"), (12, b"z", b"end")]
    inside_a_gap = load(spark, cleaned, "python", subscribe="t", failOnDataLoss="true",
                        startingOffsets='{"t": {"0": 4}}', endingOffsets='{"t": {"0": 11}}')
    assert sorted(r.offset for r in inside_a_gap.collect()) == [9, 10]


@pytest.mark.skipif(JAR is None, reason=NO_JAR_REASON)
def test_the_jvm_reader_refuses_cleaned_frames_with_an_error_naming_the_file(spark, cleaned):
    with pytest.raises(Exception, match=r"unknown format version 2.*\.log"):
        load(spark, cleaned, "jvm", subscribe="t").collect()
