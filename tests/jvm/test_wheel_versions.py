"""jvm/pom.xml's ``provided`` versions are the installed pyspark wheel's (jvm/wheel_repo.py)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "jvm", "wheel_repo.py")


def _wheel_repo():
    spec = importlib.util.spec_from_file_location("wheel_repo", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["wheel_repo"] = module  # dataclasses look the module up by name
    spec.loader.exec_module(module)
    return module


def test_every_provided_jar_is_the_wheels():
    result = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_the_pom_provides_spark_and_arrow():
    names = {artifact.artifact_id for artifact in _wheel_repo().provided_artifacts()}
    assert {"spark-sql_2.13", "spark-catalyst_2.13", "arrow-vector", "arrow-memory-core"} <= names


def test_a_version_the_wheel_does_not_ship_is_named(tmp_path):
    module = _wheel_repo()
    (tmp_path / "spark-sql_2.13-4.3.1.jar").write_bytes(b"")
    problems = module.mismatches([module.Artifact("org.apache.spark", "spark-sql_2.13", "4.3.0")], str(tmp_path))
    assert len(problems) == 1
    assert "pins spark-sql_2.13 4.3.0" in problems[0] and "spark-sql_2.13-4.3.1.jar" in problems[0]
