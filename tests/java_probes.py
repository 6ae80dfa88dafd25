"""The Java probes under jvm/src/test/java (``*Probe.java``), compiled once per test session.

The conformance tests run small Java programs beside Python. Java's source-file mode
(``java Probe.java``) compiles the file again on every launch, 5-8 s here with Spark's jars on
the class path: minutes over tests/jvm, where one test launches a probe many times. Each probe
is compiled once (per class path) into a temporary directory, and launched from its class.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence

import pyspark

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBES = os.path.join(ROOT, "jvm", "src", "test", "java", "io", "kstream", "spark")
SPARK_JARS = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
COMPILE_TIMEOUT_S = 300
_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.MULTILINE)


def probe(relative: str) -> str:
    """The path of a probe's source, from its place under io/kstream/spark (``"txn/TxnProbe.java"``)."""
    return os.path.join(PROBES, relative)


def probe_command(source: str, *args: str, classpath: Sequence[str] = (),
                  java_options: Sequence[str] = ()) -> list[str]:
    """``java`` running the compiled ``source`` with ``args``; ``classpath`` is what it compiles and runs against."""
    classes = _compiled(source, tuple(classpath))
    return ["java", *java_options, "-cp", os.pathsep.join([classes, *classpath]), _class_name(source), *args]


def _class_name(source: str) -> str:
    with open(source, encoding="utf-8") as f:
        match = _PACKAGE.search(f.read())
    name = os.path.splitext(os.path.basename(source))[0]
    return f"{match.group(1)}.{name}" if match else name


@functools.cache
def _compiled(source: str, classpath: tuple[str, ...]) -> str:
    out = tempfile.mkdtemp(prefix="kstream-probe-")
    atexit.register(shutil.rmtree, out, True)
    command = ["javac", "-nowarn", "-d", out, source]
    if classpath:
        command[1:1] = ["-cp", os.pathsep.join(classpath)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
    assert result.returncode == 0, f"javac {source} failed:\n{result.stderr[-5000:]}"
    return out
