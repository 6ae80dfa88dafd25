"""Live tails are capped per console and per client, and poll on threads of their own
(issue 26 item 9: 300 open tails made a new one wait 25 s in asyncio's default pool); groups'
live lag streams get the same treatment, with caps of their own (kstream.tools.web.live_slots).

The app is driven as ASGI directly: each tail is a task whose ``send`` reports the
status of its first body chunk (a tail's ": tail of" comment, or a refusal page), and
whose ``receive`` answers ``http.disconnect`` once the test sets an event. Nothing
waits on a clock but the tails' own short polls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest

from kstream.tools.web import routes_browser
from kstream.tools.web.app import create_app
from kstream.tools.web.limits import ConsoleLimits


class Tail:
    """One GET of a live stream (by default a tail) from ``client_host``, running as a task
    until :meth:`close`."""

    def __init__(self, app, client_host: str, path: str = "/c/main/topics/t/tail", query: bytes = b"partition=0"):
        loop = asyncio.get_running_loop()
        self.first = loop.create_future()  # (status, first body chunk)
        self.body = b""
        self.status = None
        self.gone = asyncio.Event()
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                 "scheme": "http", "path": path, "raw_path": path.encode(),
                 "query_string": query, "headers": [(b"host", b"testserver")],
                 "client": (client_host, 50000), "server": ("testserver", 80), "root_path": ""}
        self.task = asyncio.create_task(app(scope, self.receive, self.send))

    async def receive(self):
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message):
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")
            if not self.first.done():
                self.first.set_result((self.status, message.get("body", b"").decode()))

    async def close(self):
        self.gone.set()
        await self.task


def run_apart(coroutine) -> None:
    """asyncio.run() on a thread of its own: the browser tests' playwright keeps an event loop
    running on the main thread for the whole session, where asyncio.run() refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, coroutine).result()


class RefusingExecutor(concurrent.futures.ThreadPoolExecutor):
    """A default executor that fails the test if anything runs on it."""

    def submit(self, fn, /, *args, **kwargs):
        raise AssertionError(f"{fn} ran on asyncio's default thread pool")


@pytest.fixture
def fast_polls(monkeypatch):
    monkeypatch.setattr(routes_browser, "TAIL_POLL_S", 0.02)


def test_tails_are_capped_per_client_and_per_console_then_freed(clusters, fast_polls):
    app = create_app(clusters, limits=ConsoleLimits(tail_max=3, tail_max_per_client=2))
    slots = app.app.state.console.tails

    async def scenario():
        asyncio.get_running_loop().set_default_executor(RefusingExecutor())
        a1, a2 = Tail(app, "10.0.0.1"), Tail(app, "10.0.0.1")
        assert [(await t.first)[0] for t in (a1, a2)] == [200, 200]
        a3 = Tail(app, "10.0.0.1")
        status, text = await a3.first
        assert status == 429 and "10.0.0.1" in text and "--max-tails-per-client" in text
        b1 = Tail(app, "10.0.0.2")
        assert (await b1.first)[0] == 200
        c1 = Tail(app, "10.0.0.3")
        status, text = await c1.first
        assert status == 429 and "3 live tails" in text and "--max-tails " in text
        assert slots.open == 3
        for tail in (a1, a2, a3, b1, c1):
            await tail.close()
        assert slots.open == 0  # every slot is given back once its tail has ended
        c2 = Tail(app, "10.0.0.3")
        assert (await c2.first)[0] == 200
        await c2.close()

    run_apart(scenario())


def test_a_refused_tail_holds_nothing(clusters, fast_polls):
    app = create_app(clusters, limits=ConsoleLimits(tail_max=1, tail_max_per_client=1))
    slots = app.app.state.console.tails

    async def scenario():
        refusals = []
        first = Tail(app, "10.0.0.1")
        await first.first
        for _ in range(20):
            tail = Tail(app, "10.0.0.9")
            refusals.append((await tail.first)[0])
            await tail.close()
        assert refusals == [429] * 20 and slots.open == 1
        await first.close()
        assert slots.open == 0

    run_apart(scenario())


def test_a_missing_topic_gives_back_its_slot(client):
    assert client.get("/c/main/topics/nosuch/tail").status_code == 404
    assert client.app.app.state.console.tails.open == 0


