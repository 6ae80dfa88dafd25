"""The transaction index: entry layout, the derivation rule, writer hooks and the reader."""

from __future__ import annotations

import os
import random
import struct

import pytest

from helpers import encoded, open_log
from kstream.errors import InvalidRecordError
from kstream.log.storage import format as fmt
from kstream.log.storage import txn_index
from kstream.log.storage.records import PayloadCodec, batch_from_records
from kstream.log.storage.retention import list_segment_bases
from kstream.log.storage.txn_index_reader import TxnIndexReader, fold
from txn_helpers import assert_files_match_frames, file_entries, files_state, frame_events, marker, oracle, txn_data

DATA, COMMIT, ABORT = fmt.TXN_DATA, fmt.TXN_COMMIT, fmt.TXN_ABORT


# -- the layout ------------------------------------------------------------------------------


def test_entry_round_trip_and_layout():
    raw = fmt.pack_txn_entry(ABORT, (1 << 40) + 5, 123456789)
    assert len(raw) == fmt.TXN_INDEX_ENTRY_SIZE == 24
    assert raw[0] == ABORT and raw[1:4] == b"\0\0\0"
    assert struct.unpack_from("<qq", raw, 4) == ((1 << 40) + 5, 123456789)
    assert struct.unpack_from("<I", raw, 20)[0] == fmt.crc32c(raw[:20])
    assert fmt.unpack_txn_entry(raw) == (ABORT, (1 << 40) + 5, 123456789)


@pytest.mark.parametrize("byte", range(24))
def test_any_flipped_byte_makes_the_entry_unreadable(byte):
    raw = bytearray(fmt.pack_txn_entry(DATA, 7, 99))
    raw[byte] ^= 0x40
    assert fmt.unpack_txn_entry(bytes(raw)) is None


def test_unknown_kind_or_reserved_bytes_are_not_entries():
    for kind in (0, 4, 255):
        raw = bytearray(struct.pack("<B3xqq", kind, 1, 2))
        raw += struct.pack("<I", fmt.crc32c(bytes(raw)))
        assert fmt.unpack_txn_entry(bytes(raw)) is None
    raw = bytearray(struct.pack("<B3xqq", DATA, 1, 2))
    raw[2] = 1
    raw += struct.pack("<I", fmt.crc32c(bytes(raw)))
    assert fmt.unpack_txn_entry(bytes(raw)) is None


def test_valid_prefix_stops_at_a_torn_or_bad_or_decreasing_entry():
    good = [fmt.pack_txn_entry(DATA, 1, 10), fmt.pack_txn_entry(COMMIT, 1, 12)]
    assert fmt.unpack_txn_entries(b"".join(good)) == ([(DATA, 1, 10), (COMMIT, 1, 12)], True)
    assert fmt.unpack_txn_entries(b"") == ([], True)
    torn = b"".join(good) + fmt.pack_txn_entry(DATA, 2, 13)[:10]
    assert fmt.unpack_txn_entries(torn) == ([(DATA, 1, 10), (COMMIT, 1, 12)], False)
    bad = good[0] + b"\xff" * 24 + good[1]
    assert fmt.unpack_txn_entries(bad) == ([(DATA, 1, 10)], False)
    backwards = good[1] + good[0]
    assert fmt.unpack_txn_entries(backwards) == ([(COMMIT, 1, 12)], False)


def test_marker_kind_reads_the_marker_payload_and_nothing_else():
    codec = PayloadCodec()
    for value, kind in ((b"COMMIT", COMMIT), (b"ABORT", ABORT), (b"commit", None), (b"", None)):
        payload = codec.encode(batch_from_records([value], None, None, None))
        assert fmt.marker_kind(payload.to_bytes(), payload.schema_length) == kind
    two = codec.encode(batch_from_records([b"COMMIT", b"COMMIT"], None, None, None))
    assert fmt.marker_kind(two.to_bytes(), two.schema_length) is None
    assert fmt.marker_kind(b"garbage" * 10, 8) is None
    lz4 = PayloadCodec("lz4").encode(batch_from_records([b"ABORT"], None, None, None))
    assert fmt.marker_kind(lz4.to_bytes(), lz4.schema_length) == ABORT


