"""A Spark standalone cluster for the chaos classes that need executors on two hosts: a master and
two workers (one core, 1 GiB each) started from pyspark's own jars, as
tests/spark/test_tiered_table_standalone.py does, but the workers on two loopback addresses
(127.0.0.1 and 127.0.0.2). Spark never runs a speculative copy of a task on a host that runs an
attempt of it already (TaskSetManager.hasAttemptOnHost), and a local master runs no speculation
at all (TaskSchedulerImpl starts it only when not local): two hosts are the least a real
speculative attempt needs. Every process runs in a session of its own; :func:`stop` kills each
group (a worker's executors with it).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pyspark

SPARK_HOME = os.path.dirname(os.path.abspath(pyspark.__file__))
HOSTS = ("127.0.0.1", "127.0.0.2")
START_TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(work: str, src: str) -> tuple[str, list[subprocess.Popen]]:
    """(the master's URL, the processes): a master and one worker per host in :data:`HOSTS`."""
    java = ["java", "-Xmx256m", "-cp", os.path.join(SPARK_HOME, "jars", "*")]
    env = {**os.environ, "SPARK_HOME": SPARK_HOME, "SPARK_SCALA_VERSION": "2.13", "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    commands = [("master", [*java, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                            "--port", str(port), "--webui-port", str(_free_port())])]
    for i, host in enumerate(HOSTS):
        folder = os.path.join(work, f"worker-{i}")
        os.makedirs(folder, exist_ok=True)
        commands.append((f"worker-{i}", [*java, "org.apache.spark.deploy.worker.Worker", url, "--host", host,
                                         "--cores", "1", "--memory", "1g", "--work-dir", folder,
                                         "--webui-port", str(_free_port())]))
    processes: list[subprocess.Popen] = []
    try:
        for name, command in commands:
            with open(os.path.join(work, f"{name}.log"), "w") as out:
                processes.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                                  start_new_session=True))
            if name == "master":
                _wait_for_port(port, processes[-1])
    except BaseException:
        stop(processes)
        raise
    return url, processes


def _wait_for_port(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the standalone master did not listen on {port} (exit {process.poll()})")
        time.sleep(0.2)


def stop(processes: list[subprocess.Popen]) -> None:
    """SIGKILL each process's group (the JVM and the executors a worker launched)."""
    for process in reversed(processes):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
