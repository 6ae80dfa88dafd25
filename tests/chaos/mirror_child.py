"""The Apache Kafka writer of the mirror's chaos rounds (tests/chaos/mirror_rounds.py).

The mirror itself runs as its own child, the CLI (``kstream mirror ...``); this child is the
producer on the Kafka side of a mirror into kstream. One line per outcome, flushed, so a
killed child's history is what it printed (the parent drops a cut last line):

  kafka-produce BOOTSTRAP TOPIC PARTITIONS TAG COUNT RATE TXN
      COUNT records "TAG-i" round-robin over the partitions, about RATE a second, with
      confluent-kafka (acks=all, idempotent). TXN 0: plain records, "A value partition offset"
      per delivered one. TXN 1: in transactions of 1-8 records (transactional.id TAG), committed
      or aborted at random (seeded by TAG): "A value partition offset" for each record of a
      committed transaction once the commit returned, "X value" for each of an aborted one.
      "E value error" for a failed delivery, "F error" when a transaction failed; "DONE" at the end.
"""

from __future__ import annotations

import random
import sys
import time


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def kafka_produce(bootstrap: str, topic: str, partitions: int, tag: str, count: int, rate: float,
                  transactional: bool) -> None:
    from confluent_kafka import Producer

    config = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 2,
              "log_level": 0}
    if transactional:
        config["transactional.id"] = tag
    producer = Producer(config)
    delivered: list[tuple[str, int, int]] = []

    def report(err, msg):
        value = msg.value().decode()
        if err is not None:
            _say(f"E {value} {err.str().replace(chr(10), ' ')[:300]}")
        elif transactional:
            delivered.append((value, msg.partition(), msg.offset()))
        else:
            _say(f"A {value} {msg.partition()} {msg.offset()}")

    rng = random.Random(tag)
    started = time.monotonic()
    if transactional:
        producer.init_transactions(30)
    i = 0
    while i < count:
        values = [f"{tag}-{j}" for j in range(i, min(count, i + (rng.randint(1, 8) if transactional else 1)))]
        try:
            if transactional:
                producer.begin_transaction()
            for value in values:
                producer.produce(topic, value.encode(), partition=int(value.rsplit("-", 1)[1]) % partitions,
                                 on_delivery=report)
            if transactional:
                producer.flush(60)
                if rng.random() < 0.75:
                    producer.commit_transaction(60)
                    for value, partition, offset in delivered:
                        _say(f"A {value} {partition} {offset}")
                else:
                    producer.abort_transaction(60)
                    for value in values:
                        _say(f"X {value}")
                delivered.clear()
            else:
                producer.poll(0)
        except Exception as err:  # the parent records it; the records of this transaction are unknown
            _say(f"F {type(err).__name__}: {str(err)[:200]}")
            return
        i += len(values)
        if rate and (ahead := i / rate - (time.monotonic() - started)) > 0:
            time.sleep(ahead)
    left = producer.flush(60)
    if left:
        _say(f"F {left} records not delivered in 60 s")
        return
    _say("DONE")


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "kafka-produce":
        kafka_produce(args[0], args[1], int(args[2]), args[3], int(args[4]), float(args[5]), args[6] == "1")
    else:
        raise SystemExit(f"unknown mode {mode}")