def test_entry_kind_from_attributes():
    assert fmt.txn_entry_kind(0) is None
    assert fmt.txn_entry_kind(fmt.CONTROL) is None
    assert fmt.txn_entry_kind(fmt.TRANSACTIONAL) == DATA
    assert fmt.txn_entry_kind(fmt.TRANSACTIONAL | fmt.CONTROL) == 0  # a marker: see its payload


# -- the derivation rule ---------------------------------------------------------------------------


def _fold(entries):
    open_, aborted = {}, []
    fold([fmt.TxnIndexEntry(*e) for e in entries], open_, aborted)
    return open_, aborted


def test_rule_data_opens_once_markers_close_abort_yields_a_range():
    assert _fold([(DATA, 1, 5), (DATA, 1, 7), (DATA, 2, 8)]) == ({1: 5, 2: 8}, [])
    assert _fold([(DATA, 1, 5), (DATA, 2, 6), (COMMIT, 1, 9)]) == ({2: 6}, [])
    assert _fold([(DATA, 1, 5), (ABORT, 1, 9), (DATA, 1, 10)]) == ({1: 10}, [(1, 5, 9)])
    # A marker with nothing open (an expiry's marker for a transaction with no frame here) is ignored.
    assert _fold([(ABORT, 3, 1), (COMMIT, 3, 2)]) == ({}, [])


def test_rule_matches_the_oracle_on_random_histories():
    rng = random.Random(14)
    for _ in range(300):
        entries, offset = [], 0
        for _ in range(rng.randrange(40)):
            offset += rng.randrange(1, 4)
            entries.append((rng.choice((DATA, DATA, COMMIT, ABORT)), rng.randrange(3), offset))
        hw = rng.randrange(offset + 2)
        open_, aborted = _fold([e for e in entries if e[2] < hw])
        assert (open_, aborted) == oracle(entries, hw)


# -- writer and reader on one replica ---------------------------------------------------------------


@pytest.fixture
def replica(tmp_path):
    return str(tmp_path / "t-0")


def test_each_transactional_frame_gets_an_entry_and_plain_frames_none(replica):
    log = open_log(replica)
    log.append(encoded([b"plain"]))                    # 0
    log.append(txn_data([b"a", b"b"], 7))              # 1-2
    log.append(txn_data([b"c"], 8))                    # 3
    log.append(marker(7, commit=False))                # 4
    log.append(marker(8, commit=True))                 # 5
    log.flush()
    assert file_entries(replica, 0) == [(DATA, 7, 1), (DATA, 8, 3), (ABORT, 7, 4), (COMMIT, 8, 5)]
    state = files_state(replica, 6)
    assert (state.open, state.aborted, state.last_stable_offset) == ({}, ((7, 1, 4),), 6)
    state = files_state(replica, 4)  # the markers are not below the HW yet
    assert (state.open, state.last_stable_offset) == ({7: 1, 8: 3}, 1)
    log.close()


def test_a_control_frame_that_is_no_marker_is_refused_unwritten(replica):
    log = open_log(replica)
    bogus = encoded([b"neither"])
    bogus = type(bogus)(bogus.payload, 1, 0, 0, fmt.CONTROL | fmt.TRANSACTIONAL, 3, 0)
    with pytest.raises(InvalidRecordError, match="COMMIT or ABORT"):
        log.append(bogus)
    assert log.log_end_offset() == 0
    log.close()


def test_every_segment_gets_an_index_and_retention_removes_it(replica):
    log = open_log(replica, segment_bytes=1200)
    for i in range(12):
        log.append(txn_data([b"x" * 100], 1) if i % 2 else encoded([b"y" * 100]))
        if i % 4 == 3:
            log.append(marker(1, commit=bool(i % 8 == 3)))
    bases = list_segment_bases(replica)
    assert len(bases) > 2
    for base in bases:
        assert file_entries(replica, base) is not None
    log.close()
    log = open_log(replica, segment_bytes=1200, retention_bytes=1)
    assert log.apply_retention() == len(bases) - 1
    left = list_segment_bases(replica)
    names = os.listdir(replica)
    assert [n for n in names if n.endswith(fmt.TXN_INDEX_SUFFIX)] == [
        fmt.segment_file_name(b, fmt.TXN_INDEX_SUFFIX) for b in left]
    log.close()


