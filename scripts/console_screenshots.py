"""Screenshots of every console page, light and dark, from a small demo cluster.

    python scripts/console_screenshots.py [--out docs/console] [--chromium /usr/bin/chromium]

Builds a demo cluster in a temporary directory (:func:`demo_cluster`: topics, one
typed, groups with commits and a lag history, an open transaction), serves the
console over it on a free port of 127.0.0.1 in this process (:func:`serve_console`:
uvicorn in a thread), and saves ``PAGE-light.png`` and ``PAGE-dark.png`` (1280x800,
the viewport only) for each page of :data:`PAGES`. A page that does not answer 200,
shows an error box or a failed chart stops the script (exit 1): a screenshot of a
broken page is worse than none.

The browser tests (tests/tools/browser) import this module for the same parts, so the
script stays working. Chromium is Debian's package (scripts/ensure-browser.sh)
driven by playwright through ``executable_path``; playwright's own browser
download is never used (it cannot work here). Needs the ``dev`` extra (playwright).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

VIEWPORT = {"width": 1280, "height": 800}
# Headless chromium with nothing that reaches the network on its own (updates, sync, QUIC
# probes) and no sandbox (tests run as root in containers, where the sandbox cannot start).
# playwright's launch() gives each browser a fresh --user-data-dir of its own (a temporary
# profile it deletes on close), so no state survives between runs.
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync")
CHROMIUM_NAMES = ("chromium", "chromium-browser")
SERVER_START_TIMEOUT_S = 15.0
SERVER_STOP_TIMEOUT_S = 10.0
PAGE_TIMEOUT_MS = 15_000
HISTORY_ROUNDS = 12  # sampler rounds of the demo's lag history, one a minute back from now
HISTORY_STEP_MS = 60_000
DEMO = "demo"
# (file name, URL path) of every page shot; the demo cluster's names.
PAGES = (
    ("clusters", "/"),
    ("overview", f"/c/{DEMO}"),
    ("topics", f"/c/{DEMO}/topics"),
    ("topic", f"/c/{DEMO}/topics/audit"),
    ("messages", f"/c/{DEMO}/topics/payments/messages?partition=0"),
    ("groups", f"/c/{DEMO}/groups"),
    ("group", f"/c/{DEMO}/groups/billing"),
    ("group-reset", f"/c/{DEMO}/groups/billing/reset?method=to-earliest&all_topics=true"),
    ("reassign", f"/c/{DEMO}/reassign"),
    ("mirrors", f"/c/{DEMO}/mirrors"),
)
THEMES = ("light", "dark")


def find_chromium() -> str | None:
    """``KSTREAM_CHROMIUM`` if set, else a chromium on PATH (Debian's /usr/bin/chromium)."""
    chosen = os.environ.get("KSTREAM_CHROMIUM")
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def launch_chromium(playwright: Any, executable: str) -> Any:
    """A headless chromium (playwright ``Browser``) from ``executable``."""
    return playwright.chromium.launch(executable_path=executable, headless=True, args=list(CHROMIUM_ARGS))


@contextlib.contextmanager
def demo_cluster(path: str, history_rounds: int = HISTORY_ROUNDS) -> Iterator[Any]:
    """A small cluster at ``path``; yields the sampler that wrote its history (None when
    ``history_rounds`` is 0), whose latest round feeds the console's rates.

    * ``orders``: 3 partitions, 60 records; ``payments``: typed (id int64, amount double,
      currency string), 1 partition; ``audit``: 1 partition with an open transaction
      holding its last stable offset until the context ends (then it is aborted).
    * groups ``billing`` (orders, lagging more each round), ``reports`` (orders and
      payments, stopped committing) and ``search`` (payments, caught up), with
      ``history_rounds`` sampler rounds written to ``__kstream_metrics``, one every
      minute up to now, so the lag charts have history.
    * mirrors (their status records, :func:`demo_mirrors`): ``orders-to-kafka`` running,
      ``clicks-from-kafka`` stale, ``payments-backfill`` stopped.
    """
    import pyarrow as pa

    from kstream import ConsumerGroups, Producer
    from kstream.admin import Admin, NewTopic
    from kstream.log.cluster.cluster import Cluster
    from kstream.tools.monitor.sampler import Sampler

    typed = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("currency", pa.string())])
    with Admin({"cluster": path}) as admin:
        for new in (NewTopic("orders", 3, 1), NewTopic("payments", 1, 1, schema=typed), NewTopic("audit", 1, 1)):
            admin.create_topics([new])[new.topic].result()
    producer = Producer({"cluster": path, "linger.ms": 0})
    service = ConsumerGroups(Cluster.open(path))
    sampler = Sampler(path, 1.0, True) if history_rounds else None
    try:
        for i in range(60):
            value = f'{{"order": {i}, "item": "sku-{i % 7}", "qty": {1 + i % 4}}}'.encode()
            producer.produce("orders", value, key=f"customer-{i % 5}".encode(), partition=i % 3,
                             headers=[("source", b"web")])
        for i in range(8):
            producer.produce("payments", {"id": i, "amount": 9.5 * (i + 1), "currency": ("EUR", "USD")[i % 2]})
        producer.produce("audit", b"login alice")
        producer.flush()
        service.commit("reports", {("orders", 0): 10, ("orders", 1): 12, ("payments", 0): 3})
        start_ms = int(time.time() * 1000) - history_rounds * HISTORY_STEP_MS
        for round_number in range(history_rounds):
            for i in range(9):
                producer.produce("orders", f'{{"order": "late-{round_number}-{i}"}}'.encode(), partition=i % 3)
            producer.flush()
            done = 18 + 2 * round_number  # lag grows by one a round: Burrow says WARN
            service.commit("billing", {("orders", p): done for p in range(3)})
            assert sampler is not None
            sampler.sample(now_ms=start_ms + (round_number + 1) * HISTORY_STEP_MS)
        if not history_rounds:
            service.commit("billing", {("orders", p): 18 for p in range(3)})
        service.commit("search", {("payments", 0): 8})  # caught up: lag 0, Burrow's OK
        demo_mirrors(path)
    finally:
        producer.close()
        service.close()
        service.cluster.close()
    transactional = Producer({"cluster": path, "transactional.id": "demo-audit", "linger.ms": 0})
    try:
        transactional.init_transactions()
        transactional.begin_transaction()
        transactional.produce("audit", b"password change bob (uncommitted)", partition=0)
        transactional.flush()
        yield sampler
    finally:
        transactional.abort_transaction()
        transactional.close()
        if sampler is not None:
            sampler.stop()


