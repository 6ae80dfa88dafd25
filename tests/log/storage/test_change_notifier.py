"""ChangeNotifier wakes on a change even when its inotify descriptor is past FD_SETSIZE."""

from __future__ import annotations

import os
import resource
import threading
import time

import pytest

from kstream.log.storage.change_notifier import _LIBC, ChangeNotifier


@pytest.mark.skipif(_LIBC is None, reason="no inotify here: the notifier polls")
def test_wakes_with_a_descriptor_past_1024(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the hard limit on open files is {hard}: cannot open past 1024")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = []
    try:
        while not held or held[-1] < 1030:
            held.append(os.open(os.devnull, os.O_RDONLY))
        notifier = ChangeNotifier(max_sleep_s=1.0)
        notifier.watch(str(tmp_path))
        notifier.wait(0.01)  # the first wait creates the watch and returns
        assert notifier._fd > 1024
        writer = threading.Timer(0.05, lambda: (tmp_path / "new").write_bytes(b"x"))
        writer.start()
        started = time.monotonic()
        notifier.wait(10.0)  # select() raised ValueError here
        assert time.monotonic() - started < 5.0  # woken by the write, not by the timeout
        writer.join()
        notifier.close()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.skipif(_LIBC is None, reason="no inotify here: the notifier polls")
def test_wakes_on_files_appearing_and_on_watched_file_writes_not_on_writes_inside_a_directory(tmp_path):
    """A frame appended to a segment (or an index entry, or the recovery point) is not readable
    until the high watermark moves in the lock file: a reader woken by those writes spent a
    fetch round for nothing, late for the high watermark's wake."""
    replica = tmp_path / "t-0"
    replica.mkdir()
    segment = replica / "00000000000000000000.log"
    segment.write_bytes(b"")
    lock_file = tmp_path / "t-0.lock"
    lock_file.write_bytes(b"\0" * 16)
    notifier = ChangeNotifier(max_sleep_s=1.0)
    notifier.watch(str(replica))
    notifier.watch(str(lock_file))
    assert notifier.wait(0.01) is False  # the first wait makes the watches
    with open(segment, "ab") as f:
        f.write(b"frame")
    assert notifier.wait(0.05) is False  # a write inside the directory: no wake
    with open(lock_file, "r+b") as f:
        f.write(b"hw")
    assert notifier.wait(30.0) is True  # the high watermark moved
    (replica / "00000000000000000005.log").write_bytes(b"")
    assert notifier.wait(30.0) is True  # a new segment
    os.remove(segment)
    assert notifier.wait(30.0) is True  # retention
    assert notifier.wait(0.01) is False  # nothing left pending
    notifier.close()
