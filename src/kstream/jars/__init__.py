"""The JVM reader's jar, shipped inside the package (built by ``make install`` / jvm/build.sh).

``format("kstream")`` reads through the JVM reader when this jar is on the SparkSession
(``spark.jars``) and through the Python data source otherwise; writes always use the Python
sink, through the jar's provider when it is there, which adds Spark's ``update`` output mode
(docs/JVM_READER.md). :func:`with_jar` adds it to a session builder (as
:func:`kstream.spark_session` does); ``kstream jar-path`` prints the path for
``spark-submit --jars``.
"""

from __future__ import annotations

import os
from typing import Any

JAR_NAME = "kstream-spark.jar"
JARS_CONF = "spark.jars"


def jar_path() -> str | None:
    """Absolute path of the built jar, or None when none was built (no JDK at install time)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), JAR_NAME)
    return path if os.path.isfile(path) else None


def with_jar(builder: Any) -> Any:
    """``builder`` (a ``SparkSession.Builder``) with the jar added to ``spark.jars``, when built.

    Other jars already set on the builder are kept. Without a jar the builder is returned as is:
    the Python reader serves every read.
    """
    path = jar_path()
    if path is None:
        return builder
    existing = builder._options.get(JARS_CONF, "") if hasattr(builder, "_options") else ""
    jars = [j for j in existing.split(",") if j and j != path] + [path]
    return builder.config(JARS_CONF, ",".join(jars))