DEMO_MIRROR_INTERVAL_S = 60.0  # the demo's running mirror stays "running" (not stale) for minutes


def demo_mirrors(path: str) -> None:
    """Status records as three ``kstream mirror`` runs would have written them into ``path``
    (kstream.mirror.status): one running into Kafka (orders, some lag), one into kstream that
    stopped heartbeating an hour ago (stale), one finished (stopped)."""
    from kstream.mirror import MirrorOptions, parse_endpoint
    from kstream.mirror.progress import Progress
    from kstream.mirror.status import StatusWriter, run_base

    now_ms = int(time.time() * 1000)
    runs = (("orders-to-kafka", f"cluster:{path}", "kafka:kafka-1:9092", "orders", 3, "running", 0),
            ("clicks-from-kafka", "kafka:kafka-1:9092", f"cluster:{path}", "clicks", 2, "running", 3600_000),
            ("payments-backfill", f"cluster:{path}", "kafka:kafka-1:9092", "payments", 1, "stopped", 600_000))
    for name, source, target, topic, partitions, state, age_ms in runs:
        options = MirrorOptions(parse_endpoint(source), parse_endpoint(target), name, topics=(topic,),
                                progress_interval_s=DEMO_MIRROR_INTERVAL_S, until_end=state == "stopped")
        progress = Progress(name)
        for p in range(partitions):
            progress.positions[(topic, p)] = 1000 * (p + 1)
            progress.ends[(topic, p)] = 1000 * (p + 1) + (40 * p if state == "running" else 0)
            progress.targets[(topic, p)] = 1000 * (p + 1) + 7
        progress.records = sum(progress.positions.values())
        progress.started -= 120.0  # the run's rate: its records over two minutes
        direction = "into-kafka" if target.startswith("kafka:") else "into-kstream"
        base = {**run_base(options, direction), "started_ms": now_ms - age_ms - 600_000}  # ran 10 minutes
        writer = StatusWriter(path, base)
        try:
            writer.write(state, progress, now_ms=now_ms - age_ms)
        finally:
            writer.close()


