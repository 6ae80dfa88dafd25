"""Torn tails are truncated to the last whole frame; bit flips are reported, never returned."""

from __future__ import annotations

import os
import random

import pytest

from helpers import encoded, open_log, read_all
from kstream import Consumer, CorruptBatchError, Producer, TopicPartition
from kstream.log.storage import format as fmt
from kstream.log.storage.retention import list_segment_bases
from kstream.log.storage.segment import Segment


def _write_frames(directory, count, **config):
    log = open_log(directory, **config)
    ends = []  # (end position, next offset) after each frame in the active segment
    values = []
    for i in range(count):
        batch = [f"{i}-{k}".encode() * (1 + k % 5) for k in range(1 + i % 7)]
        result = log.append(encoded(batch))
        values.extend(batch)
        ends.append((result.segment_base_offset, result.end_position, len(values)))
    log.flush()
    log.close()
    return ends, values


@pytest.mark.parametrize("seed", range(12))
def test_torn_tail_cut_at_random_byte_is_truncated_to_last_whole_frame(tmp_path, seed):
    directory = str(tmp_path / "t-0")
    ends, values = _write_frames(directory, 30)
    path = os.path.join(directory, fmt.segment_file_name(0))
    size = os.path.getsize(path)
    cut = random.Random(seed).randrange(1, size)
    with open(path, "r+b") as f:
        f.truncate(cut)
    # The surviving prefix is exactly the frames that end at or before the cut.
    surviving = [e for e in ends if e[1] <= cut]
    expected_end, expected_records = (surviving[-1][1], surviving[-1][2]) if surviving else (0, 0)
    log = open_log(directory)
    assert log.log_end_offset() == expected_records
    assert log.truncated_bytes == cut - expected_end
    assert os.path.getsize(path) == expected_end
    assert [v for _, v in read_all(directory)] == values[:expected_records]
    assert log.append(encoded([b"next"])).base_offset == expected_records  # takes appends
    log.close()


def test_garbage_after_last_frame_is_truncated_on_open(tmp_path):
    directory = str(tmp_path / "t-0")
    _ends, values = _write_frames(directory, 5)
    path = os.path.join(directory, fmt.segment_file_name(0))
    with open(path, "ab") as f:
        f.write(b"\x00" * 100 + os.urandom(300))  # power loss: zeros and junk past the end
    log = open_log(directory)
    assert log.log_end_offset() == len(values)
    assert log.truncated_bytes == 400
    log.close()


@pytest.mark.parametrize("seed", range(8))
def test_bit_flip_in_sealed_segment_is_reported_with_file_position_offset(tmp_path, seed):
    directory = str(tmp_path / "t-0")
    _write_frames(directory, 40, segment_bytes=2048)
    bases = list_segment_bases(directory)
    assert len(bases) > 2
    rng = random.Random(seed)
    base = bases[rng.randrange(len(bases) - 1)]  # a sealed segment
    path = os.path.join(directory, fmt.segment_file_name(base))
    segment = Segment(directory, base, 4096)
    frames = [(pos, h) for pos, h, _ in segment.scan(0, os.path.getsize(path), True)]
    segment.close()
    position, header = frames[rng.randrange(len(frames))]
    flip_at = position + rng.randrange(8, header.frame_size)  # header (past length) or payload
    with open(path, "r+b") as f:
        f.seek(flip_at)
        byte = f.read(1)[0]
        f.seek(flip_at)
        f.write(bytes([byte ^ (1 << rng.randrange(8))]))
    with pytest.raises(CorruptBatchError) as caught:
        read_all(directory)
    err = caught.value
    assert err.path == path and err.position == position
    assert err.offset in (header.base_offset, None) or err.offset == header.base_offset
    assert path in str(err) and f"position {position}" in str(err)


def test_consumer_reports_rather_than_returning_a_corrupt_batch(cluster_path, make_topic):
    make_topic("t", 1)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(3):
            producer.produce("t", f"value-{i}".encode() * 10)
            producer.flush()  # one frame each (acks=all batches records while an fsync runs)
    consumer = Consumer({"cluster": cluster_path})
    directory = consumer.cluster.partition("t", 0).leader_dir
    path = os.path.join(directory, fmt.segment_file_name(0))
    data = bytearray(open(path, "rb").read())
    data[len(data) - 10] ^= 0xFF  # inside the last frame's payload
    open(path, "wb").write(bytes(data))
    consumer.assign([TopicPartition("t", 0, 0)])
    got, errors = [], []
    while (message := consumer.poll(0.2)) is not None:
        (errors if message.error() else got).append(message)
    assert [m.value() for m in got] == [b"value-0" * 10, b"value-1" * 10]
    assert len(errors) == 1 and errors[0].offset() == 2  # once; the position stays at the bad frame
    assert errors[0].error().name() == "_BAD_MSG"
    assert isinstance(errors[0].error().exception, CorruptBatchError)
    assert "payload checksum mismatch" in errors[0].error().str()
    assert consumer.position([TopicPartition("t", 0)])[0].offset == 2
    consumer.seek(TopicPartition("t", 0, 2))  # a seek checks again: poll_batch raises
    with pytest.raises(CorruptBatchError, match="payload checksum mismatch"):
        consumer.poll_batch(timeout=1)
    consumer.close()


