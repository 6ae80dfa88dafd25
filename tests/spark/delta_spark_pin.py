"""The delta-spark jars the tests use: the version jvm/delta-spark/pom.xml pins, the folder
``make delta-spark`` resolves them into (jvm/.delta-spark/<version>/), and whether that release
is built for this pyspark's Spark (none is for Spark 4.3 yet: every delta-spark read fails on
pyspark 4.3 with a NoSuchMethodError). Shared by tests/spark/test_offsets_table_from_spark.py,
test_tiered_table_delta_spark.py and test_tiered_table_standalone.py."""

from __future__ import annotations

import glob
import os
import xml.etree.ElementTree as ET

import pyspark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POM = os.path.join(ROOT, "jvm", "delta-spark", "pom.xml")


def pinned_delta_version() -> str:
    properties = ET.parse(POM).getroot().find("{http://maven.apache.org/POM/4.0.0}properties")
    assert properties is not None, f"{POM} has no <properties>"
    return properties.findtext("{http://maven.apache.org/POM/4.0.0}delta.version") or ""


DELTA_VERSION = pinned_delta_version()
JAR_DIR = os.path.join(ROOT, "jvm", ".delta-spark", DELTA_VERSION)
NO_JARS_REASON = (f"no delta-spark {DELTA_VERSION} jars in {os.path.relpath(JAR_DIR, ROOT)} "
                  "(make delta-spark resolves them)")
# delta-spark releases on Maven Central and the Spark each is built for; none is for 4.3 yet.
DELTA_BUILT_FOR_SPARK = {"4.0.0": "4.0", "4.0.1": "4.0", "4.1.0": "4.0", "4.2.0": "4.1", "4.3.0": "4.1",
                         "4.3.1": "4.1", "4.4.0": "4.2"}
SPARK_MINOR = ".".join(pyspark.__version__.split(".")[:2])
MISMATCH = DELTA_BUILT_FOR_SPARK.get(DELTA_VERSION, SPARK_MINOR) != SPARK_MINOR
MISMATCH_REASON = (f"delta-spark {DELTA_VERSION} is built for Spark {DELTA_BUILT_FOR_SPARK.get(DELTA_VERSION)}, "
                   f"not pyspark {pyspark.__version__}'s: its reads fail with NoSuchMethodError (docs/GROUPS.md)")


class DeltaSparkBuiltForAnotherSparkError(AssertionError):
    """delta-spark failed on a method of Spark's that its Spark version had and this one lacks."""


def delta_jars() -> list[str]:
    """The resolved jars (empty when ``make delta-spark`` has not run)."""
    return sorted(glob.glob(os.path.join(JAR_DIR, "*.jar")))


def raise_for_failed_run(what: str, returncode: int, stderr: str) -> None:
    """A failed delta-spark subprocess: DeltaSparkBuiltForAnotherSparkError when Spark lacked a
    method delta-spark calls (the expected failure of a release built for another Spark), else
    an AssertionError with the end of its stderr."""
    error = next((line for line in stderr.splitlines() if "Error" in line), stderr[-2000:])
    if "java.lang.NoSuchMethodError" in stderr:
        raise DeltaSparkBuiltForAnotherSparkError(f"delta-spark {DELTA_VERSION} on pyspark {pyspark.__version__}: "
                                                  f"{error}")
    raise AssertionError(f"{what} failed (exit {returncode}): {stderr[-4000:]}")
