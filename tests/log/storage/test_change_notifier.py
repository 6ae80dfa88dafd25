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