@pytest.mark.parametrize("flag, per_client, fields", [
    ("--max-tails", "--max-tails-per-client", ("tail_max", "tail_max_per_client")),
    ("--max-group-streams", "--max-group-streams-per-client", ("group_live_max", "group_live_max_per_client")),
])
def test_kstream_console_takes_the_caps_as_options(monkeypatch, cluster_dir, flag, per_client, fields):
    from click.testing import CliRunner

    from kstream.tools.cli.main import cli

    served = {}
    monkeypatch.setattr("uvicorn.run", lambda app, host, port, log_level: served.update(app=app))
    result = CliRunner().invoke(cli, ["console", "--cluster", f"main={cluster_dir}", "--sample-interval-s", "0",
                                      flag, "7", per_client, "3"])
    assert result.exit_code == 0, result.output
    limits = served["app"].app.state.console.limits
    assert (getattr(limits, fields[0]), getattr(limits, fields[1])) == (7, 3)
    bad = CliRunner().invoke(cli, ["console", "--cluster", cluster_dir, flag, "2", per_client, "3"])
    assert bad.exit_code != 0 and per_client in str(bad.exception)


def test_a_tail_whose_client_left_before_the_response_gives_back_its_slot(clusters, fast_polls):
    """The stream never starts (sending the response start fails), so no finally of it runs:
    the slot and the consumer are given back when the stream is collected."""
    import gc

    app = create_app(clusters, limits=ConsoleLimits(tail_max=1, tail_max_per_client=1))
    slots = app.app.state.console.tails

    async def scenario():
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                 "scheme": "http", "path": "/c/main/topics/t/tail", "raw_path": b"/c/main/topics/t/tail",
                 "query_string": b"partition=0", "headers": [(b"host", b"testserver")],
                 "client": ("10.0.0.1", 50000), "server": ("testserver", 80), "root_path": ""}
        gone = asyncio.Event()

        async def receive():
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            raise OSError("the client is gone")

        try:
            await app(scope, receive, send)
        except OSError:
            pass
        gone.set()

    run_apart(scenario())
    gc.collect()
    assert slots.open == 0


def group_stream(app, client_host):
    return Tail(app, client_host, "/c/main/groups/g/live", b"interval_s=1")


def test_group_live_streams_are_capped_and_read_on_their_own_threads(clusters):
    """They were uncapped and read on asyncio's default pool; the tails' caps do not count them."""
    app = create_app(clusters, limits=ConsoleLimits(tail_max=1, tail_max_per_client=1, group_live_max=3,
                                                    group_live_max_per_client=2))
    streams = app.app.state.console.group_streams

    async def scenario():
        asyncio.get_running_loop().set_default_executor(RefusingExecutor())
        a1, a2 = group_stream(app, "10.0.0.1"), group_stream(app, "10.0.0.1")
        assert [(await s.first)[0] for s in (a1, a2)] == [200, 200]
        a3 = group_stream(app, "10.0.0.1")
        status, text = await a3.first
        assert status == 429 and "10.0.0.1" in text and "--max-group-streams-per-client" in text
        b1 = group_stream(app, "10.0.0.2")
        assert (await b1.first)[0] == 200
        c1 = group_stream(app, "10.0.0.3")
        status, text = await c1.first
        assert status == 429 and "3 live group streams" in text and "--max-group-streams " in text
        tail = Tail(app, "10.0.0.4")  # a tail has slots of its own
        assert (await tail.first)[0] == 200
        assert streams.open == 3
        for stream in (a1, a2, a3, b1, c1, tail):
            await stream.close()
        assert streams.open == 0
        c2 = group_stream(app, "10.0.0.3")
        assert (await c2.first)[0] == 200
        await c2.close()

    run_apart(scenario())


def test_a_missing_group_gives_back_its_stream_slot(client):
    assert client.get("/c/main/groups/nosuch/live").status_code == 404
    assert client.app.app.state.console.group_streams.open == 0


def test_group_live_interval_has_a_minimum(client):
    assert client.get("/c/main/groups/g/live", params={"interval_s": 0.1, "max_events": 1}).status_code == 400
    assert client.app.app.state.console.group_streams.open == 0