def test_the_reader_trusts_entries_below_the_recovery_point_and_derives_the_rest(replica):
    log = open_log(replica)
    log.append(txn_data([b"a"], 1))   # 0
    log.flush()                       # the recovery point covers offset 0
    log.append(marker(1, False))      # 1: past the recovery point
    path = txn_index.txn_index_path(replica, 0)
    # A lie below the recovery point is believed (the file is what readers use there) ...
    with open(path, "r+b") as f:
        f.write(fmt.pack_txn_entry(DATA, 2, 0))
    assert files_state(replica, 2).open == {2: 0}
    # ... and one past it is not: the frames are.
    with open(path, "r+b") as f:
        f.write(fmt.pack_txn_entry(DATA, 1, 0) + fmt.pack_txn_entry(COMMIT, 1, 1))
    assert files_state(replica, 2).aborted == ((1, 0, 1),)
    log.close()


def test_a_missing_or_unreadable_recovery_point_trusts_no_entry(replica):
    log = open_log(replica)
    log.append(txn_data([b"a"], 1))
    log.append(marker(1, False))
    log.flush()
    with open(txn_index.txn_index_path(replica, 0), "wb") as f:  # lies everywhere
        f.write(fmt.pack_txn_entry(DATA, 5, 0))
    point = os.path.join(replica, fmt.RECOVERY_POINT_FILE)
    os.unlink(point)
    assert files_state(replica, 2).aborted == ((1, 0, 1),)
    with open(point, "wb") as f:
        f.write(b"\x01" * 1024)
    assert files_state(replica, 2).aborted == ((1, 0, 1),)
    log.close()


def test_a_polling_reader_reads_only_what_changed(replica, monkeypatch):
    log = open_log(replica, segment_bytes=900)
    for i in range(10):
        log.append(txn_data([b"v" * 100], i % 3))
        log.append(marker(i % 3, commit=i % 2 == 0))
    log.flush()
    end = log.log_end_offset()
    reader = TxnIndexReader(replica)
    first = reader.state(end)
    reads = []
    real = txn_index.read_file
    monkeypatch.setattr(txn_index, "read_file", lambda path: reads.append(path) or real(path))
    assert reader.state(end) == first
    assert reads == []  # nothing changed, nothing read
    before = list_segment_bases(replica)
    log.append(txn_data([b"w"], 9))
    state = reader.state(end + 1)
    assert state.open == {9: end} and state.aborted == first.aborted
    # Only the last segment, and the one before it when the append rolled a new one.
    last_two = {txn_index.txn_index_path(replica, b) for b in list_segment_bases(replica)[-2:]}
    assert len(before) > 3 and reads and set(reads) <= last_two
    log.close()


def test_sealed_segment_without_index_is_derived_by_readers_and_rebuilt_by_the_next_writer(replica):
    log = open_log(replica, segment_bytes=900)
    for _i in range(8):
        log.append(txn_data([b"v" * 100], 1))
        log.append(marker(1, commit=False))
    log.flush()
    end = log.log_end_offset()
    log.close()
    bases = list_segment_bases(replica)
    expected = file_entries(replica, bases[0])
    os.unlink(txn_index.txn_index_path(replica, bases[0]))  # as a segment of an older version
    assert_files_match_frames(replica, end)
    log = open_log(replica, segment_bytes=900)
    log.open()
    assert file_entries(replica, bases[0]) == expected
    log.close()


def test_truncation_drops_entries_and_a_reappend_is_indexed_afresh(replica):
    log = open_log(replica, segment_bytes=700)
    for _i in range(6):
        log.append(txn_data([b"v" * 100], 1))
    log.append(marker(1, commit=True))
    log.flush()
    end = log.log_end_offset()
    with log._lock:
        log.truncate_to_locked(3)
    assert log.log_end_offset() == 3
    log.append(txn_data([b"new"], 2))  # 3
    log.append(marker(2, commit=False))  # 4
    log.append(marker(1, commit=False))  # 5: ends producer 1's transaction, begun at 0
    log.flush()
    assert end > 5
    assert_files_match_frames(replica, 6)
    assert files_state(replica, 6).aborted == ((2, 3, 4), (1, 0, 5))
    entries = [e for base in list_segment_bases(replica) for e in file_entries(replica, base)]
    assert entries == frame_events(replica)
    log.close()


def test_restart_at_an_offset_leaves_an_empty_index(replica):
    log = open_log(replica)
    log.append(txn_data([b"v"], 1))
    with log._lock:
        log.restart_at_locked(50)
    assert file_entries(replica, 50) == []
    assert files_state(replica, 50).open == {}
    log.close()


