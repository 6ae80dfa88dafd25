"""Frame version 2 (the cleaner's sparse frames and fillers): the header rules, and readers that
take each row's offset from the frame rather than base_offset + row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from kstream.log.storage import format as fmt
from kstream.log.storage.cleaner.frame_rewrite import CleaningPlan, filler, rewrite
from kstream.log.storage.output import OutputBuilder, StoredBatch, decode_frame, output_schema
from kstream.log.storage.records import PayloadCodec, batch_from_records
from kstream.log.storage.segment import Frame


def header_bytes(version=fmt.FORMAT_VERSION, attributes=0, **fields):
    values = dict(payload_size=0, attributes=attributes, base_offset=10, record_count=4, leader_epoch=0,
                  producer_id=-1, producer_epoch=0, base_sequence=-1, min_timestamp=1, max_timestamp=2,
                  schema_length=0, payload_crc=0)
    values.update(fields)
    raw = bytearray(fmt.HEADER.pack(fmt.HEADER_SIZE - fmt.LENGTH_SIZE + values["payload_size"], 0, fmt.MAGIC,
                                    version, values["attributes"], values["base_offset"], values["record_count"],
                                    values["leader_epoch"], values["producer_id"], values["producer_epoch"], 0,
                                    values["base_sequence"], values["min_timestamp"], values["max_timestamp"],
                                    values["schema_length"], values["payload_crc"]))
    raw[4:8] = fmt.crc32c(bytes(raw[8:])).to_bytes(4, "little")
    return bytes(raw)


@pytest.mark.parametrize(("version", "attributes", "problem"), [
    (1, 0x40, "unknown attribute bits 0x40 for frame version 1"),
    (1, 0x80, "unknown attribute bits 0x80 for frame version 1"),
    (2, 0x80 | 0x40, "unknown attribute bits 0x80 for frame version 2"),
    (2, 0x00, "frame version 2 with attributes 0x00"),
    (3, 0x40, "unknown frame version 3"),
    (2, 0x40, None),
    (1, 0x3F, None),
])
def test_a_reader_refuses_attribute_bits_its_frame_version_does_not_define(version, attributes, problem):
    raw = header_bytes(version, attributes)
    found = fmt.header_problem(raw, fmt.unpack_header(raw))
    assert found == problem if problem is None else problem in found


def test_a_filler_holds_its_span_and_no_record():
    original = fmt.unpack_header(header_bytes(1, fmt.TRANSACTIONAL | 1, producer_id=7, base_sequence=3))
    made = filler(original)
    header = fmt.unpack_header(made.header)
    assert fmt.header_problem(made.header, header) is None
    assert (header.base_offset, header.next_offset, header.producer_id, header.base_sequence) == (10, 14, 7, 3)
    assert header.filler and not header.holds_records and header.attributes == fmt.SPARSE


def sparse_frame(values, keys, keep_keys, base=100):
    codec = PayloadCodec()
    payload = codec.encode(batch_from_records(values, keys, None, None))
    raw = fmt.pack_header(payload_size=payload.size, attributes=0, base_offset=base, record_count=len(values),
                          leader_epoch=0, producer_id=-1, producer_epoch=0, base_sequence=-1, min_timestamp=5,
                          max_timestamp=5, schema_length=payload.schema_length, payload_crc=payload.crc)
    header = fmt.unpack_header(raw)
    latest = {key: base + i for i, key in enumerate(keys) if key in keep_keys}
    plan = CleaningPlan(10**9, latest, (), 0, 0, False)
    out = rewrite(codec, header, pa.py_buffer(payload.to_bytes()), plan)
    assert out is not None and out.holds_records
    cleaned = fmt.unpack_header(out.header)
    assert fmt.header_problem(out.header, cleaned) is None and cleaned.sparse
    return Frame(cleaned, 0, pa.py_buffer(out.payload))


def test_a_sparse_batch_gives_each_row_its_own_offset():
    frame = sparse_frame([b"a", b"b", b"c", b"d", b"e"], [b"1", b"2", b"3", b"4", b"5"], {b"2", b"4"})
    stored = decode_frame(PayloadCodec(), frame)
    assert stored.row_offsets().tolist() == [101, 103] and stored.next_offset == 105
    assert stored.batch.schema.names == ["key", "value"]  # the offset deltas are not a column of it
    assert stored.slice_from(102).row_offsets().tolist() == [103]
    assert stored.slice_from(104).batch.num_rows == 0 and stored.slice_from(104).next_offset == 105
    assert stored.until(103).row_offsets().tolist() == [101] and stored.until(103).next_offset == 103
    assert stored.rows_from(1).row_offsets().tolist() == [103]
    assert stored.head(1).next_offset == 102
    built = OutputBuilder("t", 0, output_schema(None)).build(stored)
    assert built.column("offset").to_pylist() == [101, 103]
    assert built.column("value").to_pylist() == [b"b", b"d"]


def test_a_dense_batch_is_unchanged():
    stored = StoredBatch(5, pa.record_batch({"value": [b"a", b"b", b"c"]}), 0, False)
    assert stored.row_offsets().tolist() == [5, 6, 7] and stored.next_offset == 8
    assert stored.until(7).next_offset == 7 and stored.rows_from(2).row_offsets().tolist() == [7]
    assert np.array_equal(stored.slice_from(6).row_offsets(), [6, 7])
