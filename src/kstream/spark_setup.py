"""A SparkSession that can use ``format("kstream")``: :func:`spark_session` and :func:`spark_builder`.

A notebook's own ``SparkSession.builder.getOrCreate()`` cannot find the kstream data source:
Spark finds Python data sources in a Python worker that the Spark JVM starts with the
interpreter of its environment (Spark 4.3's ``PythonUtils.defaultPythonExec``: the JVM's
``PYSPARK_DRIVER_PYTHON``, else ``PYSPARK_PYTHON``, else ``python3`` from ``PATH``; the setting
``spark.pyspark.python`` is not read there), and that is rarely the virtualenv that has kstream.
The JVM copies the driver's ``os.environ`` when it starts and looks the data sources up once, so
the interpreter must be chosen before the first session of the process. What this module does
to a session, before the JVM starts:

- ``PYSPARK_DRIVER_PYTHON`` = ``sys.executable`` (the driver is this interpreter), and
  ``PYSPARK_PYTHON`` = ``sys.executable`` when unset, in ``os.environ``;
- the kstream jar on ``spark.jars`` when it was built (:func:`kstream.jars.with_jar`: the JVM
  reader and the ``update`` output mode);
- the settings of conf/spark-defaults.conf that matter to kstream: no Python filter pushdown
  (``spark.sql.python.filterPushdown.enabled=false``: pyspark 4.3 reuses a filtered query's
  planned partitions for later queries of the same DataFrame), and few shuffle partitions on a
  local master.

After ``getOrCreate`` it asks Spark whether it found the kstream data source and raises a
:class:`~kstream.errors.ConfigError` naming the interpreter Spark ran and what to do when not (a
JVM started earlier in the process, by a plain session, keeps its interpreter and its answer).
Importing ``kstream`` changes nothing: only these calls touch the environment.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping
from typing import Any

from kstream.errors import ConfigError
from kstream.jars import JARS_CONF, jar_path, with_jar

DATA_SOURCE_NAME = "kstream"
DRIVER_PYTHON_ENV = "PYSPARK_DRIVER_PYTHON"
WORKER_PYTHON_ENV = "PYSPARK_PYTHON"
LOCAL_SHUFFLE_PARTITIONS = "4"

# Settings every kstream session gets (a builder's own value of one wins).
SESSION_CONF: Mapping[str, str] = {
    # pyspark 4.3 reuses a filtered query's planned partitions for later queries of the same
    # DataFrame (docs/upstream/pushdown_cache_repro.py): the kstream reader pushes no filters.
    "spark.sql.python.filterPushdown.enabled": "false",
}
# Settings for a local master only (the default of a builder without one is local[*]).
LOCAL_CONF: Mapping[str, str] = {
    "spark.sql.shuffle.partitions": LOCAL_SHUFFLE_PARTITIONS,
}


def spark_builder(builder: Any = None) -> Any:
    """``builder`` (default ``SparkSession.builder``) configured for kstream; see the module doc.

    Sets the interpreter environment variables when no Spark JVM runs yet in this process, adds
    the jar, and the kstream settings the builder does not set itself. Call ``getOrCreate()`` on
    it, then :func:`check_session` to have a missing data source named at once (as
    :func:`spark_session` does).
    """
    from pyspark.sql import SparkSession

    use_this_python()
    builder = with_jar(builder if builder is not None else SparkSession.builder)
    given = dict(getattr(builder, "_options", {}))
    settings = dict(SESSION_CONF)
    if given.get("spark.master", "local").startswith("local"):
        settings.update(LOCAL_CONF)
    for key, value in settings.items():
        if key not in given:
            builder = builder.config(key, value)
    return builder


def spark_session(app_name: str = "kstream", master: str = "local[2]",
                  conf: Mapping[str, str] | None = None) -> Any:
    """A SparkSession (``getOrCreate``) on which ``format("kstream")`` reads and writes.

    ``conf`` entries override the kstream settings. Raises ConfigError when Spark's Python
    workers cannot import kstream (a Spark JVM started earlier in this process with another
    interpreter): restart the Python process and call this first.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = spark_builder(builder).getOrCreate()
    check_session(session)
    start_callback_server(session)
    return session