def test_a_writer_killed_between_frame_and_entry_leaves_it_to_the_next_writer(replica, monkeypatch):
    first, second = open_log(replica), open_log(replica)
    first.append(txn_data([b"a"], 1))
    monkeypatch.setattr(txn_index.TxnIndex, "append", lambda self, entry: None)  # "killed" before it
    first.append(marker(1, commit=False))
    monkeypatch.undo()
    second.append(encoded([b"after"]))  # catches up: the marker gets its entry
    assert file_entries(replica, 0) == [(DATA, 1, 0), (ABORT, 1, 1)]
    first.close()
    second.close()


def test_a_torn_entry_at_the_end_is_cut_by_the_next_writer(replica):
    first, second = open_log(replica), open_log(replica)
    first.append(txn_data([b"a"], 1))
    first.flush()
    first.append(txn_data([b"b"], 2))
    path = txn_index.txn_index_path(replica, 0)
    with open(path, "r+b") as f:  # the second entry is torn (as a dying writer's or a power cut's)
        f.truncate(24 + 11)
    assert_files_match_frames(replica, 2)  # readers derive past the torn entry
    second.append(marker(2, commit=False))
    second.flush()
    assert file_entries(replica, 0) == [(DATA, 1, 0), (DATA, 2, 1), (ABORT, 2, 2)]
    first.close()
    second.close()


def test_a_polling_reader_is_not_fooled_by_a_segment_made_again_at_the_same_base(replica):
    """A cut log deletes a segment, a roll makes one at the same base: often on the same inode
    number, with the same size. The reader must read the new one (found by the model test)."""
    log = open_log(replica, segment_bytes=600)
    reader = TxnIndexReader(replica)
    for round_ in range(6):
        producer = 10 + round_
        log.append(txn_data([b"v" * 300], 1))           # 0: rolls are by size
        log.append(txn_data([b"w" * 300], producer))    # 1: a new segment at base 1
        end = log.log_end_offset()
        assert list_segment_bases(replica)[-1] == 1
        assert reader.state(end).open == {1: 0, producer: 1}
        with log._lock:
            log.truncate_to_locked(0 if round_ % 2 else 1)
        assert reader.state(log.log_end_offset()).open == ({} if round_ % 2 else {1: 0})
        with log._lock:
            log.truncate_to_locked(0)
    log.close()


def test_an_entry_outside_its_segment_ends_the_trusted_part(replica):
    log = open_log(replica, segment_bytes=600)
    for i in range(6):
        log.append(txn_data([b"v" * 300], 1))
        log.append(marker(1, commit=i % 2 == 0))
    log.flush()
    end = log.log_end_offset()
    log.close()
    base = list_segment_bases(replica)[1]
    # An entry below the segment's base, then a well-formed lie: nothing of the file is trusted.
    with open(txn_index.txn_index_path(replica, base), "wb") as f:
        f.write(fmt.pack_txn_entry(DATA, 7, base - 1) + fmt.pack_txn_entry(DATA, 8, base))
    assert_files_match_frames(replica, end)


def test_a_polling_reader_given_the_generation_keeps_its_result_while_nothing_changed(replica, monkeypatch):
    """With the lock's generation, a reader polling at an unchanged HW looks at no file but the
    last segment (a fetch round of a read_committed consumer was half spent on these look-ups);
    a cut and appends back up to the same HW move the generation: read again."""
    log = open_log(replica, segment_bytes=900)
    for i in range(10):
        log.append(txn_data([b"v" * 100], i % 3))
        log.append(marker(i % 3, commit=i % 2 == 0))
    log.append(txn_data([b"open"], 5))
    log.flush()
    end = log.log_end_offset()
    reader = TxnIndexReader(replica)
    first = reader.state(end, log._lock.read_generation())
    assert first.open == {5: end - 1}
    listed = []
    real = fmt.list_segment_bases
    monkeypatch.setattr(fmt, "list_segment_bases", lambda d: listed.append(d) or real(d))
    assert reader.state(end, log._lock.read_generation()) is first
    assert listed == []
    with log._lock:
        log.truncate_to_locked(end - 1)  # the open transaction's frame goes...
    log.append(encoded([b"plain"]))      # ...and a plain one takes its offset: the same HW
    log.flush()
    assert log.log_end_offset() == end
    again = reader.state(end, log._lock.read_generation())
    assert listed and again.open == {} and again.aborted == first.aborted
    log.close()
