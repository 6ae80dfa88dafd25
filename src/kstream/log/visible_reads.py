"""What a reader may see of a range of one partition: the visible-batches loop, written once.

The engine's face for reading records (docs/DESIGN.md, "Layout and layers"): the
Consumer's fetcher and the Spark reader's executors both turn frames into the
record batches a reader at an isolation level may see, and the rule for that
lives here:

* control frames (transaction markers) and the cleaner's fillers hold offsets but
  no record: skipped, as the frames of aborted transactions under read_committed
  (what the prepared :class:`kstream.log.transactions.isolation.Isolation` says);
* a frame the cleaner rewrote (sparse) has offsets without records: gaps are not
  data loss, its batch just holds fewer rows than offsets;
* a batch is sliced to the range asked, ``[offset, end)``: its records below the
  reader's position (a batch read from its middle) and at or past ``end`` (a
  planned end inside a batch) are left out. The slices are zero-copy views of the
  mapped segment file; nothing is copied or re-encoded.

:func:`visible_batches` is the loop over frames a caller already read (the fetcher
reads many partitions per round within one byte budget and checks their checksums
together first); :func:`read_visible` reads a whole range itself (the Spark reader).
Neither writes anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

from kstream.errors import KStreamError, OffsetOutOfRangeError
from kstream.log.storage.log_reader import LogReader
from kstream.log.storage.output import StoredBatch, decode_frame
from kstream.log.storage.records import PayloadCodec
from kstream.log.storage.segment import Frame
from kstream.log.transactions.isolation import Isolation

READ_BYTES = 8 << 20
"""How much :func:`read_visible` reads per look at the log (the first frame always comes whole)."""
OUTCOME_WAIT_S = 5.0
"""Longest :func:`read_visible` waits for a decided transaction's marker to reach the HW."""
_OUTCOME_POLL_S = 0.01


def visible_batches(frames: Sequence[Frame], isolation: Isolation, offset: int, end: int,
                    codec: PayloadCodec, columns: frozenset[str] | None = None) -> Iterator[StoredBatch]:
    """The batches of ``frames`` (read from ``offset``, in order) a reader may see, each sliced
    to ``[offset, end)``. ``isolation`` must be prepared for ``offset``
    (:meth:`Isolation.prepare`); ``columns``: the stored columns to decode (None: all).

    The next offset to read after them is :func:`next_offset`, past skipped frames too."""
    visible = isolation.visible
    for frame in frames:
        header = frame.header
        if not visible(header) or header.filler:  # a transaction marker, aborted, or a filler
            offset = header.next_offset
            continue
        stored = decode_frame(codec, frame, columns).slice_from(offset).until(end)
        offset = stored.next_offset
        if stored.batch.num_rows:  # (a sparse frame's records may all lie outside the range)
            yield stored


def next_offset(frames: Sequence[Frame], offset: int, end: int) -> int:
    """Where a reader that read ``frames`` from ``offset`` reads next (at most ``end``)."""
    return min(frames[-1].header.next_offset, end) if frames else offset


def read_visible(reader: LogReader, isolation: Isolation, start: int, end: int, high_watermark: int,
                 codec: PayloadCodec, columns: frozenset[str] | None = None,
                 max_bytes: int = READ_BYTES,
                 on_frames: Callable[[Sequence[Frame]], None] | None = None,
                 high_watermark_now: Callable[[], int] | None = None) -> Iterator[StoredBatch]:
    """Every batch a reader at ``isolation`` may see of ``[start, end)``, read from ``reader``
    ``max_bytes`` at a time. ``high_watermark``: the HW the aborted transactions are loaded
    at, at least the one ``end`` was planned with (a transaction below ``end`` may have its
    marker between ``end`` and that HW). OffsetOutOfRangeError when the log holds no data at
    an offset below ``end`` (deleted, or cut by a power loss since ``end`` was planned).
    ``on_frames``: called with each look's frames before their batches are handed out (the
    key index notes where each frame is).

    Under read_committed, ``end`` was planned at most at the planner's LSO, so every
    transaction below it had a fixed outcome then. When this reader's view still shows one
    of them open (the planner applied its decision from the metadata; the metadata's row was
    ended since, its marker appended but not yet below the HW this reader read), its frames
    are neither shown nor skipped blindly: the view is read again (``high_watermark_now``:
    the partition's HW now) until the marker is below the HW, for at most
    :data:`OUTCOME_WAIT_S`; then a KStreamError says to retry the read."""
    isolation.prepare(start, high_watermark=high_watermark)
    _await_outcomes(isolation, start, end, high_watermark, high_watermark_now)
    offset = start
    while offset < end:
        frames = reader.read(offset, max_bytes, end_offset=end)
        if not frames:
            raise OffsetOutOfRangeError(
                f"{isolation.topic}-{isolation.partition} has no data at offset {offset}, below the "
                f"planned end {end}")
        if on_frames is not None:
            on_frames(frames)
        yield from visible_batches(frames, isolation, offset, end, codec, columns)
        offset = next_offset(frames, offset, end)


def _await_outcomes(isolation: Isolation, start: int, end: int, high_watermark: int,
                    high_watermark_now: Callable[[], int] | None) -> None:
    """Prepare ``isolation`` again until no transaction it sees open starts below ``end``
    (see :func:`read_visible`), at most :data:`OUTCOME_WAIT_S`."""
    deadline = time.monotonic() + OUTCOME_WAIT_S
    while isolation.first_open is not None and isolation.first_open < end:
        if time.monotonic() >= deadline:
            raise KStreamError(
                f"{isolation.topic}-{isolation.partition}: the transaction at offset {isolation.first_open} "
                f"is open in this reader's view, below the planned end {end} (planned when its outcome was "
                f"fixed), and its marker did not reach the high watermark in {OUTCOME_WAIT_S}s; retry the read")
        time.sleep(_OUTCOME_POLL_S)
        if high_watermark_now is not None:
            high_watermark = max(high_watermark, high_watermark_now())
        isolation.prepare(start, high_watermark=high_watermark)