def start_callback_server(session: Any) -> None:
    """Start py4j's callback server now, while this process has few files open.

    The JVM calls Python through it (``foreachBatch``, ``StreamingQueryListener``), and pyspark
    starts it on first use. Its accept loop uses ``select()``, which cannot watch a descriptor
    numbered 1024 or more: started in a process holding more than ~1024 files (kstream clients
    hold a partition's segment files open), its thread dies at once while its socket keeps
    listening, and the first ``foreachBatch`` fails or hangs for good. Started early, its socket
    gets a low number and it keeps working however many files are opened later. Nothing to do on
    Spark Connect (no py4j gateway here)."""
    context = getattr(session, "sparkContext", None)
    gateway = getattr(context, "_gateway", None) if getattr(session, "_jsparkSession", None) is not None else None
    if gateway is None:
        return
    from pyspark.java_gateway import ensure_callback_server_started

    ensure_callback_server_started(gateway)


def jvm_started() -> bool:
    """Whether this process already runs a Spark JVM (its environment is then fixed)."""
    from pyspark import SparkContext

    return SparkContext._gateway is not None


def use_this_python() -> None:
    """Before the Spark JVM starts: make Spark run this interpreter for its Python workers.

    ``PYSPARK_DRIVER_PYTHON`` is the one Spark's data source lookup reads first, and in a
    running driver it can only rightly be this interpreter (a notebook launched with
    ``PYSPARK_DRIVER_PYTHON=jupyter`` would otherwise have Spark run ``jupyter`` as a Python
    worker); a ``PYSPARK_PYTHON`` the user set is kept (Spark's other Python workers, UDFs,
    use it). Once a JVM runs, nothing here changes: :func:`check_session` says whether it works.
    """
    if jvm_started():
        return
    os.environ[DRIVER_PYTHON_ENV] = sys.executable
    os.environ.setdefault(WORKER_PYTHON_ENV, sys.executable)


def check_session(session: Any) -> None:
    """Raises ConfigError when ``session``'s Spark did not find the kstream Python data source
    (its Python workers cannot import kstream); warns when the built jar is not on it."""
    jspark = getattr(session, "_jsparkSession", None)
    if jspark is None:  # Spark Connect: the server's Python is not this process's to check
        return
    if not jspark.sessionState().dataSourceManager().dataSourceExists(DATA_SOURCE_NAME):
        system = session.sparkContext._jvm.java.lang.System
        raise ConfigError(python_not_found(system.getenv(DRIVER_PYTHON_ENV), system.getenv(WORKER_PYTHON_ENV)))
    path = jar_path()
    jars = session.sparkContext.getConf().get(JARS_CONF, "") or ""
    if path is not None and path not in jars.split(","):
        warnings.warn(f"the kstream jar ({path}) is not on this SparkSession: a Spark JVM was already "
                      "running without it, so reads use the Python reader and outputMode('update') is "
                      "refused; restart the Python process (notebook kernel) and call kstream.spark_session() "
                      "before anything else starts Spark", stacklevel=2)


def python_not_found(driver_python: str | None, worker_python: str | None) -> str:
    """The message when Spark's Python workers cannot import kstream, naming the interpreter the
    Spark JVM runs (its PYSPARK_DRIVER_PYTHON, else PYSPARK_PYTHON, else python3 on its PATH)."""
    if driver_python:
        interpreter = f"{driver_python!r} (PYSPARK_DRIVER_PYTHON of the Spark JVM)"
    elif worker_python:
        interpreter = f"{worker_python!r} (PYSPARK_PYTHON of the Spark JVM)"
    else:
        interpreter = "'python3' from the Spark JVM's PATH (neither PYSPARK_DRIVER_PYTHON nor PYSPARK_PYTHON was set)"
    return (f"Spark found no Python data source named kstream: its Python workers run {interpreter}, "
            f"which cannot import kstream (this driver runs {sys.executable!r}). A Spark JVM keeps the "
            "interpreter it started with, so restart the Python process (notebook kernel) and call "
            "kstream.spark_session() (or build with kstream.spark_builder()) before anything else starts "
            "Spark, or start Python with PYSPARK_PYTHON and PYSPARK_DRIVER_PYTHON set to an interpreter "
            "that has kstream installed")
