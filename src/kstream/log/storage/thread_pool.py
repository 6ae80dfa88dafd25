"""A thread pool made on first use and made anew in a forked child.

Spark forks Python workers, and a forked child has none of its parent's
threads: a pool inherited across a fork would hang on its first task. Every
pool kstream keeps for the life of an object (fsyncs per partition, checksum
workers, a producer's background fsyncs) is one of these.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor


class LazyThreadPool:
    """``get()`` returns this process's pool, making it when needed."""

    def __init__(self, workers: int, name: str):
        self.workers = workers
        self.name = name
        self._pool: ThreadPoolExecutor | None = None
        self._pid = 0

    def get(self) -> ThreadPoolExecutor:
        if self._pool is None or self._pid != os.getpid():
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=self.name)
            self._pid = os.getpid()
        return self._pool

    def shutdown(self, wait: bool = True) -> None:
        """Stop this process's pool (one inherited from a parent is only dropped)."""
        if self._pool is not None and self._pid == os.getpid():
            self._pool.shutdown(wait=wait)
        self._pool = None
