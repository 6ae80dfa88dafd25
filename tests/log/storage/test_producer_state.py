"""Model-based test of the idempotent-producer dedupe (kstream.log.storage.producer_state).

Random appends, retries, epoch bumps, sequence gaps and stale epochs from several producer
ids go to one partition through several handles (each one "a process": its own state,
rebuilt from the log); a dict oracle says what each must do. At the end the log holds
every accepted batch exactly once, in order.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from helpers import encoded, read_all
from kstream import Admin, NewTopic
from kstream.errors import FencedError, OutOfOrderSequenceError
from kstream.log.cluster.cluster import Cluster
from kstream.log.storage import producer_state

BATCHES_PER_PRODUCER = 5  # Kafka keeps the last 5 batches per producer and partition


@pytest.mark.parametrize("seed", range(6))
def test_dedupe_matches_a_dict_oracle(tmp_path, seed):
    rng = random.Random(seed)
    path = str(tmp_path / "cluster")
    with Admin({"cluster": path}) as admin:
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result()
    cluster = Cluster.open(path)
    handles = [cluster.partition("t", 0) for _ in range(3)]
    # The oracle: per producer id, its epoch, next sequence and every batch it got written.
    epochs = {pid: 0 for pid in (7, 8, 9)}
    next_seq = dict.fromkeys(epochs, 0)
    written: dict[int, list[tuple[object, int]]] = {pid: [] for pid in epochs}  # (batch, offset)
    log: list[bytes] = []
    for step in range(250):
        handle = rng.choice(handles)
        if rng.random() < 0.03:  # a process restarts: its state is rebuilt from the log
            index = handles.index(handle)
            handle.close()
            handle = handles[index] = cluster.partition("t", 0)
        pid = rng.choice(list(epochs))
        action = rng.random()
        history = written[pid]
        if action < 0.25 and history:  # a retry of one of the producer's earlier batches
            back = rng.randrange(1, min(len(history), BATCHES_PER_PRODUCER + 3) + 1)
            batch, offset = history[-back]
            newest = history[-1][0]
            if back <= BATCHES_PER_PRODUCER:  # remembered, whatever its epoch
                assert handle.append(batch, "1").base_offset == offset, (step, back)
            elif batch.producer_epoch < newest.producer_epoch:
                with pytest.raises((FencedError, OutOfOrderSequenceError)):
                    handle.append(batch, "1")
            else:
                with pytest.raises(OutOfOrderSequenceError):
                    handle.append(batch, "1")
            continue
        if action < 0.30 and history:  # a gap in the sequence: refused, nothing written
            gap = _batch(pid, epochs[pid], next_seq[pid] + rng.randrange(1, 5), step)
            with pytest.raises(OutOfOrderSequenceError):
                handle.append(gap, "1")
            continue
        if action < 0.33 and history and epochs[pid] > 0:  # a zombie with the old epoch
            with pytest.raises(FencedError):
                handle.append(_batch(pid, epochs[pid] - 1, 10_000, step), "1")
            continue
        if action < 0.38:  # the producer moves to a new epoch: sequences restart
            epochs[pid] += 1
            next_seq[pid] = 0
        batch = _batch(pid, epochs[pid], next_seq[pid], step, count=rng.randrange(1, 4))
        offset = handle.append(batch, "1").base_offset
        assert offset == len(log), step
        history.append((batch, offset))
        next_seq[pid] += batch.record_count
        log.extend(_values(pid, step, batch.record_count))
    assert [value for _, value in read_all(handles[0].leader_dir)] == log
    for handle in handles:
        handle.close()
    cluster.close()


def _values(pid, step, count):
    return [f"{pid}-{step}-{i}".encode() for i in range(count)]


def _batch(pid, epoch, sequence, step, count=1):
    return dataclasses.replace(encoded(_values(pid, step, count)), producer_id=pid,
                               producer_epoch=epoch, base_sequence=sequence)


def test_catching_up_with_another_process_reads_headers_not_the_log(tmp_path, monkeypatch):
    """Two "processes" appending in turn (as two producer processes on one partition do on
    every batch): each catches up with the other's frame by walking the headers after its own
    last frame, not by opening a reader of the whole log each time (what made produce_batch()
    from 2 processes no faster than from 1). A retry of the other's batch is still found."""
    path = str(tmp_path / "cluster")
    with Admin({"cluster": path}) as admin:
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result()
    cluster = Cluster.open(path)
    handles = [cluster.partition("t", 0) for _ in range(2)]
    sequences = {7: 0, 8: 0}
    for step in range(2):  # each handle's first look rebuilds from the log
        for pid, handle in zip((7, 8), handles, strict=True):
            handle.append(_batch(pid, 0, sequences[pid], step), "1")
            sequences[pid] += 1
    readers = []
    original = producer_state.LogReader
    monkeypatch.setattr(producer_state, "LogReader", lambda *a, **k: readers.append(1) or original(*a, **k))
    written = []
    for step in range(2, 12):
        for pid, handle in zip((7, 8), handles, strict=True):
            batch = _batch(pid, 0, sequences[pid], step, count=2)
            written.append((batch, handle.append(batch, "1").base_offset))
            sequences[pid] += 2
    assert readers == []
    batch, offset = written[-2]  # pid 7's last batch, retried through the other handle
    assert handles[1].append(batch, "1").base_offset == offset
    assert len(read_all(handles[0].leader_dir)) == 4 + 40
    for handle in handles:
        handle.close()
    cluster.close()
