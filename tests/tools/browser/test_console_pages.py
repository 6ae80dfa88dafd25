"""The console's pages in chromium: dark mode (cookie, survives reload), every page
readable with JavaScript off, and the screenshot script (scripts/console_screenshots.py)."""

from __future__ import annotations

import struct

import console_screenshots as screens  # (scripts/ is on sys.path: tests/tools/browser/conftest.py)
import pytest

pytestmark = pytest.mark.browser

LIGHT_BACKGROUND = "rgb(255, 255, 255)"  # console.css --bg, light
DARK_BACKGROUND = "rgb(15, 20, 25)"  # console.css --bg, dark (#0f1419)


def background(page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


def test_dark_mode_toggle_changes_the_background_and_survives_reload(serve):
    console = serve()
    page = console.page(color_scheme="light")  # the OS prefers light: "auto" is light
    page.goto("/c/demo/topics")
    assert background(page) == LIGHT_BACKGROUND
    page.locator(".theme a", has_text="dark").click()
    page.wait_for_url("**/c/demo/topics")  # back where it was
    assert background(page) == DARK_BACKGROUND
    assert page.locator("html").get_attribute("data-theme") == "dark"
    page.reload()
    assert background(page) == DARK_BACKGROUND
    assert {c["name"]: c["value"] for c in page.context.cookies()}["kstream_theme"] == "dark"
    other = page.context.new_page()  # another page of the same browser profile
    other.goto("/c/demo/groups")
    assert background(other) == DARK_BACKGROUND
    page.locator(".theme a", has_text="light").click()
    page.wait_for_url("**/c/demo/topics")
    assert background(page) == LIGHT_BACKGROUND


def test_auto_follows_the_systems_preference(serve):
    console = serve()
    page = console.page(color_scheme="dark")
    page.goto("/c/demo")
    assert page.locator("html").get_attribute("data-theme") == "auto"
    assert background(page) == DARK_BACKGROUND


def test_pages_work_without_javascript(serve):
    console = serve()
    page = console.page(java_script_enabled=False)
    page.goto("/c/demo/topics")
    names = page.locator("table tbody tr td:first-child a").all_inner_texts()
    assert names == ["__kstream_mirror_status", "audit", "orders", "payments"]  # the demo's mirrors report there
    page.goto("/c/demo/groups/billing")
    rows = page.locator("#offsets tbody tr")
    assert rows.count() == 3
    assert rows.first.locator("td").nth(2).inner_text() == "18"  # committed, rendered by the server
    assert page.locator(".chart canvas").count() == 0  # (no script ran: uPlot drew nothing)
    page.goto("/c/demo/topics/payments/messages?partition=0")
    assert page.locator("#records tr").count() == 8
    page.goto("/c/demo/topics/audit")
    assert "demo-audit" in page.locator("table").first.inner_text()  # the open transaction holding the LSO
    # A write still works as a plain form post (no htmx needed).
    page.goto("/c/demo/topics")
    page.locator("form[action='/c/demo/topics'] input[name=name]").fill("no-js")
    page.locator("form[action='/c/demo/topics'] button").click()
    page.wait_for_url("**/c/demo/topics/no-js?done=*")


def png_size(path: str) -> tuple[int, int]:
    with open(path, "rb") as png:
        header = png.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_the_screenshot_script_shoots_every_page_in_both_themes(tmp_path, browser):
    saved = screens.run(str(tmp_path / "shots"), browser=browser)
    expected = {f"{name}-{theme}.png" for name, _ in screens.PAGES for theme in screens.THEMES}
    assert {p.rsplit("/", 1)[1] for p in saved} == expected
    for path in saved:
        assert png_size(path) == (1280, 800)
    with open(str(tmp_path / "shots" / "topics-light.png"), "rb") as light, \
            open(str(tmp_path / "shots" / "topics-dark.png"), "rb") as dark:
        assert light.read() != dark.read()


def test_no_page_asks_for_a_missing_file_or_logs_an_error(serve):
    """Every page loads every file it asks for (the browser's own /favicon.ico included) and
    writes nothing to the browser console: a 404 there is the first thing a user sees in
    the developer tools."""
    console = serve()
    page = console.page()
    failed: list[str] = []
    logged: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("console", lambda m: logged.append(f"{m.type}: {m.text} ({m.location.get('url')})")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda err: logged.append(f"pageerror: {err}"))
    for _, path in screens.PAGES:
        assert page.goto(path).status == 200, path
        page.wait_for_function(screens.CHARTS_SETTLED)
        page.wait_for_load_state("networkidle")
    assert failed == [] and logged == []
