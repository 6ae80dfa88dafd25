"""A group member (child_member.py) that stops itself (SIGSTOP) at a chosen point of the
group protocol, as a SIGSTOP, a long GC pause or swapping landing there would.

  child_stopping_member.py CLUSTER GROUP TOPIC OUT_FILE NAME PAUSE_FLAG STATUS_FILE WHERE

Once the file PAUSE_FLAG exists, the process stops once, at WHERE:

- ``heartbeat``: inside its heartbeat thread's next heartbeat. If the heartbeat writes to
  the metadata database, the stop lands inside that write transaction (an autocommit
  statement is run as BEGIN IMMEDIATE, statement, stop, COMMIT: where a stop landing during
  the statement's WAL fsync leaves it); a heartbeat that writes nothing stops at its end.
- ``commit-check``: in the main thread, right after a commit's membership check passed
  (``Coordinator.begin_commit`` returned), before the offsets are written.

"paused" is appended to STATUS_FILE before the stop, "resumed" after SIGCONT.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import child_member

from kstream.groups import coordinator as coordinator_module

_WRITES = ("UPDATE", "INSERT", "DELETE", "REPLACE")


def main(cluster: str, group: str, topic: str, out_path: str, name: str, pause_flag: str,
         status_path: str, where: str) -> None:
    paused: list[int] = []

    def stop_once() -> bool:
        if paused or not os.path.exists(pause_flag):
            return False
        paused.append(1)
        with open(status_path, "a") as f:
            f.write("paused\n")
        # Directed at this thread: a process-directed SIGSTOP sent from a thread that is not
        # the main one may stop the process only after this thread has run on (and committed).
        signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)
        with open(status_path, "a") as f:
            f.write("resumed\n")
        return True

    class StoppingConnection:
        """The heartbeat's connection: stops inside the first write transaction it opens."""

        def __init__(self, real):
            self._real = real

        def execute(self, sql, *args):
            words = sql.lstrip().upper()
            if words.startswith("BEGIN IMMEDIATE"):
                result = self._real.execute(sql, *args)
                stop_once()
                return result
            if words.startswith(_WRITES) and not self._real.in_transaction and not paused \
                    and os.path.exists(pause_flag):
                self._real.execute("BEGIN IMMEDIATE")
                result = self._real.execute(sql, *args)
                stop_once()
                self._real.execute("COMMIT")
                return result
            return self._real.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self._real, name)

    coordinator = coordinator_module.Coordinator
    if where == "heartbeat":
        real_heartbeat = coordinator.heartbeat

        def heartbeat(self, *args, **kwargs):
            metadata = self.metadata
            real = metadata.connection
            metadata._connection = StoppingConnection(real)
            try:
                result = real_heartbeat(self, *args, **kwargs)
                stop_once()  # it wrote nothing: stop at its end
                return result
            finally:
                metadata._connection = real

        coordinator.heartbeat = heartbeat
    elif where == "commit-check":
        real_begin = coordinator.begin_commit

        def begin_commit(self, *args, **kwargs):
            token = real_begin(self, *args, **kwargs)
            stop_once()
            return token

        coordinator.begin_commit = begin_commit
    else:
        raise SystemExit(f"unknown stop point {where!r}")
    child_member.main(cluster, group, topic, out_path, name)


if __name__ == "__main__":
    main(*sys.argv[1:9])
