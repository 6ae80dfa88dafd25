"""Stand-alone librdkafka mock Kafka cluster, for ``bench.peers.mock_broker``.

Run as a script (``python bench/_mock_broker.py --topic NAME:PARTITIONS ...``);
it prints ``BOOTSTRAP=127.0.0.1:PORT`` on stdout and serves until SIGTERM/SIGINT.

The mock cluster ships inside the confluent-kafka wheel (bundled librdkafka.so)
and is reached through ctypes. It speaks the real Kafka wire protocol over TCP
on loopback, so clients in other processes can use it. Caveats:

* It has no CreateTopics API, so topics are created here with
  ``rd_kafka_mock_topic_create()`` (auto-created topics get 4 partitions).
* Data is held in memory only, and each partition retains at most 5 MiB /
  100k message sets (librdkafka ``rdkafka_mock.c``): older batches are
  dropped and the log start offset advances. Use enough partitions.

Adapted from the peers notes shipped with the project brief; kept self-contained
(stdlib + confluent_kafka only) so it can run as a bare script.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import signal
import time
from types import FrameType

import confluent_kafka

RD_KAFKA_PRODUCER = 0


def _load_librdkafka() -> ctypes.CDLL:
    """Load the librdkafka shared library bundled in the confluent-kafka wheel."""
    pkg_parent = os.path.dirname(os.path.dirname(confluent_kafka.__file__))
    candidates = glob.glob(os.path.join(pkg_parent, "confluent_kafka.libs", "librdkafka*.so*"))
    if not candidates:
        raise SystemExit(f"bundled librdkafka not found under {pkg_parent}/confluent_kafka.libs")
    lib = ctypes.CDLL(candidates[0])
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_conf_set.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
    ]
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    return lib


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", type=int, default=1)
    ap.add_argument("--topic", action="append", default=[], help="NAME:PARTITIONS (repeatable)")
    args = ap.parse_args(argv)

    lib = _load_librdkafka()
    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, 512)
    rk = lib.rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, 512)
    if not rk:
        raise SystemExit("rd_kafka_new: " + errstr.value.decode())
    mc = lib.rd_kafka_mock_cluster_new(rk, args.brokers)
    if not mc:
        raise SystemExit("rd_kafka_mock_cluster_new failed")
    for spec in args.topic:
        name, parts = spec.rsplit(":", 1)
        err = lib.rd_kafka_mock_topic_create(mc, name.encode(), int(parts), 1)
        if err:
            raise SystemExit(f"rd_kafka_mock_topic_create({spec}) -> err {err}")
    print("BOOTSTRAP=" + lib.rd_kafka_mock_cluster_bootstraps(mc).decode(), flush=True)

    stop = False

    def _on_signal(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    while not stop:
        time.sleep(0.2)
    lib.rd_kafka_mock_cluster_destroy(mc)
    lib.rd_kafka_destroy(rk)


if __name__ == "__main__":
    main()
