"""scripts/confluent_compat.py, the harness that runs confluent-kafka-python's unit tests on
kstream: import rewriting, and a whole run on small stand-in test files (the real ones are
not in the repository; see docs/COMPAT.md)."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "confluent_compat.py"


@pytest.fixture(scope="module")
def compat():
    spec = importlib.util.spec_from_file_location("confluent_compat", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_only_import_lines_change(compat):
    source = textwrap.dedent("""\
        import confluent_kafka
        from confluent_kafka import (Consumer, KafkaError,
                                     TopicPartition)
        from confluent_kafka.admin import AdminClient, \\
            NewTopic
            from confluent_kafka.error import ConsumeError
        x = "confluent_kafka stays in strings"  # and confluent_kafka in comments
        confluent_kafka.version()
        """)
    assert compat.swap_imports(source) == textwrap.dedent("""\
        import kstream as confluent_kafka
        from kstream import (Consumer, KafkaError,
                                     TopicPartition)
        from kstream.admin import AdminClient, \\
            NewTopic
            from kstream.error import ConsumeError
        x = "confluent_kafka stays in strings"  # and confluent_kafka in comments
        confluent_kafka.version()
        """)


def test_a_parametrized_test_counts_once_per_parameter_set(compat, tmp_path):
    path = tmp_path / "test_x.py"
    path.write_text(textwrap.dedent("""\
        import pytest

        def test_a():
            pass

        @pytest.mark.parametrize("v", [1, 2, 3])
        def test_b(v):
            pass

        def helper_not_a_test():
            pass
        """))
    assert compat.count_tests(path) == 4


def test_a_run_reports_passes_failures_import_errors_and_hangs(compat, tmp_path):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    (upstream / "test_good.py").write_text(textwrap.dedent("""\
        import os
        import confluent_kafka
        from confluent_kafka import KafkaError, Producer

        def test_codes():
            assert KafkaError(KafkaError._PARTITION_EOF) == -191
            assert confluent_kafka.version()[0] == confluent_kafka.__version__

        def test_mytopic_exists_in_a_cluster_of_its_own():
            p = Producer({})
            p.produce("mytopic", b"v")
            assert p.flush(5) == 0
            assert os.environ["KSTREAM_CLUSTER"].rsplit("-", 1)[1].isdigit()  # a copy of its own

        def test_fails():
            assert KafkaError(3) == 4

        def test_hangs():
            while True:
                pass
        """))
    (upstream / "test_missing.py").write_text(textwrap.dedent("""\
        from confluent_kafka import NoSuchName

        def test_one():
            pass

        def test_two():
            pass
        """))
    out = tmp_path / "out.json"
    assert compat.main([str(upstream), "--timeout", "3", "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    good = {t["name"]: t["outcome"] for t in results["test_good.py"]["tests"]}
    assert good == {"test_codes": "passed", "test_mytopic_exists_in_a_cluster_of_its_own": "passed",
                    "test_fails": "failed", "test_hangs": "failed"}
    hang = next(t for t in results["test_good.py"]["tests"] if t["name"] == "test_hangs")
    assert "longer than 3.0 s" in hang["message"]
    missing = results["test_missing.py"]
    assert (missing["passed"], missing["failed"], missing["total"]) == (0, 2, 2)
    assert "NoSuchName" in missing["tests"][0]["message"]


def test_helper_modules_in_subdirectories_are_copied_rewritten_and_not_run(compat, tmp_path):
    upstream = tmp_path / "upstream"
    (upstream / "tests" / "common").mkdir(parents=True)
    (upstream / "tests" / "common" / "__init__.py").write_text("from confluent_kafka import Consumer\n")
    (upstream / "tests" / "test_helpers.py").write_text("import confluent_kafka\nLIMIT = 2.0\n")
    (upstream / "test_uses_helpers.py").write_text(
        "from tests.common import Consumer\nfrom tests.test_helpers import LIMIT\n")
    work = tmp_path / "work"
    work.mkdir()
    names = compat.prepare(upstream, work, 3.0, tmp_path / "cluster")
    assert names == ["test_uses_helpers.py"]
    assert (work / "tests" / "common" / "__init__.py").read_text() == "from kstream import Consumer\n"
    assert (work / "tests" / "test_helpers.py").read_text() == "import kstream as confluent_kafka\nLIMIT = 2.0\n"


def test_sigint_from_a_test_never_loses_the_following_tests_or_files(compat, tmp_path):
    # Upstream's wakeable tests send SIGINT to their own process from a thread; one that
    # lands after the call it meant to interrupt (or that no test catches) must not end the run.
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    (upstream / "test_a_signals.py").write_text(textwrap.dedent("""\
        import os, signal, threading, time

        def later(seconds):
            thread = threading.Thread(target=lambda: (time.sleep(seconds), os.kill(os.getpid(), signal.SIGINT)))
            thread.daemon = True
            thread.start()

        def test_interrupted_as_expected():
            later(0.1)
            try:
                time.sleep(5)
            except KeyboardInterrupt:
                return
            raise AssertionError("not interrupted")

        def test_returns_before_its_signal():
            later(0.3)

        def test_after_a_stray_signal():
            time.sleep(0.5)

        def test_uncaught_interrupt():
            later(0.1)
            time.sleep(5)

        def test_last():
            pass
        """))
    (upstream / "test_b_dies.py").write_text("import os\n\ndef test_exit():\n    os._exit(3)\n")
    (upstream / "test_c_after.py").write_text("def test_runs():\n    pass\n")
    out = tmp_path / "out.json"
    assert compat.main([str(upstream), "--timeout", "3", "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    outcomes = {t["name"]: t["outcome"] for t in results["test_a_signals.py"]["tests"]}
    assert outcomes == {"test_interrupted_as_expected": "passed", "test_returns_before_its_signal": "passed",
                        "test_after_a_stray_signal": "passed", "test_uncaught_interrupt": "failed",
                        "test_last": "passed"}
    dies = results["test_b_dies.py"]
    assert (dies["failed"], "status 3" in dies["tests"][0]["message"]) == (1, True)
    assert results["test_c_after.py"]["passed"] == 1


def test_no_test_files_is_an_error(compat, tmp_path, capsys):
    assert compat.main([str(tmp_path)]) == 2
    assert "docs/COMPAT.md" in capsys.readouterr().err
