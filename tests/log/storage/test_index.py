from kstream.log.storage.index import OffsetIndex, TimeIndex


def test_offset_index_lookup_finds_entry_at_or_before(tmp_path):
    index = OffsetIndex(str(tmp_path / "a.index"), 100)
    assert index.lookup(150) == (100, 0)
    for offset, position in [(110, 4096), (130, 8200), (170, 12300)]:
        index.append(offset, position)
    assert index.lookup(99) == (100, 0)
    assert index.lookup(100) == (100, 0)
    assert index.lookup(110) == (110, 4096)
    assert index.lookup(129) == (110, 4096)
    assert index.lookup(10_000) == (170, 12300)
    assert index.is_consistent(20000)
    assert not index.is_consistent(12300)  # an entry at the end of the file points at nothing


def test_offset_index_truncation(tmp_path):
    index = OffsetIndex(str(tmp_path / "a.index"), 0)
    for i in range(1, 6):
        index.append(i * 10, i * 1000)
    index.truncate_to_position(3000)
    assert index.last_entry() == (20, 2000)
    assert index.entry_at_or_before_position(2500) == (20, 2000)


def test_time_index_lookup_never_skips_a_match(tmp_path):
    index = TimeIndex(str(tmp_path / "a.timeindex"), 0)
    # (max timestamp before the frame, frame base offset)
    index.append(100, 10)
    index.append(200, 20)
    index.append(300, 30)
    assert index.lookup(50) == 0
    assert index.lookup(100) == 0
    assert index.lookup(101) == 10
    assert index.lookup(250) == 20
    assert index.lookup(10_000) == 30
    index.truncate_to_offset(20)
    assert index.last_timestamp() == 100
