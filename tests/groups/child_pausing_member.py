"""A group member (child_member.py) that stops itself (SIGSTOP) inside an offset commit.

  child_pausing_member.py CLUSTER GROUP TOPIC OUT_FILE NAME PAUSE_FLAG STATUS_FILE

Once the file PAUSE_FLAG exists, the next write to the group offsets table (in
the middle of a commit) first appends "paused" to STATUS_FILE and stops the
whole process, as a SIGSTOP, a long GC pause or swapping would. After SIGCONT
it goes on with that write; how each later commit ends is appended to
STATUS_FILE ("committed", or "fenced" for a FencedError).
"""

from __future__ import annotations

import os
import signal
import sys

import child_member

from kstream.errors import FencedError
from kstream.groups import service
from kstream.groups.offsets_table import OffsetsTable


def main(cluster: str, group: str, topic: str, out_path: str, name: str, pause_flag: str,
         status_path: str) -> None:
    paused = []

    def status(line: str) -> None:
        with open(status_path, "a") as f:
            f.write(line + "\n")

    real_write = OffsetsTable.write

    def write(self, *args, **kwargs):
        if not paused and os.path.exists(pause_flag):
            paused.append(1)
            status("paused")
            os.kill(os.getpid(), signal.SIGSTOP)
            status("resumed")
        return real_write(self, *args, **kwargs)

    real_commit = service.ConsumerGroups.commit

    def commit(self, *args, **kwargs):
        try:
            result = real_commit(self, *args, **kwargs)
        except FencedError:
            if paused:
                status("fenced")
            raise
        if paused:
            status("committed")
        return result

    OffsetsTable.write = write
    service.ConsumerGroups.commit = commit
    child_member.main(cluster, group, topic, out_path, name)


if __name__ == "__main__":
    main(*sys.argv[1:8])
