"""Child processes of the log-cleaner chaos rounds (tests/chaos/clean_rounds.py).

Each prints one flushed line per event, so a killed child's history is what it
printed (the last line may be cut; the parent drops it):

  keyed CLUSTER TOPIC PARTITIONS TAG COUNT RATE SEED
      COUNT seeded writes to a compacted topic, about RATE a second: puts and tombstones
      of a few keys (key kJ always goes to partition J % PARTITIONS), plain (acks=all) or
      inside transactions committed or aborted at random.
      "I n p key value txn" before write n is handed to a producer (value "-": a tombstone;
      txn "-": plain), "D n offset" once it is delivered (acks=all for a plain write, appended
      for a transaction's), "E n error" when it failed, "B t" / "C t" / "X t" / "F t error"
      for transaction t begun / committed / aborted / failed, "DONE" at the end.
  clean CLUSTER TOPIC SECONDS SEED
      runs the log cleaner on TOPIC again and again for SECONDS (as `kstream topics clean`
      does: the cluster opened afresh each time, ``force`` at random), printing
      "K partition end_offset" per partition cleaned, "DONE" at the end. With
      KSTREAM_CRASH_AT=clean.<step>:<n> it SIGKILLs itself at the n-th pass of that step.
"""

from __future__ import annotations

import random
import sys
import time

from kstream import Producer
from kstream.log.cluster.cluster import Cluster

KEYS = 12  # few keys: each is overwritten often, so every clean removes records
TOMBSTONE = "-"


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def keyed(cluster: str, topic: str, partitions: int, tag: str, count: int, rate: float, seed: int) -> None:
    rng = random.Random(seed)
    plain = Producer({"cluster": cluster, "acks": "all", "linger.ms": 1, "batch.size": 2000})
    opened = Cluster.open(cluster)
    try:
        timeout_ms = int(opened.config["transaction.max.timeout.ms"])
    finally:
        opened.close()
    txn = Producer({"cluster": cluster, "transactional.id": f"{tag}-tx", "linger.ms": 0,
                    "transaction.timeout.ms": timeout_ms})
    txn.init_transactions()

    def report(n: int):
        def on_delivery(err, msg):
            if err is None:
                _say(f"D {n} {msg.offset()}")
            else:
                _say(f"E {n} {err.str().replace(chr(10), ' ')[:200]}")
        return on_delivery

    def record(n: int) -> tuple[int, bytes, bytes | None]:
        j = rng.randrange(KEYS)
        value = None if rng.random() < 0.15 else f"{tag}-{n}".encode()
        return j % partitions, f"k{j}".encode(), value

    started = time.monotonic()
    n = t = 0
    while n < count:
        if rng.random() < 0.12:  # a transaction of 1-4 writes
            plain.flush()  # its records land after the plain ones handed out before it
            txn.begin_transaction()
            _say(f"B {t}")
            try:
                for _ in range(rng.randint(1, 4)):
                    p, key, value = record(n)
                    _say(f"I {n} {p} {key.decode()} {value.decode() if value else TOMBSTONE} {t}")
                    txn.produce(topic, value, key=key, partition=p, on_delivery=report(n))
                    n += 1
                txn.flush()
                if rng.random() < 0.6:
                    txn.commit_transaction()
                    _say(f"C {t}")
                else:
                    txn.abort_transaction()
                    _say(f"X {t}")
            except Exception as err:  # the history records it
                _say(f"F {t} {type(err).__name__}: {str(err)[:200]}")
                return
            t += 1
        else:
            p, key, value = record(n)
            _say(f"I {n} {p} {key.decode()} {value.decode() if value else TOMBSTONE} -")
            plain.produce(topic, value, key=key, partition=p, on_delivery=report(n))
            n += 1
            if n % 5 == 0:
                plain.poll(0)
        if rate and (ahead := n / rate - (time.monotonic() - started)) > 0:
            time.sleep(ahead)
    plain.flush()
    plain.close()
    txn.close()
    _say("DONE")


def clean(cluster: str, topic: str, seconds: float, seed: int) -> None:
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        opened = Cluster.open(cluster)
        try:
            for done in opened.clean_topic(topic, force=rng.random() < 0.5):
                if done.cleaned:
                    _say(f"K {done.partition} {done.end_offset}")
        finally:
            opened.close()
        time.sleep(rng.uniform(0, 0.05))
    _say("DONE")


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "keyed":
        keyed(args[0], args[1], int(args[2]), args[3], int(args[4]), float(args[5]), int(args[6]))
    elif mode == "clean":
        clean(args[0], args[1], float(args[2]), int(args[3]))
    else:
        raise SystemExit(f"unknown mode {mode}")
