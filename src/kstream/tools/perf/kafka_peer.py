"""Apache Kafka as the peer: one broker, or three, on loopback, one command away.

:class:`KafkaPeer` starts Apache Kafka 4.x from the jars ``make kafka`` resolves
(peers/kafka/resolve.sh into peers/kafka/lib/broker/, or ``$KSTREAM_KAFKA_LIB``):
each node is one JVM in KRaft combined mode (``process.roles=broker,controller``),
with a small heap, free loopback ports picked at start and its log dirs in a
temporary folder the peer owns. Three nodes form a three-voter controller quorum
(``controller.quorum.voters``) for replication scenarios.

``start()`` formats each node's storage (``kafka.tools.StorageTool format``),
starts ``kafka.Kafka``, and returns once every node answers a Kafka request
(ApiVersions on its port) and, when confluent-kafka is installed, the cluster's
metadata lists every broker. ``stop()`` sends SIGTERM to every node (a
controlled shutdown), SIGKILLs what has not exited after ``stop_timeout_s``, and
removes the folder. Not thread-safe: one thread starts and stops a peer.

Used by the tests (the ``kafka_broker`` fixture), the study, the benchmarks and
the console demo; for people::

    python -m kstream.tools.perf.kafka_peer --brokers 1    # prints the bootstrap, runs until Ctrl-C

:func:`node_properties` holds every broker setting and why it differs from
Kafka's default (docs/KAFKA_PEER.md has the table).
"""

from __future__ import annotations

import argparse
import atexit
import base64
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kstream.errors import KStreamError

KAFKA_LIB_ENV = "KSTREAM_KAFKA_LIB"
"""A folder holding ``broker/`` (and ``connector/``) jars, instead of the checkout's peers/kafka/lib."""

DEFAULT_HEAP = "512m"
JVM_OPTIONS = ("-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
               "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true")
"""kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS: the JVM the distribution's scripts start."""

LOG4J2_PROPERTIES = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.state.name = state.change.logger
logger.state.level = WARN
"""
"""Each node logs INFO to its own ``server.log`` (the JVM's stdout), which a failed start quotes."""

FORMAT_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true")
"""The one-shot format JVM: the C1 compiler only and the serial collector start it sooner."""

START_ATTEMPTS = 3  # a free port taken by someone else before the broker binds it: try new ports
LOG_TAIL_LINES = 25


def kafka_lib() -> Path:
    """The folder of the resolved jars: ``$KSTREAM_KAFKA_LIB``, else peers/kafka/lib of this checkout."""
    configured = os.environ.get(KAFKA_LIB_ENV)
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[4] / "peers" / "kafka" / "lib"


def missing(lib: Path | None = None) -> str | None:
    """One line naming what the peer lacks (java on PATH, the broker jars), or None when it can start."""
    if shutil.which("java") is None:
        return "no java on PATH (scripts/ensure-java.sh installs Debian's openjdk-17 when root)"
    broker = (lib or kafka_lib()) / "broker"
    if not any(broker.glob("kafka_2.13-*.jar")):
        return f"no Apache Kafka jars in {broker} (run `make kafka`: peers/kafka/resolve.sh, Maven)"
    return None


def kafka_version(lib: Path | None = None) -> str:
    """The resolved Apache Kafka version, from the broker jar's name (``kafka_2.13-4.4.0.jar``)."""
    jars = sorted((lib or kafka_lib()).joinpath("broker").glob("kafka_2.13-*.jar"))
    if not jars:
        raise KStreamError(missing(lib) or "no Apache Kafka jars")
    return jars[0].name.removeprefix("kafka_2.13-").removesuffix(".jar")


CONNECTOR_JAR_GLOB = "spark-sql-kafka-0-10_2.13-*.jar"


def connector_jars(lib: Path | None = None) -> list[str]:
    """The jars of Spark's Kafka connector for ``spark.jars`` (every jar in ``lib/connector/``: the
    connector, its token provider, ``kafka-clients``, ``commons-pool2``), or ``[]`` when ``make kafka``
    did not resolve the connector. ``format("kafka")`` needs them on the session from its start."""
    folder = (lib or kafka_lib()) / "connector"
    if not any(folder.glob(CONNECTOR_JAR_GLOB)):
        return []
    return [str(path) for path in sorted(folder.glob("*.jar"))]


def connector_version(lib: Path | None = None) -> str | None:
    """The resolved connector's version, from its jar's name (``spark-sql-kafka-0-10_2.13-4.2.0.jar``)."""
    jars = sorted((lib or kafka_lib()).joinpath("connector").glob(CONNECTOR_JAR_GLOB))
    return jars[0].name.removeprefix("spark-sql-kafka-0-10_2.13-").removesuffix(".jar") if jars else None


def cluster_id() -> str:
    """A new KRaft cluster id: 16 random bytes in URL-safe base64, as ``kafka-storage random-uuid`` prints.

    Like Kafka's ``Uuid.randomUuid()``, never one starting with "-" (a command line would read it as an option).
    """
    while True:
        identity = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not identity.startswith("-"):
            return identity


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node_properties(node_id: int, voters: str, broker_port: int, controller_port: int, log_dir: Path,
                    brokers: int, flush_messages: int | None = None) -> dict[str, str]:
    """The server.properties of one combined-mode node.

    Only what a loopback cluster needs differs from Kafka's defaults: the KRaft
    identity and listeners (no defaults), the internal topics' replication
    factors (default 3, which one broker cannot meet) and the first rebalance's
    delay (default 3 s; Kafka's own config/server.properties sets 0 too).
    Durability stays Kafka's default (acknowledged from the page cache, fsync
    left to the OS) unless ``flush_messages`` is given: ``1`` fsyncs each append
    before acknowledging it, which is what kstream's acks=all promises.
    """
    min_isr = str(min(2, brokers))
    properties = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(log_dir),
        "offsets.topic.replication.factor": str(brokers),
        "transaction.state.log.replication.factor": str(brokers),
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": str(brokers),
        "share.coordinator.state.topic.min.isr": min_isr,
        "group.initial.rebalance.delay.ms": "0",
    }
    if flush_messages is not None:
        if flush_messages < 1:
            raise KStreamError(f"flush_messages={flush_messages}: give a count of records >= 1 (1: fsync every append)")
        properties["log.flush.interval.messages"] = str(flush_messages)
    return properties


