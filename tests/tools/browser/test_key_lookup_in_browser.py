"""The key lookup of a compacted topic's message page, in chromium: type a key, press Look up,
read its latest value (and the no-value line for a deleted key)."""

from __future__ import annotations

import pytest

from kstream import Producer
from kstream.admin import Admin, NewTopic

pytestmark = pytest.mark.browser


def test_a_key_typed_in_the_lookup_field_shows_its_latest_value(serve):
    console = serve(read_only=True)
    with Admin({"cluster": console.path}) as admin:
        admin.create_topics([NewTopic("accounts", 2, 1, config={"cleanup.policy": "compact"})])["accounts"].result()
    with Producer({"cluster": console.path, "linger.ms": 0}) as producer:
        producer.produce("accounts", b"balance-10", key=b"acct-1")
        producer.produce("accounts", b"balance-25", key=b"acct-1")
        producer.produce("accounts", b"closing", key=b"acct-2")
        producer.produce("accounts", None, key=b"acct-2")
    page = console.page()
    page.goto("/c/demo/topics/accounts/messages")
    page.locator("#key-lookup input[name=key]").fill("acct-1")
    page.locator("#key-lookup button").click()
    page.wait_for_url("**key=acct-1**")
    cells = page.locator("#key-result tbody tr td")
    assert cells.nth(3).inner_text() == "acct-1"
    assert cells.nth(4).inner_text() == "balance-25"
    page.locator("#key-lookup input[name=key]").fill("acct-2")
    page.locator("#key-lookup button").click()
    page.wait_for_url("**key=acct-2**")
    assert "has no value" in page.locator("#key-result").inner_text()
    page.goto("/c/demo/topics/orders/messages")  # not compacted: no lookup field
    assert page.locator("#key-lookup").count() == 0
