"""The mirrors page in chromium: reached from the nav, each mirror's state and partitions,
its JSON fetched from the page, and readable with JavaScript off. The demo cluster holds three
mirrors' status records (scripts/console_screenshots.py demo_mirrors: running, stale, stopped)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_the_mirrors_page_shows_each_mirror_its_state_and_its_partitions(serve):
    console = serve(read_only=True)
    page = console.page()
    page.goto("/c/demo")
    page.locator("header nav a", has_text="Mirrors").click()
    page.wait_for_url("**/c/demo/mirrors")
    rows = page.locator("#mirrors tbody tr")
    assert rows.count() == 3
    states = {rows.nth(i).get_attribute("data-mirror"): rows.nth(i).locator(".mirror-state").inner_text()
              for i in range(3)}
    assert states == {"orders-to-kafka": "running", "clicks-from-kafka": "stale", "payments-backfill": "stopped"}
    orders = page.locator("#mirrors tbody tr[data-mirror='orders-to-kafka'] td").all_inner_texts()
    assert orders[2:6] == ["into-kafka", f"cluster:{console.path}", "kafka:kafka-1:9092", "orders"]
    assert orders[8] == "120"  # total lag: 0 + 40 + 80
    page.locator("#mirrors a", has_text="orders-to-kafka").click()
    section = page.locator("#mirror-orders-to-kafka")
    assert section.is_visible()
    cells = [row.locator("td").all_inner_texts() for row in section.locator("tbody tr").all()]
    assert cells == [["orders", "0", "1000", "1000", "1007", "0"], ["orders", "1", "2000", "2040", "2007", "40"],
                     ["orders", "2", "3000", "3080", "3007", "80"]]

    body = page.evaluate("fetch('/c/demo/api/mirrors').then(r => r.json())")
    shown = {m["mirror"]: (m["shown_state"], m["total_lag"]) for m in body["mirrors"]}
    assert shown == {"orders-to-kafka": ("running", 120), "clicks-from-kafka": ("stale", 40),
                     "payments-backfill": ("stopped", 0)}


def test_the_mirrors_page_reads_without_javascript(serve):
    page = serve().page(java_script_enabled=False)
    page.goto("/c/demo/mirrors")
    assert page.locator("#mirrors tbody tr").count() == 3
    assert page.locator("#mirror-clicks-from-kafka .mirror-state").inner_text() == "stale"
