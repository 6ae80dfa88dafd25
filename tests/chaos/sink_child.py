"""Spark's driver and tasks of a kstream streaming sink, as child processes of the sink rounds
(tests/chaos/sink_rounds.py). Each builds ``KStreamStreamWriter`` from the checkpoint location as
spelled on its command line, as Spark's Python workers do, so the query id comes from the
checkpoint's ``metadata`` file.

  task CLUSTER TOPIC CHECKPOINT ROWS_JSON     write [[value, partition], ...] as one task attempt;
                                              prints "T <sink id> <producer id> <partitions json> <n>"
  commit CLUSTER TOPIC CHECKPOINT BATCH TASKS_JSON
                                              commit the batch (TASKS_JSON: the task lines' fields);
                                              prints "C" once committed (or found committed: a
                                              replay), or "E <error>" when it was refused
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa

from kstream import KStreamError
from kstream.log.transactions.sink import TaskWrites
from kstream.sink.writer import KStreamStreamWriter, TaskCommit


def _writer(cluster: str, topic: str, checkpoint: str) -> KStreamStreamWriter:
    return KStreamStreamWriter({"cluster": cluster, "topic": topic, "checkpointLocation": checkpoint})


def task(cluster: str, topic: str, checkpoint: str, rows_json: str) -> None:
    rows = json.loads(rows_json)
    writer = _writer(cluster, topic, checkpoint)
    batch = pa.record_batch({"value": [r[0].encode() for r in rows], "partition": [r[1] for r in rows]})
    commit = writer.write(iter([batch]))
    assert isinstance(commit, TaskCommit)
    w = commit.writes
    print(f"T {commit.sink_id} {w.producer_id} {json.dumps(w.partitions, separators=(',', ':'))} {w.records}",
          flush=True)


def commit(cluster: str, topic: str, checkpoint: str, batch: str, tasks_json: str) -> None:
    messages = [TaskCommit(TaskWrites(t[1], tuple(tuple(p) for p in t[2]), t[3]), t[0])
                for t in json.loads(tasks_json)]
    writer = _writer(cluster, topic, checkpoint)
    try:
        writer.commit(messages, int(batch))
    except KStreamError as err:
        print(f"E {type(err).__name__}: {err}", flush=True)
        return
    print("C", flush=True)


if __name__ == "__main__":
    {"task": task, "commit": commit}[sys.argv[1]](*sys.argv[2:])
