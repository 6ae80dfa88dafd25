"""The machine's ceilings, measured in the same run as the figures they bound.

kstream stores Arrow IPC record batches in files, so the most any produce or
consume can do on this machine is what plain pyarrow does with the same bytes
in the same directories:

* :func:`raw_ipc_write` -- append the batches to one Arrow IPC file
  (``fsync_each_batch``: fsync after every batch, the floor of ``acks=all``);
* :func:`raw_ipc_write_copies` -- one file per directory written in parallel,
  the first ``fsync_copies`` fsynced after every batch (the floor of RF=N);
* :func:`raw_ipc_read` -- memory-map the file and touch every batch;
* :func:`fdatasync_write` -- plain 1 MiB writes, each fdatasynced (the disk).

Each returns a :class:`~kstream.tools.perf.result.PerfResult` whose records are the
rows of the batches and whose bytes are their value bytes, so a ratio to a
kstream run of the same records and record size is a ratio of rates.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from kstream.errors import ConfigError
from kstream.tools.perf.result import PerfResult

VALUE_SCHEMA = pa.schema([pa.field("value", pa.binary(), nullable=False)])
BATCH_BYTES = 1 << 20
MAX_BATCH_BYTES = 1 << 30


def make_batches(num_records: int, record_size: int, batch_bytes: int = BATCH_BYTES, *, seed: int = 0
                 ) -> list[pa.RecordBatch]:
    """Batches of ``max(1, batch_bytes // record_size)`` random values, ``num_records`` in all.

    Every batch shares one random buffer (zero-copy), so memory stays flat
    for large runs; nothing here compresses, so repeats do not matter.
    """
    if num_records < 0 or record_size < 0 or not 0 < batch_bytes <= MAX_BATCH_BYTES:
        raise ConfigError(f"records {num_records}, record size {record_size} must be >= 0 and batch bytes "
                          f"{batch_bytes} 1-{MAX_BATCH_BYTES}")
    rows_per_batch = max(1, batch_bytes // max(record_size, 1))
    data = pa.py_buffer(np.random.default_rng(seed).bytes(rows_per_batch * record_size))

    def build(rows: int) -> pa.RecordBatch:
        offsets = pa.py_buffer(np.arange(rows + 1, dtype=np.int32) * np.int32(record_size))
        values = pa.Array.from_buffers(pa.binary(), rows, [None, offsets, data.slice(0, rows * record_size)])
        return pa.RecordBatch.from_arrays([values], schema=VALUE_SCHEMA)

    full, rest = divmod(num_records, rows_per_batch)
    return [build(rows_per_batch) for _ in range(full)] + ([build(rest)] if rest else [])


def _result(name: str, batches: Sequence[pa.RecordBatch], seconds: float, **config: object) -> PerfResult:
    records = sum(b.num_rows for b in batches)
    record_size = round(sum(_value_bytes(b) for b in batches) / max(records, 1))
    return PerfResult(name, records, max(seconds, 1e-9), record_size,
                      config={"batches": len(batches), **config}).finish([])


def _value_bytes(batch: pa.RecordBatch) -> int:
    values = batch.column(0)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)
    return int(offsets[values.offset + len(values)]) - int(offsets[values.offset])


def raw_ipc_write(path: str, batches: Sequence[pa.RecordBatch], fsync_each_batch: bool) -> PerfResult:
    """Append ``batches`` to a fresh Arrow IPC file; timed from open to close (footer included)."""
    schema = batches[0].schema if batches else VALUE_SCHEMA
    started = time.monotonic()
    with pa.OSFile(path, "wb") as sink:
        with pa.ipc.new_file(sink, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
                if fsync_each_batch:
                    sink.flush()
                    os.fdatasync(sink.fileno())
        if fsync_each_batch:
            sink.flush()
            os.fdatasync(sink.fileno())
    name = "raw IPC write, fdatasync each batch" if fsync_each_batch else "raw IPC write"
    return _result(name, batches, time.monotonic() - started, fsync_each_batch=fsync_each_batch)


def raw_ipc_write_copies(paths: Sequence[str], batches: Sequence[pa.RecordBatch], fsync_copies: int
                         ) -> PerfResult:
    """One IPC file per path written in parallel threads; the first ``fsync_copies`` synced per batch.

    An ``acks=all`` append on RF=N waits for fsyncs of the in-sync replicas:
    this is that work with nothing else (no framing, offsets, locks, metadata).
    """
    schema = batches[0].schema if batches else VALUE_SCHEMA
    sinks = [pa.OSFile(p, "wb") for p in paths]
    writers = [pa.ipc.new_file(sink, schema) for sink in sinks]

    def sync(i: int) -> None:
        sinks[i].flush()
        os.fdatasync(sinks[i].fileno())

    try:
        with ThreadPoolExecutor(len(paths)) as pool:
            started = time.monotonic()
            for batch in batches:
                list(pool.map(lambda w: w.write_batch(batch), writers))  # noqa: B023 (used at once)
                if fsync_copies:
                    list(pool.map(sync, range(fsync_copies)))
            for writer in writers:
                writer.close()
            if fsync_copies:
                list(pool.map(sync, range(fsync_copies)))
            seconds = time.monotonic() - started
    finally:
        for sink in sinks:
            sink.close()
    return _result(f"raw IPC write of {len(paths)} copies, {fsync_copies} fdatasynced", batches, seconds,
                   copies=len(paths), fsync_copies=fsync_copies)


def raw_ipc_read(path: str) -> PerfResult:
    """Memory-map the IPC file at ``path`` and touch every batch (zero-copy; page cache warm)."""
    batches = []
    started = time.monotonic()
    with pa.memory_map(path, "r") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            batches.append(reader.get_batch(i))
        seconds = time.monotonic() - started
        return _result("raw IPC read", batches, seconds)


def fdatasync_write(path: str, total_bytes: int, block_bytes: int = BATCH_BYTES) -> PerfResult:
    """Plain ``write`` of ``block_bytes`` blocks, each followed by ``fdatasync``: the disk's pace.

    Reported as records of ``block_bytes`` bytes, so ``mb_per_s`` is the figure.
    """
    if not 0 < block_bytes <= MAX_BATCH_BYTES:
        raise ConfigError(f"block bytes {block_bytes} must be 1-{MAX_BATCH_BYTES}")
    block = np.random.default_rng(1).bytes(block_bytes)
    blocks = max(1, total_bytes // block_bytes)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        started = time.monotonic()
        for _ in range(blocks):
            os.write(fd, block)
            os.fdatasync(fd)
        seconds = time.monotonic() - started
    finally:
        os.close(fd)
    return PerfResult("write + fdatasync, 1 MiB blocks", blocks, seconds, block_bytes,
                      config={"block_bytes": block_bytes}).finish([])
