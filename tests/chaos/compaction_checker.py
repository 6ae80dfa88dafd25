"""The checker of the log-cleaner rounds: what readers of a compacted topic see, against a
dict oracle of every write (tests/chaos/clean_rounds.py).

A compacted topic keeps the latest record of each key, so the per-record promises of
:mod:`chaos.checker` (every acknowledged record present) do not hold; these do, per
partition, for every read of the round (a final read, or a reader's pass run while
the cleaner swapped segments under it):

* every record read is one that was written, at the offset it was written at, with its
  key and value, and not one of an aborted transaction (else "phantom");
* offsets strictly increase within one read;
* the latest acknowledged (or committed) record of every key survives: a read to the
  end sees it, or a newer record of the key (else "lost"); a tombstone may be gone only
  when ``delete.retention.ms`` let the cleaner drop it;
* a key whose latest acknowledged record is a tombstone is absent or a tombstone, never
  an older value ("resurrected", counted as phantom);
* nothing at or above the cleaner's end offset (``cleaner-offset-checkpoint``, read after
  the round's last clean) was removed: there every acknowledged record is present.

A write is *definite* when its writer was told so (acks=all delivered, or its
transaction committed), *aborted* when its transaction was, and *maybe* otherwise (in
flight at a kill, or its transaction's outcome unknown): a maybe write may or may not
be visible, but only at an offset it could have, with its key and value.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

TOMBSTONE = "-"
DEFINITE = ("acked", "committed")


@dataclass
class Write:
    n: int
    partition: int
    key: bytes
    value: bytes | None
    txn: int | None
    offset: int | None = None
    state: str = "maybe"  # acked | committed | aborted | maybe


@dataclass
class Read:
    """One read of one partition: (offset, key, value) in the order returned."""

    label: str
    partition: int
    records: list[tuple[int, bytes, bytes | None]]
    error: str | None = None
    end: int | None = None  # a pass's end (the LSO when it began): what it had to read up to
    known: int | None = None  # only writes with n below this existed (None: all)
    clean_end: int | None = None  # the cleaner's end offset after the round's last clean


@dataclass
class KeyedHistory:
    writes: dict[int, Write] = field(default_factory=dict)
    tombstones_expire: bool = True  # delete.retention.ms short: the cleaner may drop tombstones
    reads: list[Read] = field(default_factory=list)
    cleans: int = 0  # cleans the cleaner children reported (for the table's sake)

    def add_output(self, output: Iterable[str]) -> None:
        """Parse a clean_child ``keyed`` writer's lines into writes."""
        txns: dict[int, list[int]] = {}
        for line in output:
            parts = line.split(" ")
            if parts[0] == "I" and len(parts) == 6:
                n, p = int(parts[1]), int(parts[2])
                txn = None if parts[5] == TOMBSTONE else int(parts[5])
                self.writes[n] = Write(n, p, parts[3].encode(),
                                       None if parts[4] == TOMBSTONE else parts[4].encode(), txn)
                if txn is not None:
                    txns.setdefault(txn, []).append(n)
            elif parts[0] == "D" and len(parts) == 3 and int(parts[1]) in self.writes:
                write = self.writes[int(parts[1])]
                write.offset = int(parts[2])
                if write.txn is None:
                    write.state = "acked"
            elif parts[0] in ("C", "X") and len(parts) == 2:
                for n in txns.get(int(parts[1]), []):
                    self.writes[n].state = "committed" if parts[0] == "C" else "aborted"

    def check(self, v) -> None:
        """Add what is wrong to the :class:`chaos.checker.Verdict` ``v``."""
        v.acknowledged += sum(w.state in DEFINITE for w in self.writes.values())
        for read in self.reads:
            if read.error is not None:
                v.note(f"{read.label}: partition {read.partition}: read failed: {read.error[:300]}")
                continue
            self._check_read(read, v)

    def _check_read(self, read: Read, v) -> None:
        writes = [w for w in self.writes.values()
                  if w.partition == read.partition and (read.known is None or w.n < read.known)]
        at = {w.offset: w for w in writes if w.offset is not None}
        unplaced = [w for w in writes if w.offset is None and w.state == "maybe"]
        where = f"{read.label}: partition {read.partition}"
        last: dict[bytes, tuple[int, bytes | None]] = {}  # key -> (offset, value) of its last record read
        previous = -1
        for offset, key, value in read.records:
            if offset <= previous:
                v.note(f"{where}: offset {offset} read after {previous}")
            previous = offset
            write = at.get(offset)
            if write is None:  # a write in flight at a kill landed here, or nobody wrote this
                write = next((w for w in unplaced if (w.key, w.value) == (key, value)), None)
                if write is None:
                    v.phantom += 1
                    v.note(f"{where}: offset {offset} holds {key!r}={value!r}, which nobody wrote")
                    continue
                unplaced.remove(write)
            elif (write.key, write.value) != (key, value):
                v.phantom += 1
                v.note(f"{where}: offset {offset} holds {key!r}={value!r}; {write.key!r}={write.value!r} "
                       "was written there")
                continue
            if write.state == "aborted":
                v.phantom += 1
                v.note(f"{where}: read {key!r}={value!r} at {offset}, a record of aborted transaction "
                       f"{write.txn}")
            last[key] = (offset, value)
        self._check_latest(read, writes, last, where, v)

    def _check_latest(self, read: Read, writes: list[Write], last: dict[bytes, tuple[int, bytes | None]],
                      where: str, v) -> None:
        latest: dict[bytes, Write] = {}
        for w in writes:
            if w.state in DEFINITE and w.offset is not None and (read.end is None or w.offset < read.end):
                if w.key not in latest or w.offset > latest[w.key].offset:  # type: ignore[operator]
                    latest[w.key] = w
        for key, want in sorted(latest.items()):
            assert want.offset is not None
            newer = [w for w in writes if w.key == key and w.state != "aborted"
                     and (w.offset is None or w.offset > want.offset)]
            got = last.get(key)
            if got is not None and got[0] >= want.offset:
                continue
            if read.end is not None and newer:
                continue  # a pass that ends early: the cleaner may have removed it for a newer one
            if got is None and self.tombstones_expire and (
                    want.value is None or any(w.value is None for w in newer)):
                continue  # the latest (or a maybe newer) tombstone was past delete.retention.ms
            if want.value is None and got is not None and got[1] is not None:
                v.phantom += 1
                v.note(f"{where}: deleted key {key!r} resurrected: tombstone at {want.offset}, "
                       f"older value {got[1]!r} at {got[0]} read")
            else:
                v.lost += 1
                v.note(f"{where}: latest record of {key!r} ({want.value!r} at {want.offset}) lost; "
                       f"read {'nothing' if got is None else f'{got[1]!r} at {got[0]}'} of that key")
        if read.clean_end is not None:
            seen = {offset for offset, _, _ in read.records}
            for w in writes:
                if w.state in DEFINITE and w.offset is not None and w.offset >= read.clean_end \
                        and w.offset not in seen:
                    v.lost += 1
                    v.note(f"{where}: {w.key!r}={w.value!r} at {w.offset} removed, though at or above the "
                           f"cleaner's end offset {read.clean_end}")
