"""Checking frame payload checksums, spread over the CPU's cores when there is enough to check.

A checked read is mostly checksumming: CRC-32C runs near memory speed, and a
1 MiB frame takes about 100 µs. The check releases the GIL, so when a read
returns several frames (a fetch round over many partitions, or a long read of
one), the frames are split by bytes between this thread and worker threads
and checked at the same time. Splitting a round, not a frame, keeps the
hand-offs between threads to one per round (a hand-off per frame costs more
than it saves).

Callers get one verdict per frame and hand out nothing from the first bad
frame on (see :meth:`kstream.log.storage.log_reader.LogReader.keep_good`).
"""

from __future__ import annotations

import os
from itertools import pairwise

import crc32c as _crc32c

from kstream.log.storage.segment import Frame
from kstream.log.storage.thread_pool import LazyThreadPool

SPLIT_MIN_BYTES = 2 << 20
"""Below this many payload bytes in one call, checking stays in the calling thread."""

_MAX_THREADS = 4


_THREADS = max(1, min(_MAX_THREADS, os.cpu_count() or 1))


def _threads() -> int:
    # Counted once: os.cpu_count() reads /sys each call (tens of µs, more than checking a small
    # frame), and every checked read asks.
    return _THREADS


_workers = LazyThreadPool(max(1, _threads() - 1), "kstream-crc")


def _check(frames: list[Frame]) -> list[bool]:
    return [_crc32c.crc32c(f.payload, gil_release_mode=1) == f.header.payload_crc for f in frames]


def payloads_good(frames: list[Frame]) -> list[bool]:
    """For each frame, whether its payload matches the checksum in its header."""
    total = sum(f.header.payload_size for f in frames)
    parts = min(_threads(), len(frames), max(1, total // (SPLIT_MIN_BYTES // 2)))
    if parts < 2:
        return _check(frames)
    # Cut the list into ``parts`` runs of about equal bytes; this thread checks the first.
    cuts = [0]
    running = 0
    for i, frame in enumerate(frames):
        running += frame.header.payload_size
        if running >= total * len(cuts) / parts and len(cuts) < parts:
            cuts.append(i + 1)
    cuts.append(len(frames))
    runs = [frames[a:b] for a, b in pairwise(cuts) if b > a]
    futures = [_workers.get().submit(_check, run) for run in runs[1:]]
    verdicts = _check(runs[0])
    for future in futures:
        verdicts += future.result()
    return verdicts
