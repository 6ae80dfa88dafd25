"""The tiering child of the tierer's chaos rounds (tests/chaos/tier_rounds.py).

  tier CLUSTER TOPIC SEED
      Tiering passes again and again until killed, as ``kstream tier run --interval-ms``
      with a small interval does: ``Tierer(cluster).run([TOPIC], force=True)``, then
      retention on every replica of every partition (which deletes only what the lake
      holds), then a seeded pause of 0-40 ms.
      "T p start end records" per partition a pass copied, "R p deleted" per partition whose
      retention deleted segments, "F error" when a pass failed (the next one tries again),
      "P n" after pass n. KSTREAM_CRASH_AT kills it at a named step (tier.delta-committed,
      tier.metadata-recorded, retention.tiered-delete).
"""

from __future__ import annotations

import random
import sys
import time

from kstream.log.cluster.cluster import Cluster
from kstream.tiering import Tierer


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def tier(cluster_path: str, topic: str, seed: int) -> None:
    rng = random.Random(f"tier:{seed}")
    cluster = Cluster.open(cluster_path)
    tierer = Tierer(cluster)
    number = 0
    while True:
        try:
            for done in tierer.run([topic], force=True):
                if done.records or done.end_offset > done.start_offset:
                    _say(f"T {done.partition} {done.start_offset} {done.end_offset} {done.records}")
            info = cluster.topic(topic)
            for p in range(info.num_partitions):
                handle = cluster.partition(info, p)
                try:
                    deleted = sum(replica_log.apply_retention() for replica_log in handle.logs.values())
                finally:
                    handle.close()
                if deleted:
                    _say(f"R {p} {deleted}")
        except Exception as err:  # the round checks what failed and why
            _say(f"F {type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}")
        _say(f"P {number}")
        number += 1
        time.sleep(rng.uniform(0, 0.04))


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "tier":
        tier(args[0], args[1], int(args[2]))
    else:
        raise SystemExit(f"unknown mode {mode}")