@dataclass
class KafkaNode:
    """One JVM of the peer: its id, ports, folder and (while it runs) its process."""

    node_id: int
    broker_port: int
    controller_port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    @property
    def properties_path(self) -> Path:
        return self.directory / "server.properties"

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


_RUNNING: set[KafkaPeer] = set()
"""Peers started and not stopped: stopped at interpreter exit, so no JVM outlives its Python."""


@atexit.register
def _stop_all() -> None:
    for peer in list(_RUNNING):
        peer.stop()


class KafkaPeer:
    """Apache Kafka on loopback: ``brokers`` combined-mode nodes (1, or 3 for replication scenarios).

    ``with KafkaPeer(brokers=3) as peer: ... peer.bootstrap ...`` starts and stops it.
    ``broker_config`` adds or overrides server properties on every node;
    ``directory`` (kept on stop; its ``node-N`` folders are made anew at each start)
    replaces the temporary folder.
    """

    def __init__(self, brokers: int = 1, *, flush_messages: int | None = None, heap: str = DEFAULT_HEAP,
                 broker_config: Mapping[str, str] | None = None, lib: Path | None = None,
                 directory: Path | None = None) -> None:
        if brokers < 1:
            raise KStreamError(f"brokers={brokers}: a peer has at least one broker")
        self.brokers = brokers
        self.flush_messages = flush_messages
        self.heap = heap
        self.broker_config = dict(broker_config or {})
        self.lib = lib or kafka_lib()
        self._given_directory = directory
        self.directory: Path | None = None
        self.nodes: list[KafkaNode] = []
        self.start_seconds = self.stop_seconds = 0.0
        self.killed_nodes: list[int] = []  # the nodes the last stop() had to SIGKILL

    @property
    def bootstrap(self) -> str:
        if not self.nodes:
            raise KStreamError("the Kafka peer is not started: call start() or use it in a with block")
        return ",".join(f"127.0.0.1:{node.broker_port}" for node in self.nodes)

    def __enter__(self) -> KafkaPeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 120.0) -> KafkaPeer:
        """Format and start every node; return once all answer (KStreamError with the log's tail if not)."""
        if self.nodes:
            raise KStreamError(f"the Kafka peer is already running at {self.bootstrap}: stop() it first")
        reason = missing(self.lib)
        if reason:
            raise KStreamError(reason)
        started_at = time.monotonic()
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self._prepare()
                self._launch(started_at + timeout_s)
                break
            except KStreamError:
                port_taken = any("Address already in use" in node.log_tail(200) for node in self.nodes)
                self.stop()
                if not port_taken or attempt == START_ATTEMPTS:
                    raise
            except BaseException:  # (Ctrl-C or a bug: no JVM left behind)
                self.stop()
                raise
        self.start_seconds = time.monotonic() - started_at
        return self

    def stop(self, stop_timeout_s: float = 30.0) -> None:
        """SIGTERM every node, SIGKILL those still running after ``stop_timeout_s``; remove the folder."""
        started_at = time.monotonic()
        running = [node for node in self.nodes if node.process is not None and node.process.poll() is None]
        for node in running:
            assert node.process is not None
            node.process.terminate()
        deadline = started_at + stop_timeout_s
        self.killed_nodes = []
        for node in running:
            assert node.process is not None
            try:
                node.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait()
                self.killed_nodes.append(node.node_id)
        _RUNNING.discard(self)
        if self.directory is not None and self._given_directory is None:
            shutil.rmtree(self.directory, ignore_errors=True)
        self.directory = None
        self.nodes = []
        self.stop_seconds = time.monotonic() - started_at

    def restart(self, down_s: float = 0.0, timeout_s: float = 120.0, stop_timeout_s: float = 60.0) -> None:
        """Stop every node with SIGTERM (a controlled shutdown; SIGKILL after ``stop_timeout_s``),
        wait ``down_s``, and start them again on the same ports and data: a broker restart, as an
        operator's (stop() would remove the data, start() format a new cluster)."""
        if not self.nodes:
            raise KStreamError("the Kafka peer is not started: start() it before restart()")
        for node in self.nodes:
            if node.process is None:
                continue
            node.process.terminate()
            try:
                node.process.wait(stop_timeout_s)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait()
        time.sleep(down_s)
        self._launch(time.monotonic() + timeout_s)

    def _classpath(self) -> str:
        return str(self.lib / "broker" / "*")

    def _prepare(self) -> None:
        """A fresh folder, ports and server.properties per node, and formatted storage."""
        if self._given_directory is not None:
            self.directory = self._given_directory
            for node_id in range(1, self.brokers + 1):  # a new cluster each start: never an old node's data
                shutil.rmtree(self.directory / f"node-{node_id}", ignore_errors=True)
            self.directory.mkdir(parents=True, exist_ok=True)
        else:
            self.directory = Path(tempfile.mkdtemp(prefix="kstream-kafka-peer-"))
        (self.directory / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        self.nodes = [KafkaNode(node_id, free_port(), free_port(), self.directory / f"node-{node_id}")
                      for node_id in range(1, self.brokers + 1)]
        voters = ",".join(f"{node.node_id}@127.0.0.1:{node.controller_port}" for node in self.nodes)
        for node in self.nodes:
            node.directory.mkdir(parents=True, exist_ok=True)
            properties = node_properties(node.node_id, voters, node.broker_port, node.controller_port,
                                         node.directory / "data", self.brokers, self.flush_messages)
            properties.update(self.broker_config)
            node.properties_path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        identity = cluster_id()
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda node: self._format(node, identity), self.nodes))

    def _java(self, main_class: str, *args: str, heap: str, options: Sequence[str] = JVM_OPTIONS) -> list[str]:
        assert self.directory is not None
        return ["java", f"-Xmx{heap}", f"-Xms{heap}", *options,
                f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}",
                "-cp", self._classpath(), main_class, *args]

    def _format(self, node: KafkaNode, identity: str) -> None:
        command = self._java("kafka.tools.StorageTool", "format", f"--cluster-id={identity}",
                             "--config", str(node.properties_path), "--ignore-formatted",
                             heap="256m", options=FORMAT_JVM_OPTIONS)
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise KStreamError(f"kafka-storage format of node {node.node_id} failed (exit {done.returncode}; "
                               f"a bad broker_config / --set value?): "
                               f"{(done.stderr or done.stdout).strip()[:1500]}")

    def _launch(self, deadline: float) -> None:
        _RUNNING.add(self)
        for node in self.nodes:
            with open(node.log_path, "ab") as log:
                # A session of its own: Ctrl-C at a terminal reaches the CLI, which stops the nodes in order.
                node.process = subprocess.Popen(self._java("kafka.Kafka", str(node.properties_path), heap=self.heap),
                                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)
        for node in self.nodes:
            self._wait_answers(node, deadline)
        self._wait_metadata(deadline)

    def _wait_answers(self, node: KafkaNode, deadline: float) -> None:
        while True:
            assert node.process is not None
            if node.process.poll() is not None:
                raise KStreamError(f"Kafka node {node.node_id} exited during start-up with code "
                                   f"{node.process.returncode}; its log (node-{node.node_id}/server.log) ends:\n"
                                   f"{node.log_tail()}")
            if api_versions_answered(node.broker_port):
                return
            if time.monotonic() > deadline:
                raise KStreamError(f"Kafka node {node.node_id} did not answer on 127.0.0.1:{node.broker_port} "
                                   f"in time; its log (node-{node.node_id}/server.log) ends:\n{node.log_tail()}")
            time.sleep(0.1)

    def _wait_metadata(self, deadline: float) -> None:
        """With confluent-kafka installed: wait until the metadata lists every broker (all registered)."""
        try:
            from confluent_kafka.admin import AdminClient
        except ImportError:
            return
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        seen = 0
        while time.monotonic() < deadline:
            try:
                seen = len(admin.list_topics(timeout=5).brokers)
            except Exception:
                seen = 0
            if seen == self.brokers:
                return
            time.sleep(0.1)
        raise KStreamError(f"Kafka's metadata lists {seen} of {self.brokers} brokers after start-up; "
                           f"node 1's log ends:\n{self.nodes[0].log_tail()}")


