"""The partition lock excludes every other writer: Python (this kstream, in this process or
another), an older kstream that takes only ``flock``, and Java's ``FileChannel.lock`` (the
JVM writer's lock kind; jvm/src/test/java/io/kstream/spark/log/LockProbe.java, compiled once
per session by tests/java_probes.py and run as a child JVM, skipped with one line without
``java``), also as the Java writer takes it (io.kstream.spark.log.PartitionLock, through
PartitionLockProbe.java; skipped with one line without a built jar)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading

import pytest

from java_probes import probe, probe_command
from kstream.jars import jar_path
from kstream.log.storage import file_lock
from kstream.log.storage.lock import PartitionLock

PROBE = probe("log/LockProbe.java")
HELPER_PROBE = probe("log/PartitionLockProbe.java")
CHILD_TIMEOUT_S = 60
STILL_WAITING_S = 0.5  # a locker that got through within this would have failed the exclusion
# An old kstream: flock only, then holds it until stdin closes.
OLD_HOLDER = ("import fcntl, os, sys\n"
              "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
              "fcntl.flock(fd, fcntl.LOCK_EX)\n"
              "print('held', flush=True)\n"
              "sys.stdin.read()\n")
OLD_TRIER = ("import fcntl, os, sys\n"
             "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
             "try:\n"
             "    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
             "    print('acquired')\n"
             "except BlockingIOError:\n"
             "    print('busy')\n")
NEW_TRIER = ("import os, sys\n"
             "from kstream.log.storage import file_lock\n"
             "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
             "print('acquired' if file_lock.try_lock_exclusive(fd) else 'busy')\n")

needs_java = pytest.mark.skipif(shutil.which("java") is None,
                                reason="no java on PATH (scripts/ensure-java.sh installs it): Java lock tests not run")


needs_jar = pytest.mark.skipif(shutil.which("java") is None or jar_path() is None,
                               reason="no java or no kstream jar (jvm/build.sh): Java PartitionLock tests not run")


def _holder(command: list[str]) -> subprocess.Popen[str]:
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    line = child.stdout.readline()  # type: ignore[union-attr]
    assert line.startswith("held"), f"the holder did not take the lock: {line!r}"
    return child


def _release(child: subprocess.Popen[str]) -> None:
    child.stdin.close()  # type: ignore[union-attr]
    assert child.wait(CHILD_TIMEOUT_S) == 0


def _try(command: list[str]) -> str:
    result = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return result.stdout.strip()


def _waits_for_release(path: str, release) -> None:
    """PartitionLock(path) blocks while another holds the file, and gets it once ``release()`` ran."""
    entered = threading.Event()
    lock = PartitionLock(path)

    def take() -> None:
        with lock:
            entered.set()

    taker = threading.Thread(target=take)
    taker.start()
    try:
        assert not entered.wait(STILL_WAITING_S), "PartitionLock got a lock file another writer holds"
    finally:
        release()
        taker.join(CHILD_TIMEOUT_S)
        lock.close()
    assert entered.is_set()


def test_python_excludes_python_in_this_process_and_another(tmp_path):
    path = str(tmp_path / "p.lock")
    held = PartitionLock(path)
    with held:
        other = os.open(path, os.O_RDWR)
        try:
            assert not file_lock.try_lock_exclusive(other)  # another open file description
        finally:
            os.close(other)
        assert _try([sys.executable, "-c", NEW_TRIER, path]) == "busy"
    assert _try([sys.executable, "-c", NEW_TRIER, path]) == "acquired"
    held.close()


def test_a_flock_only_holder_of_an_older_kstream_excludes_the_partition_lock(tmp_path):
    path = str(tmp_path / "p.lock")
    child = _holder([sys.executable, "-c", OLD_HOLDER, path])
    _waits_for_release(path, lambda: _release(child))


def test_the_partition_lock_excludes_a_flock_only_locker_of_an_older_kstream(tmp_path):
    path = str(tmp_path / "p.lock")
    lock = PartitionLock(path)
    with lock:
        assert _try([sys.executable, "-c", OLD_TRIER, path]) == "busy"
    assert _try([sys.executable, "-c", OLD_TRIER, path]) == "acquired"
    lock.close()


def test_a_failed_try_leaves_no_half_taken_lock(tmp_path):
    """flock free, the OFD lock held elsewhere: try takes neither, so the flock stays free."""
    path = str(tmp_path / "p.lock")
    ofd_only = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.fcntl(ofd_only, fcntl.F_OFD_SETLK, file_lock._whole_file(fcntl.F_WRLCK))
    trier = os.open(path, os.O_RDWR)
    try:
        assert not file_lock.try_lock_exclusive(trier)
        assert _try([sys.executable, "-c", OLD_TRIER, path]) == "acquired"
    finally:
        os.close(trier)
        os.close(ofd_only)


@needs_java
def test_a_java_filechannel_lock_holder_excludes_the_partition_lock(tmp_path):
    path = str(tmp_path / "p.lock")
    java = _holder(probe_command(PROBE, "hold", path))
    probe = os.open(path, os.O_RDWR)
    try:
        assert file_lock.record_lock_holder(probe) == java.pid  # a POSIX lock over the whole file
    finally:
        os.close(probe)
    _waits_for_release(path, lambda: _release(java))


@needs_java
def test_the_partition_lock_excludes_a_java_filechannel_locker(tmp_path):
    path = str(tmp_path / "p.lock")
    lock = PartitionLock(path)
    with lock:
        assert _try(probe_command(PROBE, "try", path)) == "busy"
    assert _try(probe_command(PROBE, "try", path)) == "acquired"
    lock.close()


@needs_jar
def test_a_java_partition_lock_holder_excludes_the_partition_lock(tmp_path):
    path = str(tmp_path / "p.lock")
    java = _holder(probe_command(HELPER_PROBE, "hold", path, classpath=[jar_path()]))
    _waits_for_release(path, lambda: _release(java))


@needs_jar
def test_the_java_partition_lock_times_out_naming_the_python_holder(tmp_path):
    path = str(tmp_path / "p.lock")
    lock = PartitionLock(path)
    with lock:
        said = _try(probe_command(HELPER_PROBE, "try", path, "200", classpath=[jar_path()]))
        assert said.startswith("busy: KStreamError: the partition lock " + path), said
        assert f"FLOCK by pid {os.getpid()}" in said and "OFDLCK" in said, said
    assert _try(probe_command(HELPER_PROBE, "try", path, "0", classpath=[jar_path()])) == "acquired"
    lock.close()
