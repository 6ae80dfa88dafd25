"""A Table looking keys up while another process writes and cleans the same partition, the
cleaner swapping segments under the Table's scans and reads: no key ever reads as absent once
written, and no key's value ever goes back to an older one (nothing lost, nothing resurrected)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from kstream import Producer, Table

KEYS = 20
COMPACT = {"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.01"}

WRITER = textwrap.dedent("""
    import sys, time
    from kstream import Producer
    from kstream.log.cluster.cluster import Cluster
    path, keys, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    cluster = Cluster.open(path)
    deadline = time.monotonic() + seconds
    version = 1
    with Producer({"cluster": path, "linger.ms": 0}) as producer:
        while time.monotonic() < deadline:
            for key in range(keys):
                producer.produce("t", str(version).encode(), key=b"k%d" % key)
            producer.flush()
            version += 1
            if version % 3 == 0:
                cluster.clean_topic("t", force=True)
    cluster.close()
    print(version)
""")


def test_lookups_while_another_process_writes_and_cleans(cluster_path, make_topic):
    make_topic("t", partitions=2, config=COMPACT)
    with Producer({"cluster": cluster_path, "linger.ms": 0}) as producer:
        for key in range(KEYS):
            producer.produce("t", b"0", key=b"k%d" % key)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, cluster_path, str(KEYS), "3"],
                              stdout=subprocess.PIPE, text=True)
    seen = {b"k%d" % key: 0 for key in range(KEYS)}
    lookups = 0
    try:
        with Table(cluster_path, "t") as table:
            while writer.poll() is None:
                for key in seen:
                    message = table.get(key)
                    assert message is not None, f"{key!r} read as absent after it was written"
                    version = int(message.value())
                    assert version >= seen[key], f"{key!r} went back from {seen[key]} to {version}"
                    seen[key] = version
                    lookups += 1
                many = table.get_many(list(seen))
                assert set(many) == set(seen)
                time.sleep(0.001)
    finally:
        out, _ = writer.communicate(timeout=60)
    assert writer.returncode == 0
    written = int(out)
    assert lookups > 100 and written > 3
    with Table(cluster_path, "t") as table:  # at the end: every key's last value
        assert {key: int(table.get(key).value()) for key in seen} == dict.fromkeys(seen, written - 1)
