import pytest

from kstream.log.storage import format as fmt


def _header(**overrides):
    fields = dict(payload_size=100, attributes=fmt.CODECS["lz4"], base_offset=42, record_count=7,
                  leader_epoch=3, producer_id=9, producer_epoch=1, base_sequence=5,
                  min_timestamp=10, max_timestamp=20, schema_length=30, payload_crc=1234)
    fields.update(overrides)
    return fmt.pack_header(**fields)


def test_header_round_trip():
    raw = _header()
    header = fmt.unpack_header(raw)
    assert len(raw) == fmt.HEADER_SIZE == 68
    assert fmt.header_problem(raw, header) is None
    assert (header.base_offset, header.record_count, header.next_offset) == (42, 7, 49)
    assert header.frame_size == fmt.HEADER_SIZE + 100
    assert header.codec == "lz4"
    assert (header.leader_epoch, header.producer_id, header.base_sequence) == (3, 9, 5)


@pytest.mark.parametrize("position", range(8, 68))
def test_any_flipped_header_bit_is_detected(position):
    raw = bytearray(_header())
    raw[position] ^= 0x10
    assert fmt.header_problem(bytes(raw), fmt.unpack_header(bytes(raw))) is not None


def test_zeroed_header_is_invalid():
    raw = bytes(fmt.HEADER_SIZE)
    assert fmt.header_problem(raw, fmt.unpack_header(raw)) is not None


def test_segment_file_names_sort_and_parse():
    names = [fmt.segment_file_name(b) for b in (0, 9, 10, 123456789012)]
    assert names == sorted(names)
    assert names[1] == "00000000000000000009.log"
    assert [fmt.parse_segment_file_name(n) for n in names] == [0, 9, 10, 123456789012]
    assert fmt.parse_segment_file_name("00000000000000000009.index") is None
    assert fmt.parse_segment_file_name("junk.log") is None
