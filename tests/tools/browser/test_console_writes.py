"""Writes from the console's pages in chromium: create a topic, reset a group's offsets
(preview, then execute), and the write guard refusing forged requests."""

from __future__ import annotations

import pytest

from helpers import committed_offsets as committed
from kstream.admin import Admin, ConfigResource

pytestmark = pytest.mark.browser


def topics_of(path: str) -> dict[str, int]:
    """Topic name -> partition count, as the Admin client sees the cluster."""
    with Admin({"cluster": path}) as admin:
        return {name: len(t.partitions) for name, t in admin.list_topics().topics.items()}


def test_create_a_topic_from_the_page(serve):
    console = serve()
    page = console.page()
    page.goto("/c/demo/topics")
    form = page.locator("form[action='/c/demo/topics']")
    form.locator("input[name=name]").fill("clicks")
    form.locator("input[name=partitions]").fill("4")
    form.locator("textarea[name=configs]").fill("retention.ms=3600000")
    form.locator("button").click()
    page.wait_for_url("**/c/demo/topics/clicks?done=*")  # the new topic's page
    assert page.locator(".box.done").inner_text() == "Created topic clicks with 4 partition(s), replication factor 1."
    page.goto("/c/demo/topics")
    assert page.locator("table a", has_text="clicks").count() == 1
    assert topics_of(console.path)["clicks"] == 4
    with Admin({"cluster": console.path}) as admin:
        resource = ConfigResource("topic", "clicks")
        configs = admin.describe_configs([resource])[resource].result()
    assert configs["retention.ms"].value == "3600000"


def test_a_bad_topic_from_the_page_is_an_error_box_and_changes_nothing(serve):
    console = serve()
    page = console.page()
    page.goto("/c/demo/topics")
    form = page.locator("form[action='/c/demo/topics']")
    form.locator("input[name=name]").fill("orders")  # exists already: the CLI's 409
    with page.expect_response("**/c/demo/topics") as answer:
        form.locator("button").click()
    assert answer.value.status == 409
    assert "orders" in page.locator(".box.error").inner_text()
    assert topics_of(console.path)["orders"] == 3


def test_reset_a_group_with_preview_then_execute(serve):
    console = serve()
    before = committed(console.path, "billing")
    assert set(before.values()) == {18}
    page = console.page()
    page.goto("/c/demo/groups/billing")
    page.select_option("select[name=method]", "to-earliest")
    page.get_by_role("button", name="Preview").click()
    page.wait_for_url("**/groups/billing/reset?*")
    assert "Dry run: nothing changed" in page.content()
    preview = page.locator("table tbody tr")
    assert preview.count() == 3
    assert [preview.nth(i).locator("td").nth(2).inner_text() for i in range(3)] == ["0", "0", "0"]
    assert committed(console.path, "billing") == before  # the preview wrote nothing

    page.get_by_role("button", name="Execute").click()
    page.wait_for_url("**/groups/billing?done=*")
    assert page.locator(".box.done").inner_text() == "Reset 3 partition(s) of group billing."
    rows = page.locator("#offsets tbody tr")
    assert rows.count() == 3
    assert [rows.nth(i).locator("td").nth(2).inner_text() for i in range(3)] == ["0", "0", "0"]
    assert committed(console.path, "billing") == {("orders", p): 0 for p in range(3)}
    assert committed(console.path, "reports")[("orders", 0)] == 10  # another group: untouched


def test_read_only_console_refuses_forged_writes_and_the_cluster_is_unchanged(serve):
    console = serve(read_only=True)
    page = console.page()
    page.goto("/c/demo/topics")
    assert page.locator("form[method=post]").count() == 0  # hidden: cosmetic; what follows is the guard
    assert page.locator(".badge.ro").inner_text() == "read-only"
    topics_before = topics_of(console.path)
    offsets_before = committed(console.path, "billing")

    # A request forged with the console's own Origin, as a same-origin page would send it.
    forged = page.request.post(f"{console.url}/c/demo/topics", form={"name": "forged", "partitions": "1"},
                               headers={"Origin": console.url})
    assert forged.status == 403 and "read-only" in forged.text()
    reset = page.request.post(f"{console.url}/c/demo/groups/billing/reset",
                              form={"method": "to-earliest", "all_topics": "true", "force": "true"},
                              headers={"Origin": console.url})
    assert reset.status == 403
    # And from the page's own script: the browser adds the Origin itself.
    status = page.evaluate("""() => fetch('/c/demo/topics/orders/delete', {method: 'POST',
        body: new URLSearchParams({confirm: 'orders'})}).then(r => r.status)""")
    assert status == 403

    assert topics_of(console.path) == topics_before
    assert committed(console.path, "billing") == offsets_before


def test_read_write_console_refuses_a_post_from_another_site(serve):
    console = serve()
    page = console.page()
    page.goto("/c/demo/topics")
    forged = page.request.post(f"{console.url}/c/demo/topics", form={"name": "csrf"},
                               headers={"Origin": "http://evil.example"})
    assert forged.status == 403 and "own pages" in forged.text()
    assert "csrf" not in topics_of(console.path)