def test_round_over_partitions_hands_out_good_partitions_and_reports_the_bad_one(
        cluster_path, make_topic, monkeypatch):
    """A fetch round checks all partitions' frames at once (split over threads here): a bad
    frame in one partition stops only that partition, at that frame."""
    from kstream.log.storage import checksums
    monkeypatch.setattr(checksums, "SPLIT_MIN_BYTES", 64)
    make_topic("t", 3)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for i in range(4):
            for p in range(3):
                producer.produce("t", f"{p}-{i}".encode() * 50, partition=p)
            producer.flush()
    consumer = Consumer({"cluster": cluster_path})
    directory = consumer.cluster.partition("t", 1).leader_dir
    path = os.path.join(directory, fmt.segment_file_name(0))
    segment = Segment(directory, 0, 4096)
    frames = [(pos, h) for pos, h, _ in segment.scan(0, os.path.getsize(path), True)]
    segment.close()
    position, header = frames[2]  # partition 1's third record
    with open(path, "r+b") as f:
        f.seek(position + fmt.HEADER_SIZE + 5)
        byte = f.read(1)[0]
        f.seek(position + fmt.HEADER_SIZE + 5)
        f.write(bytes([byte ^ 0x10]))
    consumer.assign([TopicPartition("t", p, 0) for p in range(3)])
    got: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    errors = []
    while (message := consumer.poll(0.2)) is not None:
        if message.error():
            errors.append(message)
        else:
            got[message.partition()].append(message.value())
    assert [m.partition() for m in errors] == [1]
    caught = errors[0].error().exception
    assert caught.path == path and caught.position == position
    assert caught.offset == header.base_offset == 2
    assert got[1] == [f"1-{i}".encode() * 50 for i in range(2)]
    assert got[0] == [f"0-{i}".encode() * 50 for i in range(4)]
    assert got[2] == [f"2-{i}".encode() * 50 for i in range(4)]
    consumer.close()


def test_corrupt_partition_is_reported_in_its_round_while_others_keep_flowing(cluster_path, make_topic):
    """Issue 10, defect 10: partitions 0 and 2 always have new data; partition 1's third frame
    is corrupt. The error is reported on partition 1 as soon as a round reaches it (before
    the round after), once, and partitions 0 and 2 keep delivering."""
    make_topic("t", 3)
    producer = Producer({"cluster": cluster_path, "linger.ms": 0, "acks": "1"})
    sent = {0: 0, 2: 0}

    def more():  # one more record on partitions 0 and 2
        for p in (0, 2):
            producer.produce("t", f"{p}-{sent[p]}".encode(), partition=p)
            sent[p] += 1
        producer.flush()

    for i in range(5):
        producer.produce("t", f"1-{i}".encode(), partition=1)
        more()
    consumer = Consumer({"cluster": cluster_path, "fetch.wait.max.ms": 20})
    directory = consumer.cluster.partition("t", 1).leader_dir
    path = os.path.join(directory, fmt.segment_file_name(0))
    segment = Segment(directory, 0, 4096)
    position, _header = [(pos, h) for pos, h, _ in segment.scan(0, os.path.getsize(path), True)][2]
    segment.close()
    with open(path, "r+b") as f:
        f.seek(position + fmt.HEADER_SIZE + 3)
        byte = f.read(1)[0]
        f.seek(position + fmt.HEADER_SIZE + 3)
        f.write(bytes([byte ^ 0x01]))
    consumer.assign([TopicPartition("t", p, 0) for p in range(3)])
    events = []  # ("record", partition, offset) / ("error", partition, offset)
    for _ in range(400):
        if len([e for e in events if e[0] == "error"]) and \
                len([e for e in events if e[0] == "record" and e[1] != 1]) >= 40:
            break
        message = consumer.poll(1)
        assert message is not None, "partitions 0 and 2 stopped delivering"
        kind = "error" if message.error() else "record"
        events.append((kind, message.partition(), message.offset()))
        if message.partition() != 1:
            more()  # the others always have something new
    errors = [e for e in events if e[0] == "error"]
    assert errors == [("error", 1, 2)], "the corrupt frame was never reported (or reported twice)"
    assert [e[2] for e in events if e[0] == "record" and e[1] == 1] == [0, 1]
    # Reported within the round that reached the bad frame: the first round read 5 records of
    # each good partition; at most one later round's records came before the error.
    last_good_of_1 = events.index(("record", 1, 1))
    between = events[last_good_of_1:events.index(errors[0])]
    assert len(between) <= 2 * 5 + 2 * 2, between
    after = [e for e in events[events.index(errors[0]):] if e[0] == "record"]
    assert len(after) >= 20 and {e[1] for e in after} == {0, 2}  # the others keep flowing
    consumer.seek(TopicPartition("t", 1, 3))  # skip the bad frame: the rest of partition 1 comes
    rest = []
    while len(rest) < 2 and (message := consumer.poll(1)) is not None:
        if message.partition() == 1:
            rest.append(message.offset())
    assert rest == [3, 4]
    consumer.close()
    producer.close()