@contextlib.contextmanager
def serve_console(clusters: Any, *, read_only: bool = False, samplers: Any = None) -> Iterator[str]:
    """The console (``create_app`` as ``kstream console`` builds it, loopback host names
    only) served by uvicorn in a daemon thread on a free port; yields its base URL. The
    socket is bound before the thread starts, so there is no race for the port."""
    import uvicorn

    from kstream.tools.cli.web import LOOPBACK_HOSTS
    from kstream.tools.web.app import create_app

    app = create_app(clusters, read_only=read_only, samplers=samplers, allowed_hosts=LOOPBACK_HOSTS)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    # Open SSE streams end when the browser goes; this bounds a shutdown that finds one open.
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name="console-server",
                              daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the console did not start on port {port} within {SERVER_START_TIMEOUT_S} s")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(SERVER_STOP_TIMEOUT_S)
        listener.close()
        if thread.is_alive():
            raise RuntimeError(f"the console on port {port} did not stop within {SERVER_STOP_TIMEOUT_S} s")


# Every chart drawn (a uPlot on the div) or replaced by a text (no history, no uPlot: tables).
CHARTS_SETTLED = """() => [...document.querySelectorAll('.chart[data-series]')]
    .every(d => d.kstreamPlot || d.textContent.trim() !== '')"""


def shoot(browser: Any, base_url: str, out_dir: str) -> list[str]:
    """Every page of :data:`PAGES` in every theme as PNGs under ``out_dir``; returns their
    paths. RuntimeError naming the page when one fails (status, error box, chart)."""
    os.makedirs(out_dir, exist_ok=True)
    saved = []
    for theme in THEMES:
        context = browser.new_context(viewport=VIEWPORT, color_scheme=theme)
        context.add_cookies([{"name": "kstream_theme", "value": theme, "url": base_url}])
        context.set_default_timeout(PAGE_TIMEOUT_MS)
        try:
            page = context.new_page()
            for name, path in PAGES:
                response = page.goto(base_url + path)
                if response is None or response.status != 200:
                    raise RuntimeError(f"{path}: status {None if response is None else response.status}")
                if page.locator(".box.error").count():
                    raise RuntimeError(f"{path}: error box: {page.locator('.box.error').first.inner_text()}")
                page.wait_for_function(CHARTS_SETTLED)
                failed = page.locator(".chart", has_text="Chart data failed")
                if failed.count():
                    raise RuntimeError(f"{path}: {failed.first.inner_text()}")
                target = os.path.join(out_dir, f"{name}-{theme}.png")
                page.screenshot(path=target)
                saved.append(target)
        finally:
            context.close()
    return saved


def run(out_dir: str, browser: Any = None, chromium: str | None = None) -> list[str]:
    """Demo cluster, console, screenshots into ``out_dir``. ``browser``: a playwright
    Browser to use (the tests pass theirs); None: launch ``chromium`` (or find one)."""
    from kstream.tools.web.clusters import ClusterRef, check_clusters

    with tempfile.TemporaryDirectory(prefix="kstream-screens-") as work:
        path = os.path.join(work, DEMO)
        with demo_cluster(path) as sampler:
            clusters = check_clusters([ClusterRef(DEMO, path)])
            with serve_console(clusters, samplers={DEMO: sampler}) as base_url:
                if browser is not None:
                    return shoot(browser, base_url, out_dir)
                from playwright.sync_api import sync_playwright

                executable = chromium or find_chromium()
                if executable is None:
                    raise RuntimeError("no chromium found (apt-get install chromium, or --chromium PATH)")
                with sync_playwright() as playwright:
                    launched = launch_chromium(playwright, executable)
                    try:
                        return shoot(launched, base_url, out_dir)
                    finally:
                        launched.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join("docs", "console"), help="directory for the PNGs")
    parser.add_argument("--chromium", help="the chromium executable (default: KSTREAM_CHROMIUM or PATH)")
    args = parser.parse_args(argv)
    try:
        saved = run(args.out, chromium=args.chromium)
    except RuntimeError as err:
        print(f"console_screenshots: {err}", file=sys.stderr)
        return 1
    for target in saved:
        print(f"{target} ({os.path.getsize(target) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
