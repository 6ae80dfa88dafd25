"""Several perf clients at once, each in its own process, started together.

The seeds ran several producer (or consumer) clients and summed them; a
Python client is one interpreter with one GIL, so kstream's clients are
processes. Every client builds its producer or consumer first, then waits at
a barrier; the timed parts start together and :func:`~kstream.tools.perf.result.combine`
sums the records over the span from the first start to the last end.

``run_clients`` takes a module-level function (spawned processes import it
by name) that accepts ``start_gate`` and returns a ``PerfResult``.
"""

from __future__ import annotations

import multiprocessing
import queue
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from kstream.errors import KStreamError
from kstream.tools.perf.result import PerfResult, combine

MAX_CLIENTS = 64
START_TIMEOUT_S = 120.0
"""How long the clients may take to build their producers/consumers and meet."""
RUN_TIMEOUT_S = 3600.0

ClientJob = tuple[Callable[..., PerfResult], dict[str, Any]]


def _client(job: ClientJob, barrier: Any, results: Any, index: int) -> None:
    function, kwargs = job

    def start_gate() -> None:
        barrier.wait(START_TIMEOUT_S)

    try:
        results.put((index, function(**kwargs, start_gate=start_gate), None))
    except BaseException as err:  # reported to the parent, which raises it
        barrier.abort()
        results.put((index, None, f"{type(err).__name__}: {err}\n{traceback.format_exc()}"))


def run_clients(jobs: Sequence[ClientJob]) -> list[PerfResult]:
    """Run each job in its own process, timed parts together; their results in job order."""
    if not 1 <= len(jobs) <= MAX_CLIENTS:
        raise KStreamError(f"{len(jobs)} clients: run 1-{MAX_CLIENTS} at once")
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(len(jobs)), context.Queue()
    children = [context.Process(target=_client, args=(job, barrier, results, i), daemon=True)
                for i, job in enumerate(jobs)]
    for child in children:
        child.start()
    collected: dict[int, PerfResult] = {}
    errors: list[str] = []
    try:
        for _ in children:
            try:
                index, result, error = results.get(timeout=START_TIMEOUT_S + RUN_TIMEOUT_S)
            except queue.Empty:
                raise KStreamError("a perf client neither finished nor failed within "
                                   f"{START_TIMEOUT_S + RUN_TIMEOUT_S:.0f} s") from None
            if error is not None:
                errors.append(error)
            else:
                collected[index] = result
    finally:
        for child in children:
            child.join(timeout=30)
            if child.is_alive():
                child.kill()
                child.join()
    if errors:
        first = next((e for e in errors if "BrokenBarrierError" not in e), errors[0])
        raise KStreamError(f"{len(errors)} of {len(jobs)} perf clients failed; the first: {first}")
    return [collected[i] for i in range(len(jobs))]


def run_together(jobs: Sequence[ClientJob]) -> PerfResult:
    """:func:`run_clients`, combined into one result (a single job runs in this process)."""
    if len(jobs) == 1:
        function, kwargs = jobs[0]
        return function(**kwargs)
    return combine(run_clients(jobs))


def split_partitions(partitions: int, clients: int) -> list[list[int]]:
    """Round-robin partition shares, as a group's assignor would give ``clients`` members."""
    if clients > partitions:
        raise KStreamError(f"{clients} consumers for {partitions} partitions: "
                           "each consumer needs at least one partition")
    return [list(range(i, partitions, clients)) for i in range(clients)]


def run_threads(jobs: Sequence[ClientJob]) -> PerfResult:
    """The jobs in threads of this process, timed parts together (producer threads vs processes)."""
    import threading

    if not 1 <= len(jobs) <= MAX_CLIENTS:
        raise KStreamError(f"{len(jobs)} client threads: run 1-{MAX_CLIENTS} at once")
    barrier = threading.Barrier(len(jobs))
    results: list[PerfResult | BaseException | None] = [None] * len(jobs)

    def client(i: int) -> None:
        function, kwargs = jobs[i]
        try:
            results[i] = function(**kwargs, start_gate=lambda: barrier.wait(START_TIMEOUT_S))
        except BaseException as err:  # re-raised below, in the caller's thread
            barrier.abort()
            results[i] = err

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:
        raise KStreamError(f"{len(failed)} of {len(jobs)} client threads failed: {failed[0]}") from failed[0]
    done = [r for r in results if isinstance(r, PerfResult)]
    return combine(done)