def create_topic(bootstrap: str, name: str, partitions: int = 1, replicas: int = 1,
                 config: Mapping[str, str] | None = None, timeout_s: float = 30.0) -> None:
    """Create a topic on the peer with confluent-kafka's AdminClient; return once the metadata shows it.

    Kafka acknowledges CreateTopics when its controller has committed the topic; the
    broker's metadata cache catches up a moment later (until then a metadata request
    shows no partitions). So this waits until every partition has a leader.
    """
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=replicas,
                                  config=dict(config or {}))])[name].result(timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        topic = admin.list_topics(name, timeout=timeout_s).topics.get(name)
        led = [] if topic is None else [p for p in topic.partitions.values() if p.leader >= 0]
        if len(led) == partitions:
            return
        if time.monotonic() > deadline:
            raise KStreamError(f"topic {name!r}: {len(led)} of {partitions} partitions have a leader "
                               f"{timeout_s} s after it was created")
        time.sleep(0.05)


def api_versions_answered(port: int, timeout_s: float = 1.0) -> bool:
    """True when a Kafka broker on 127.0.0.1:``port`` answers an ApiVersions v0 request without error."""
    client_id = b"kstream-peer"
    request = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id  # api key 18, v0, correlation id 1
    try:
        with socket.create_connection(("127.0.0.1", port), timeout_s) as sock:
            sock.sendall(struct.pack(">i", len(request)) + request)
            response = b""
            while len(response) < 10:  # size, correlation id, error code
                chunk = sock.recv(64)
                if not chunk:
                    return False
                response += chunk
    except OSError:
        return False
    _size, correlation_id, error_code = struct.unpack(">iih", response[:10])
    return correlation_id == 1 and error_code == 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kstream.tools.perf.kafka_peer",
        description="Start Apache Kafka (KRaft combined mode) on loopback from the jars `make kafka` resolved, "
                    "print its bootstrap address, and run until Ctrl-C (then stop it and remove its folder).")
    parser.add_argument("--brokers", type=int, choices=(1, 3), default=1,
                        help="1 broker, or 3 (a three-voter controller quorum) for replication (default 1)")
    parser.add_argument("--flush-messages", type=int, default=None, metavar="N",
                        help="log.flush.interval.messages: 1 fsyncs every append before acknowledging it "
                             "(default: Kafka's, fsync left to the OS)")
    parser.add_argument("--heap", default=DEFAULT_HEAP, help=f"each node's -Xmx/-Xms (default {DEFAULT_HEAP})")
    parser.add_argument("--dir", type=Path, default=None,
                        help="the nodes' folder, kept on exit (default: a temporary folder, removed)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a server property for every node (repeatable)")
    args = parser.parse_args(argv)
    overrides: dict[str, Any] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--set {item!r}: give KEY=VALUE")
        overrides[key] = value
    peer = KafkaPeer(args.brokers, flush_messages=args.flush_messages, heap=args.heap, broker_config=overrides,
                     directory=args.dir)
    stop_requested = False

    def request_stop(_signum: int, _frame: Any) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        peer.start()
        print(f"Apache Kafka {kafka_version(peer.lib)}: {args.brokers} broker(s) up in {peer.start_seconds:.1f} s "
              f"(folder {peer.directory})", file=sys.stderr)
        print(peer.bootstrap, flush=True)
        while not stop_requested:
            time.sleep(0.2)
    except KStreamError as err:
        print(f"kafka_peer: {err}", file=sys.stderr)
        return 1
    finally:
        peer.stop()
    print(f"stopped in {peer.stop_seconds:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
