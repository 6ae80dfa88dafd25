"""ns per ``Producer.produce()`` call on one thread, the append alone.

Records are queued into batches that never fill (batch.size and linger.ms at
their maximum), so the figure is produce()'s own cost: argument checks, the
partitioner and the append under the producer's lock. Each round queues
``--records`` records and is timed; its flush is not. Prints the min, p10 and
median over ``--rounds`` rounds (the min is the steady figure on a noisy machine).

    PYTHONPATH=src .venv/bin/python -m bench.produce_queue [--rounds 300] [--records 10000]

Run it once per tree with that tree's ``src`` first on the path to compare code.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from kstream import Admin, NewTopic, Producer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=6)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="kstream-bench-")
    try:
        cluster = os.path.join(root, "cluster")
        Admin({"cluster": cluster}).create_topics([NewTopic("t", args.partitions)])["t"].result()
        value = os.urandom(100)
        producer = Producer({"cluster": cluster, "acks": "1", "batch.size": 2**31 - 1,
                             "linger.ms": 3_600_000})
        produce = producer.produce
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            for _ in range(args.records):
                produce("t", value)
            times.append((time.perf_counter() - start) / args.records * 1e9)
            producer.flush()
        producer.close()
    finally:
        shutil.rmtree(root)
    times.sort()
    print(f"produce() ns per call: min {times[0]:.0f}  p10 {times[len(times) // 10]:.0f}  "
          f"median {times[len(times) // 2]:.0f}")


if __name__ == "__main__":
    main()
