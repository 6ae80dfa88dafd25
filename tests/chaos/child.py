"""Writers the chaos rounds run as child processes (killed, stopped, power-cut).

Each prints one line per outcome, flushed, so a killed child's history is
what it printed (the last line may be cut; the parent drops it):

  produce CLUSTER TOPIC PARTITIONS ACKS TAG COUNT RATE
      COUNT records "TAG-i" round-robin over the partitions, about RATE a second (0: no limit);
      "A value partition offset" per delivered record, "E value error" per failed one.
  txn CLUSTER TOPIC PARTITIONS TXID TAG COUNT PAUSE
      COUNT transactions of 1-8 records "TAG-t-i", committed or aborted at random;
      "B t" at begin, "C t v1,v2,..." once committed, "X t v1,..." once aborted,
      "F t error" when the commit or abort failed. With PAUSE > 0, after the first
      transaction's records are flushed it prints "P" and waits PAUSE seconds for SIGUSR1
      (a zombie: the parent stops or kills it there, and wakes it with SIGUSR1). SIGUSR1 is
      blocked in every thread and taken with sigtimedwait: a handler's signal ends the main
      thread's sleep only if the kernel delivers it to that thread, not to a producer thread.
"""

from __future__ import annotations

import random
import signal
import sys
import time

from kstream import Producer
from kstream.log.cluster.cluster import Cluster


def round_timeout_ms(cluster: str) -> int:
    """The round's transaction timeout: harness.setup makes it the cluster's maximum, and every
    transactional writer of a round asks that (a Spark task's write has the maximum too)."""
    opened = Cluster.open(cluster)
    try:
        return int(opened.config["transaction.max.timeout.ms"])
    finally:
        opened.close()


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def produce(cluster: str, topic: str, partitions: int, acks: str, tag: str, count: int,
            rate: float = 0) -> None:
    def report(err, msg):
        if err is None:
            _say(f"A {msg.value().decode()} {msg.partition()} {msg.offset()}")
        else:
            # err.str(): the message alone (str(err) wraps it in KafkaError{code=...,str="..."})
            _say(f"E {msg.value().decode()} {err.str().replace(chr(10), ' ')[:300]}")

    producer = Producer({"cluster": cluster, "acks": acks, "linger.ms": 1, "batch.size": 2000})
    started = time.monotonic()
    for i in range(count):
        producer.produce(topic, f"{tag}-{i}".encode(), partition=i % partitions, on_delivery=report)
        if i % 7 == 0:
            producer.poll(0)
        if rate and (ahead := i / rate - (time.monotonic() - started)) > 0:
            time.sleep(ahead)
    producer.flush()
    producer.close()
    _say("DONE")


def txn(cluster: str, topic: str, partitions: int, txid: str, tag: str, count: int, pause: float) -> None:
    rng = random.Random(tag)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})  # before any thread: they inherit it
    producer = Producer({"cluster": cluster, "transactional.id": txid, "linger.ms": 0,
                         "transaction.timeout.ms": round_timeout_ms(cluster)})
    producer.init_transactions()
    for t in range(count):
        values = [f"{tag}-{t}-{i}" for i in range(rng.randint(1, 8))]
        producer.begin_transaction()
        _say(f"B {t} {','.join(values)}")
        try:
            for i, value in enumerate(values):
                producer.produce(topic, value.encode(), partition=(t + i) % partitions)
            producer.flush()
            if pause > 0 and t == 0:
                _say("P")
                signal.sigtimedwait({signal.SIGUSR1}, pause)
            if rng.random() < 0.6:
                producer.commit_transaction()
                _say(f"C {t} {','.join(values)}")
            else:
                producer.abort_transaction()
                _say(f"X {t} {','.join(values)}")
        except Exception as err:  # the history records it
            _say(f"F {t} {type(err).__name__}: {str(err)[:200]}")
            return
    producer.close()
    _say("DONE")


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "produce":
        produce(args[0], args[1], int(args[2]), args[3], args[4], int(args[5]), float(args[6]))
    elif mode == "txn":
        txn(args[0], args[1], int(args[2]), args[3], args[4], int(args[5]), float(args[6]))
    else:
        raise SystemExit(f"unknown mode {mode}")
