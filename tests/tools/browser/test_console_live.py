"""The console's live parts in chromium: the group's lag chart and offsets table moving
while a producer runs, and the message browser's live tail (both over SSE)."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid

import pytest

from kstream import Producer
from kstream.tools.web.clusters import ClusterRef
from kstream.tools.web.figures import make_samplers
from kstream.tools.web.state import HERE

pytestmark = pytest.mark.browser

MAX_BACKGROUND_RECORDS = 5_000  # the producer thread's bound (it stops long before, when the test ends)
LIVE_INTERVAL_S = 1.0  # the offsets table's SSE interval in these tests (the page's is 5 s)


def needs_vendored_assets() -> None:
    if not os.path.isfile(os.path.join(HERE, "static", "vendor", "htmx.min.js")):
        pytest.skip("live parts need the vendored htmx/uPlot: run scripts/vendor_web_assets.py (make web-assets)")


@pytest.fixture
def producing(serve):
    """start(path) -> a thread producing small batches to orders (every partition) until the
    test ends; the thread's errors fail the test."""
    stop = threading.Event()
    errors: list[BaseException] = []
    threads = []

    def start(path: str) -> None:
        def run() -> None:
            try:
                with Producer({"cluster": path, "linger.ms": 0}) as producer:
                    for i in range(MAX_BACKGROUND_RECORDS):
                        if stop.wait(0.05):
                            return
                        producer.produce("orders", f'{{"live": {i}}}'.encode(), partition=i % 3)
                        producer.flush()
            except BaseException as err:
                errors.append(err)

        thread = threading.Thread(target=run, name="background-producer", daemon=True)
        thread.start()
        threads.append(thread)

    yield start
    stop.set()
    for thread in threads:
        thread.join(10)
    assert not errors, errors


def test_the_lag_chart_and_table_move_while_a_producer_runs(serve, demo, producing):
    needs_vendored_assets()
    # A sampler writing __kstream_metrics every second (its minimum): the chart's history.
    sampler = make_samplers({"demo": ClusterRef("demo", demo)}, 1.0, write=True)["demo"]
    console = serve(samplers={"demo": sampler})
    sampler.start()
    try:
        page = console.page()
        # The page's live table comes every 5 s; ask for one a second (same route, same code).
        page.route("**/groups/billing/live", lambda route: route.continue_(
            url=f"{route.request.url}?interval_s={LIVE_INTERVAL_S}"))
        page.goto("/c/demo/groups/billing")
        page.wait_for_function("() => document.querySelector('.chart').kstreamPlot")
        before = page.evaluate("""() => { const d = document.querySelector('.chart').kstreamPlot.data;
            return {points: d[0].length, lag: Math.max(...d.slice(1).map(s => s[s.length - 1] ?? 0))}; }""")
        log_end_before = page.locator("#offsets tbody tr").first.locator("td").nth(3).inner_text()

        producing(console.path)
        # The chart redraws on each SSE message: wait for more points and a higher last lag.
        page.wait_for_function("""(before) => {
            const d = document.querySelector('.chart').kstreamPlot.data;
            const lag = Math.max(...d.slice(1).map(s => s[s.length - 1] ?? 0));
            return d[0].length > before.points && lag > before.lag; }""", arg=before)
        page.wait_for_function("""(before) => Number(document.querySelector('#offsets tbody tr')
            .querySelectorAll('td')[3].textContent) > Number(before)""", arg=log_end_before)
    finally:
        sampler.stop()


def test_the_live_tail_shows_a_new_record(serve, demo):
    needs_vendored_assets()
    console = serve()
    page = console.page()
    # Set before the page's scripts run, so the event cannot come before the listener.
    page.add_init_script("document.addEventListener('htmx:sseOpen', () => { window.tailOpen = true; });")
    page.goto("/c/demo/topics/orders/messages?partition=1")
    page.wait_for_function("() => window.tailOpen === true")  # the tail's consumer sits at the end now
    assert page.locator("#tail tr").count() == 0
    probe = f"tail-probe-{uuid.uuid4().hex[:8]}"
    with Producer({"cluster": demo, "linger.ms": 0}) as producer:
        producer.produce("orders", probe.encode(), key=b"probe", partition=1)
        producer.flush()
    row = page.locator("#tail tr", has_text=probe)
    row.wait_for()
    cells = row.locator("td")
    assert cells.nth(0).inner_text() == "1"  # partition
    assert cells.nth(1).inner_text() == "20"  # orders-1 had 20 records: the new one is offset 20
    assert cells.nth(3).inner_text() == "probe"
    assert page.locator("#tail tr").count() == 1  # only what came after the tail opened


# The y axis's tick labels, each measured in the axis's font, and what the axis gives them.
Y_LABELS = """() => { const u = document.querySelector('.chart').kstreamPlot, a = u.axes[1];
    u.ctx.font = a.font[0];
    return {labels: a._values, splits: a._splits, room: a._size - a.ticks.size - a.gap,
            widths: a._values.map(v => u.ctx.measureText(v).width / uPlot.pxRatio)}; }"""


@pytest.mark.parametrize("top, expected", [(12_345_678, "M"), (4_000_000_000, "G"), (3, "")])
def test_the_lag_charts_y_labels_fit_their_axis(serve, top, expected):
    """Lag in the millions printed 12,000,000 into uPlot's fixed 50 px axis: the labels ran off
    the chart's left edge. Compact labels (12M) on an axis as wide as its longest label, and
    whole-number steps for a count of records."""
    needs_vendored_assets()
    console = serve()
    page = console.page()
    now_ms = int(time.time() * 1000)
    points = [[now_ms - (60 - i) * 60_000, round(top * (i + 20) / 80)] for i in range(61)]
    body = json.dumps({"points": points})
    page.route(lambda url: "/api/series" in url,
               lambda route, request: route.fulfill(status=200, content_type="application/json", body=body))
    page.goto("/c/demo/groups/billing")
    page.wait_for_function("() => document.querySelector('.chart').kstreamPlot")
    y = page.evaluate(Y_LABELS)
    assert y["labels"] and all(label.endswith(expected) and len(label) <= 6 for label in y["labels"]), y
    assert max(y["widths"]) <= y["room"], y
    assert all(float(split).is_integer() for split in y["splits"]), y  # no 7.5 records
