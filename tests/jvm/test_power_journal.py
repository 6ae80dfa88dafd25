"""The Java writer's power-cut journal records (io.kstream.spark.format.PowerJournal, through
Fsync) are Python's ``faults.record`` records byte for byte: the same file names (inode keys
``dev-ino-generation``, the generation from ``lsattr -v`` on the Java side, from the ioctl on
Python's) and the same bytes (a file's content, a directory's JSON listing in directory order).
tests/chaos/power_cut.py reads one journal both languages record into (the chaos class
``jvm_sink_power_cut``).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from java_probes import SPARK_JARS, probe, probe_command
from kstream.jars import jar_path
from kstream.log.storage import faults

JOURNAL_PROBE = probe("format/JournalProbe.java")
JAVA_TIMEOUT_S = 180

pytestmark = pytest.mark.jvm


def _journal(path) -> str:
    journal = str(path)
    for kind in ("files", "dirs"):
        os.makedirs(os.path.join(journal, kind), exist_ok=True)
    return journal


def _java_record(journal: str, *paths: str) -> None:
    if shutil.which("java") is None or shutil.which("lsattr") is None or jar_path() is None:
        pytest.skip("no java, lsattr or kstream jar: the Java power journal not checked")
    command = probe_command(JOURNAL_PROBE, "record", *paths, classpath=[jar_path(), SPARK_JARS],
                            java_options=["--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"])
    result = subprocess.run(command, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S, check=False,
                            env={**os.environ, faults.JOURNAL_ENV: journal})
    assert result.returncode == 0, result.stderr[-3000:]


def _records(journal: str) -> dict[str, bytes]:
    out = {}
    for kind in ("files", "dirs"):
        for name in sorted(os.listdir(os.path.join(journal, kind))):
            with open(os.path.join(journal, kind, name), "rb") as f:
                out[f"{kind}/{name}"] = f.read()
    return out


def test_java_records_are_pythons(tmp_path):
    tree = tmp_path / "replica"
    (tree / "sub").mkdir(parents=True)
    files = []
    for i, data in enumerate((b"", b"x" * 5000, bytes(range(256)) * 3)):
        path = tree / f"0000{i}.log"
        path.write_bytes(data)
        files.append(str(path))
    (tree / "sub" / "inner").write_bytes(b"inner")
    os.symlink(files[1], tree / "link")  # left out of a listing by both
    paths = [*files, str(tree), str(tree / "sub")]
    python_journal, java_journal = _journal(tmp_path / "py"), _journal(tmp_path / "java")
    for path in paths:
        faults.record(python_journal, path)
    _java_record(java_journal, *paths)
    python, java = _records(python_journal), _records(java_journal)
    assert java == python
    # the keys carry the inode generation (ext4 gives a nonzero one): a recorder that left it out
    # (or wrote 0) would name other inodes than Python does
    if {name.rsplit("-", 1)[1] for name in python} == {"0"}:
        pytest.skip("this file system has no inode generations: the keys' third part is not checked")
