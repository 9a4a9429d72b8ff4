"""chatui_client against the real server (docs/events.md#http-api, docs/events.md#python-client,
REL1, REL2).

Failures are real: a loopback HTTP proxy in front of the server answers 503/429, drops
connections, loses answers the server already committed, or stalls past the client's
timeout; and the server process itself is killed and restarted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from chatui_client import (
    NO_RETRY,
    AsyncChatuiClient,
    ChatuiClient,
    ChatuiError,
    ChatuiUnavailable,
    PostResult,
    RetryPolicy,
    ToolCall,
    make_event,
    with_event_ids,
)

from tests.support.delivery import assert_exactly_once

FAST = RetryPolicy(max_attempts=8, base_delay=0.01, max_delay=0.05, total=20)


class FaultyProxy:
    """A loopback HTTP proxy in front of the server, failing requests on demand.

    Queued faults are used by the next requests, one each, in order:
    - ``"503"`` / ``"429"``: answer that status without forwarding;
    - ``"drop"``: close the connection without forwarding or answering;
    - ``"lose"``: forward (the server commits), then close without answering;
    - ``"stall"``: forward, then answer only after `stall_seconds` (the client times out).
    """

    stall_seconds = 1.0

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.faults: deque[str] = deque()
        self.requests: list[tuple[str, str, bytes]] = []  # (method, path, body) as received
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                proxy.relay(self)

            do_POST = do_GET

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def fail(self, *faults: str) -> None:
        with self.lock:
            self.faults.extend(faults)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def relay(self, handler: BaseHTTPRequestHandler) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        with self.lock:
            self.requests.append((handler.command, handler.path, body))
            fault = self.faults.popleft() if self.faults else None
        if fault in ("503", "429"):
            return self.answer(handler, int(fault), b'{"error": "try again"}', {"Retry-After": "0"})
        if fault == "drop":
            handler.close_connection = True
            return None
        headers = {
            name: handler.headers[name]
            for name in ("Authorization", "Content-Type")
            if handler.headers.get(name)
        }
        upstream = httpx.request(
            handler.command, self.upstream + handler.path, headers=headers, content=body, timeout=30
        )
        if fault == "lose":
            handler.close_connection = True
            return None
        if fault == "stall":
            time.sleep(self.stall_seconds)
        with contextlib.suppress(OSError):  # the client may have given up on this connection
            self.answer(handler, upstream.status_code, upstream.content, {})
        return None

    @staticmethod
    def answer(handler, status: int, content: bytes, headers: dict[str, str]) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(content)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(content)

    def event_posts(self) -> list[list[str]]:
        """The event_ids of every POST …/events request that reached the proxy."""
        return [
            [event["event_id"] for event in json.loads(body)]
            for method, path, body in self.requests
            if method == "POST" and path.endswith("/events")
        ]


@pytest.fixture
def proxy(chatui_server) -> Iterator[FaultyProxy]:
    faulty = FaultyProxy(chatui_server.url)
    yield faulty
    faulty.close()


@pytest.fixture
def client(chatui_server) -> Iterator[ChatuiClient]:
    with ChatuiClient(chatui_server.url, chatui_server.token, retry=FAST) as chatui:
        yield chatui


# --- the happy path ------------------------------------------------------------------------


def test_sync_client_creates_lists_posts_and_reads(client):
    conversation = client.create_conversation(title="client")
    assert set(conversation) >= {"id", "title", "url", "created_at"}
    assert client.web_url(conversation).endswith(f"/c/{conversation['id']}/")
    cid = conversation["id"]
    assert cid in [c["id"] for c in client.list_conversations()]

    own_id = make_event("user.message", event_id="mine-1", content="hello", message_id="u1")
    first = client.post_event(cid, own_id)
    assert first == PostResult(accepted=1, duplicates=0, last_seq=1, event_ids=("mine-1",))
    run = client.run(cid, "run_1")
    run.status("thinking", "Hmm…")
    run.say_delta("a1", "Let me ")
    run.say_delta("a1", "look.")
    usage = {"input_tokens": 30, "output_tokens": 12, "model": "m-1"}  # S4
    run.step_completed(
        "Let me look.", message_id="a1", tool_calls=[ToolCall("c1", "search")], usage=usage
    )
    batch = client.post_events(
        cid,
        [
            run.event("agent.tool.started", tool_call_id="c1", tool_name="search"),
            run.event("agent.tool.completed", tool_call_id="c1", result="3 hits"),
        ],
    )
    assert (batch.accepted, batch.duplicates, batch.last_seq) == (2, 0, 7)
    assert len(set(batch.event_ids)) == 2
    run.continuation(False, "end_turn", "model")
    run.completed()

    body = client.get_conversation(cid)
    assert body["conversation"]["status"] == "completed"
    assert [(m["id"], m["role"], m["content"]) for m in body["messages"]] == [
        ("u1", "user", "hello"),
        ("a1", "assistant", "Let me look."),
        ("tool_c1", "tool", "3 hits"),
        # W6 (docs/rendering.md#w6): a normal end (`end_turn`) adds no line
    ]
    (step,) = [e for e in client.get_events(cid)["events"] if e["type"] == "agent.step.completed"]
    assert step["payload"]["usage"] == usage
    events = client.get_events(cid, after=5)
    assert [e["seq"] for e in events["events"]] == [6, 7, 8, 9]
    assert events["last_seq"] == 9
    assert all(e["event_id"] and e["run_id"] == "run_1" for e in events["events"])
    # Reposting what was sent is a no-op (REL1).
    assert client.post_event(cid, own_id).duplicates == 1


def test_client_reads_url_and_token_from_the_environment(chatui_server, monkeypatch):
    monkeypatch.setenv("CHATUI_URL", chatui_server.url + "/api/v1/")
    monkeypatch.setenv("CHATUI_TOKEN", chatui_server.token)
    with ChatuiClient() as chatui:
        assert chatui.url == chatui_server.url
        assert isinstance(chatui.list_conversations(), list)
    monkeypatch.delenv("CHATUI_TOKEN")
    with pytest.raises(ValueError, match="CHATUI_TOKEN"):
        ChatuiClient()


def test_async_client_does_the_same(chatui_server, proxy):
    async def scenario() -> tuple[str, list[PostResult]]:
        async with AsyncChatuiClient(proxy.url, chatui_server.token, retry=FAST) as chatui:
            conversation = await chatui.create_conversation(title="async")
            cid = conversation["id"]
            run = chatui.run(cid, "run_async")
            results = [
                await run.user_message("go", message_id="u1"),
                await run.step_completed(
                    "", message_id="a1", tool_calls=[ToolCall(f"c{i}", "job") for i in range(5)]
                ),
            ]
            proxy.fail("503", "lose", "drop", "lose", "429")
            # Five tools reported concurrently, through failures: each still lands once.
            results += await asyncio.gather(
                *(run.tool_started(f"c{i}", "job", {"n": i}) for i in range(5))
            )
            results.append(await run.tool_completed("c0", result={"ok": True}))
            assert (await chatui.get_conversation(cid))["last_seq"] == 8
            assert cid in [c["id"] for c in await chatui.list_conversations()]
            assert len((await chatui.get_events(cid, after=2))["events"]) == 6
            return cid, results

    cid, results = asyncio.run(scenario())
    assert all(r.accepted + r.duplicates == 1 for r in results)
    assert_exactly_once(chatui_server, cid, [i for r in results for i in r.event_ids])


# --- errors ----------------------------------------------------------------------------


def test_bad_input_raises_chatui_error_with_index_and_field(client):
    cid = client.create_conversation()["id"]
    with pytest.raises(ChatuiError) as caught:
        client.post_events(
            cid,
            [
                make_event("user.message", content="fine"),
                make_event("agent.tool.started", tool_call_id="c1"),  # no tool_name
            ],
        )
    problem = caught.value
    assert type(problem) is ChatuiError
    assert (problem.status, problem.index, problem.field) == (400, 1, "tool_name")
    assert "tool_name" in problem.message
    assert "index 1" in str(problem) and "HTTP 400" in str(problem)
    assert client.get_conversation(cid)["last_seq"] == 0, "a batch is applied whole or not"

    with pytest.raises(ChatuiError) as caught:
        client.post_event(cid, {"type": "agent.telepathy"})
    assert (caught.value.status, caught.value.index, caught.value.field) == (400, 0, "type")

    with pytest.raises(ChatuiError) as caught:
        client.get_conversation("00000000-0000-0000-0000-000000000000")
    assert caught.value.status == 404


def test_bad_token_is_a_401(chatui_server):
    with ChatuiClient(chatui_server.url, "not-a-token") as chatui, pytest.raises(ChatuiError) as e:
        chatui.list_conversations()
    assert e.value.status == 401


def test_conflict_is_not_retried(chatui_server, proxy, client):
    cid = client.create_conversation()["id"]
    client.post_event(cid, make_event("user.message", event_id="e1", content="one"))
    through_proxy = ChatuiClient(proxy.url, chatui_server.token, retry=FAST)
    with through_proxy, pytest.raises(ChatuiError) as caught:
        through_proxy.post_event(cid, make_event("user.message", event_id="e1", content="two"))
    assert (caught.value.status, caught.value.field) == (409, "event_id")
    assert len(proxy.requests) == 1


# --- retries (REL1, REL2) --------------------------------------------------------------


def test_backoff_is_exponential_jittered_and_capped():
    policy = RetryPolicy(base_delay=0.1, max_delay=1.0)
    for attempt, ceiling in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (30, 1.0)]:
        delays = [policy.delay(attempt) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling / 2, "full jitter spreads over the whole range"
    assert policy.delay(1, retry_after=0.5) == 0.5  # the server's Retry-After is honoured…
    assert policy.delay(1, retry_after=60) == 1.0  # … up to max_delay


def test_events_are_stamped_before_the_first_attempt():
    event = make_event("agent.tool.progress", tool_call_id="c1", progress=0.5, output=None)
    assert event == {"type": "agent.tool.progress", "tool_call_id": "c1", "progress": 0.5}
    stamped = with_event_ids([event, {**event, "event_id": "given"}])
    assert stamped[1]["event_id"] == "given"
    assert len(stamped[0]["event_id"]) == 36 and "event_id" not in event, "copies, not edits"
    # What is not JSON fails at once, before anything is sent.
    unreachable = ChatuiClient("http://127.0.0.1:9", "token", retry=NO_RETRY)
    with unreachable, pytest.raises(ValueError, match="JSON"):
        unreachable.post_event(
            "c", make_event("agent.tool.progress", tool_call_id="c1", progress=float("nan"))
        )


def test_retries_after_failures_send_the_same_event_ids_and_never_duplicate(chatui_server, proxy):
    cid = chatui_server.new_conversation("retries")
    with ChatuiClient(proxy.url, chatui_server.token, retry=FAST, timeout=0.5) as chatui:
        run = chatui.run(cid, "run_r")
        # 503, dropped connection, committed-but-lost answer twice, 429, then through.
        proxy.fail("503", "drop", "lose", "lose", "429")
        batch = chatui.post_events(
            cid,
            [
                run.event("user.message", content="hi", message_id="u1"),
                run.event("agent.status", status="thinking"),
                run.event("agent.message.delta", message_id="a1", delta="Hel"),
            ],
        )
        assert batch.accepted + batch.duplicates == 3
        assert batch.duplicates == 3, "the first lost answer had committed the batch"
        results = [batch]
        proxy.fail("lose")
        results.append(run.say_delta("a1", "lo"))
        proxy.fail("stall")  # committed, answered after the client's timeout
        results.append(run.step_completed("Hello", message_id="a1"))
        proxy.fail("503", "503")
        results.append(run.completed())

    posts = proxy.event_posts()
    assert len(posts) == 6 + 2 + 2 + 3
    # Every attempt of one call carried the same event_ids (and the same bytes).
    assert len({body for method, _, body in proxy.requests if method == "POST"}) == 4
    sent = [event_id for result in results for event_id in result.event_ids]
    assert_exactly_once(chatui_server, cid, sent)
    with chatui_server.api() as api:
        messages = api.get(f"/conversations/{cid}").json()["messages"]
    assert [(m["id"], m["content"]) for m in messages] == [("u1", "hi"), ("a1", "Hello")]


def test_giving_up_raises_unavailable_with_the_stamped_events(chatui_server, proxy):
    cid = chatui_server.new_conversation("give up")
    policy = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02)
    with ChatuiClient(proxy.url, chatui_server.token, retry=policy) as chatui:
        proxy.fail("503", "503", "503")
        with pytest.raises(ChatuiUnavailable) as refused:
            chatui.post_events(cid, [make_event("user.message", content="a")])
        assert (refused.value.status, refused.value.attempts) == (503, 3)

        proxy.fail("lose", "lose", "lose")  # the server has it; the client never heard
        with pytest.raises(ChatuiUnavailable) as lost:
            chatui.post_events(cid, [make_event("user.message", content="b")])
        assert (lost.value.status, lost.value.attempts) == (None, 3)
        assert isinstance(lost.value.__cause__, httpx.TransportError)

        # Later, the runtime posts what it could not deliver: nothing is repeated.
        again = chatui.post_events(cid, refused.value.events + lost.value.events)
    assert (again.accepted, again.duplicates) == (1, 1)
    ids = [e["event_id"] for e in refused.value.events + lost.value.events]
    assert list(again.event_ids) == ids
    assert_exactly_once(chatui_server, cid, ids)


def test_total_time_bounds_the_retries(chatui_server, proxy):
    policy = RetryPolicy(max_attempts=100, base_delay=0.2, max_delay=0.2, total=0.5)
    proxy.fail(*["drop"] * 100)
    started = time.monotonic()
    chatui = ChatuiClient(proxy.url, chatui_server.token, retry=policy)
    with chatui, pytest.raises(ChatuiUnavailable):
        chatui.list_conversations()
    assert time.monotonic() - started < 2


def test_creating_a_conversation_is_never_retried_when_it_may_have_happened(chatui_server, proxy):
    with ChatuiClient(proxy.url, chatui_server.token, retry=FAST) as chatui:
        proxy.fail("503", "429")  # refused: safe to retry
        chatui.create_conversation(title="refused twice")
        proxy.fail("lose")  # created, answer lost: retrying could create a second one
        with pytest.raises(ChatuiUnavailable) as lost:
            chatui.create_conversation(title="answer lost")
        assert lost.value.attempts == 1
        titles = Counter(c["title"] for c in chatui.list_conversations())
    assert titles["refused twice"] == 1
    assert titles["answer lost"] == 1


def test_client_keeps_retrying_while_the_server_is_down(chatui_server):
    """REL2: the server is killed; posts retry until it is back; every event exactly once."""
    cid = chatui_server.new_conversation("crash")
    patient = RetryPolicy(max_attempts=200, base_delay=0.05, max_delay=0.3, total=60)
    chatui = ChatuiClient(chatui_server.url, chatui_server.token, retry=patient, timeout=5)
    run = chatui.run(cid, "run_crash")
    results = [run.user_message("before the crash", message_id="u1")]
    burst_done = threading.Event()
    failures: list[BaseException] = []

    def burst() -> None:  # a runtime posting steadily while the server dies under it
        try:
            for i in range(30):
                results.append(run.tool_started(f"call_{i}", "step", {"i": i}))
        except BaseException as problem:  # reported below
            failures.append(problem)
        finally:
            burst_done.set()

    poster = threading.Thread(target=burst)
    restarter = threading.Timer(0.5, chatui_server.start)
    try:
        poster.start()
        while len(results) < 8 and not burst_done.is_set():
            time.sleep(0.005)
        killed_mid_burst = not burst_done.is_set()
        chatui_server.kill()  # mid-burst: a request may be committed and never answered
        restarter.start()  # … and in another thread, half a second later, it comes back
        # While it is down (and as it comes back), the main thread posts too.
        results.append(
            chatui.post_events(
                cid,
                [
                    run.event("agent.tool.completed", tool_call_id="call_0", result="ok"),
                    run.event("agent.status", status="info", message="still here"),
                ],
            )
        )
        poster.join(timeout=60)
    finally:
        if restarter.is_alive():
            restarter.join()
        chatui.close()
        if chatui_server.process is None or chatui_server.process.poll() is not None:
            chatui_server.start()  # leave the session's server running for the others
    assert not failures
    assert killed_mid_burst and burst_done.is_set()
    sent = [event_id for result in results for event_id in result.event_ids]
    assert len(sent) == 1 + 30 + 2
    assert_exactly_once(chatui_server, cid, sent)
