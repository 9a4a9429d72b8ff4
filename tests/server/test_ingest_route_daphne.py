"""docs/PERFORMANCE.md#p2: under daphne the events POST is served beside the ASGI application
(chatui.server.ingest_route.serve_on_daphne), and still answers, logs and persists as the
application would."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
from channels.testing import ApplicationCommunicator
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpResponse, StreamingHttpResponse

from chatui.ingest.writer_threads import on_writer, writer_count
from chatui.models import ApiToken, Conversation
from chatui.server.edge import SCOPE_CHECKED, SCOPE_TOKEN
from chatui.server.ingest_route import (
    BodyQueue,
    IngestRoute,
    _hand_over,
    _wire_headers,
    serve_on_daphne,
)
from tests.support.live import LiveServer
from tests.support.writer import close_writer_connections


def _wait_for_log(server: LiveServer, *texts: str, seconds: float = 10) -> str:
    deadline = time.monotonic() + seconds
    while True:
        tail = server.log_tail(400)
        if all(text in tail for text in texts) or time.monotonic() > deadline:
            return tail
        time.sleep(0.05)


def test_p2_events_posts_served_beside_the_app_are_in_daphnes_access_log(chatui_server):
    conversation_id = chatui_server.new_conversation("access log")
    path = f"/api/v1/conversations/{conversation_id}/events"
    with chatui_server.api() as client:
        url = f"/conversations/{conversation_id}/events"
        accepted = client.post(url, json={"type": "user.message", "content": "x"})
        refused = client.post(url, json={"type": "user.message"})
    assert (accepted.status_code, refused.status_code) == (200, 400)
    tail = _wait_for_log(chatui_server, f'"POST {path}" 200', f'"POST {path}" 400')
    assert f'"POST {path}" 200' in tail
    assert f'"POST {path}" 400' in tail  # a refusal is logged as any answer
    assert f"Bad Request: {path}" in tail  # and as Django logs a refusal


def test_p2_an_event_whose_client_left_before_the_answer_is_stored_once(chatui_server):
    conversation_id = chatui_server.new_conversation("left early")
    body = json.dumps({"type": "user.message", "content": "still here"}).encode()
    head = (
        f"POST /api/v1/conversations/{conversation_id}/events HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{chatui_server.port}\r\n"
        f"Authorization: Bearer {chatui_server.token}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", chatui_server.port), timeout=10) as sock:
        sock.sendall(head.encode() + body)  # and leave without reading the answer
    with chatui_server.api() as client:
        deadline = time.monotonic() + 10
        while client.get(f"/conversations/{conversation_id}").json()["last_seq"] == 0:
            assert time.monotonic() < deadline, "the event never landed"
            time.sleep(0.05)
        after = client.post(
            f"/conversations/{conversation_id}/events",
            json={"type": "user.message", "content": "next"},
        )
    assert after.status_code == 200
    assert after.json()["last_seq"] == 2  # the first one once, then this one


def _scope(path: str, method: str = "POST", **extra) -> dict:
    return {"type": "http", "method": method, "path": path, SCOPE_CHECKED: True, **extra}


EVENTS_PATH = "/api/v1/conversations/00000000-0000-0000-0000-000000000001/events"


@pytest.mark.parametrize(
    "scope",
    [
        pytest.param(_scope(EVENTS_PATH, method="GET"), id="GET events"),
        pytest.param(_scope("/api/v1/conversations/"), id="another API path"),
        pytest.param(_scope("/accounts/login/"), id="a page"),
        pytest.param({**_scope(EVENTS_PATH), SCOPE_CHECKED: False}, id="not through the edge"),
    ],
)
def test_p2_only_the_checked_events_post_is_served_beside_the_app(scope):
    protocol = object()
    server = SimpleNamespace(connections={protocol: {}})
    assert serve_on_daphne(server, protocol, scope) is None
    assert server.connections[protocol] == {}  # no application instance of ours


@pytest.mark.asyncio
async def test_p2_body_handed_over_in_chunks_is_joined_and_cut_one_byte_past_the_limit(
    settings,
):
    settings.CHATUI_MAX_REQUEST_BYTES = 100
    body = BodyQueue()
    reading = asyncio.ensure_future(body.read())
    for chunk, more in ((b"x" * 60, True), (b"y" * 60, True), (b"z" * 60, False)):
        body.put_nowait({"type": "http.request", "body": chunk, "more_body": more})
    assert await reading == b"x" * 60 + b"y" * 41
    body.put_nowait({"type": "http.disconnect"})  # daphne's, once answered: ignored
    assert await body.read() == b"x" * 60 + b"y" * 41


@pytest.mark.asyncio
async def test_p2_client_that_leaves_before_its_body_is_complete_gets_no_answer():
    body = BodyQueue()
    body.put_nowait({"type": "http.request", "body": b"{", "more_body": True})
    reading = asyncio.ensure_future(body.read())
    await asyncio.sleep(0)
    body.put_nowait({"type": "http.disconnect"})
    assert await reading is None


# -- the answer handed to daphne is the one Django's handler would send ----------------


class RecordingRequest:
    """daphne's request as `_serve_on_daphne` sees it: the messages `handle_reply` got."""

    def __init__(self) -> None:
        self.replies: list[dict] = []

    def handle_reply(self, message: dict) -> None:
        self.replies.append(message)


def _events_scope(conversation_id, token, body: bytes, content_type: bytes) -> dict:
    path = f"/api/v1/conversations/{conversation_id}/events"
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", content_type),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ["127.0.0.1", 1234],
        "server": ["testserver", 80],
        SCOPE_CHECKED: True,
        SCOPE_TOKEN: token,
    }


async def _through_django_send_response(scope: dict, body: bytes) -> tuple[dict, bytes]:
    """The routed view's answer as Django's `ASGIHandler.send_response` sends it."""
    communicator = ApplicationCommunicator(IngestRoute(ASGIHandler()), scope)
    await communicator.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await communicator.receive_output(10)
    chunks = []
    while True:
        message = await communicator.receive_output(10)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    await communicator.wait(10)
    return start, b"".join(chunks)


async def _handed_to_daphne(scope: dict, body: bytes) -> list[dict]:
    request = RecordingRequest()
    server = SimpleNamespace(connections={request: {}})
    queue = serve_on_daphne(server, request, scope)
    queue.put_nowait({"type": "http.request", "body": body, "more_body": False})
    await asyncio.wait_for(server.connections[request]["application_instance"], 10)
    return request.replies


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        pytest.param(b'{"type": "user.message", "content": "hi"}', b"application/json", 200),
        pytest.param(b"{", b"application/json", 400, id="bad JSON"),
        pytest.param(b"{}", b"text/plain", 415, id="not JSON"),
    ],
)
async def test_p2_daphne_is_handed_exactly_the_answer_djangos_send_response_gives(
    django_user_model, body, content_type, status
):
    """Status, headers (names, case, order, values) and body: the same two messages."""
    from asgiref.sync import sync_to_async

    user = await django_user_model.objects.acreate(username="wire")
    token, _ = await sync_to_async(ApiToken.issue)(user)
    one = await Conversation.objects.acreate(owner=user, title="direct")
    other = await Conversation.objects.acreate(owner=user, title="through Django")
    try:
        replies = await _handed_to_daphne(_events_scope(one.pk, token, body, content_type), body)
        start, whole = await _through_django_send_response(
            _events_scope(other.pk, token, body, content_type), body
        )
    finally:
        await close_writer_connections()
    assert start["status"] == status
    assert replies == [start, {"type": "http.response.body", "body": whole}]


def test_p2_wire_headers_are_send_responses_cookies_and_all():
    response = HttpResponse(b"{}", content_type="application/json")
    response["X-Bytes-Value"] = "caf\u00e9"  # latin-1 on the wire, as Django encodes it
    response.set_cookie("seen", "yes", httponly=True)
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(ASGIHandler().send_response(response, send))
    assert _wire_headers(response) == sent[0]["headers"]
    assert any(name == b"Set-Cookie" for name, _ in sent[0]["headers"])


def _read_answer(sock: socket.socket, buffered: bytes) -> tuple[bytes, bytes, bytes]:
    """One HTTP/1.1 answer framed by Content-Length: (head, body, what follows it)."""
    while b"\r\n\r\n" not in buffered:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed mid-answer: {buffered!r}"
        buffered += chunk
    head, _, rest = buffered.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", head).group(1))
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed mid-body"
        rest += chunk
    return head, rest[:length], rest[length:]


def test_p2_answers_handed_to_daphne_keep_order_on_a_kept_connection_and_close_when_asked(
    chatui_server,
):
    """The answer handed straight to daphne's request: on a kept-alive connection each
    answer arrives whole, in order; a request that asks for `Connection: close` gets
    its whole answer, then the connection closes."""
    conversation_id = chatui_server.new_conversation("kept connection")

    def request(content: str, *, close: bool = False) -> bytes:
        body = json.dumps({"type": "user.message", "content": content}).encode()
        return (
            f"POST /api/v1/conversations/{conversation_id}/events HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{chatui_server.port}\r\n"
            f"Authorization: Bearer {chatui_server.token}\r\n"
            "Content-Type: application/json\r\n"
            + ("Connection: close\r\n" if close else "")
            + f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body

    seqs = []
    with socket.create_connection(("127.0.0.1", chatui_server.port), timeout=10) as sock:
        buffered = b""
        for n in range(3):
            sock.sendall(request(f"kept {n}"))
            head, body, buffered = _read_answer(sock, buffered)
            assert head.startswith(b"HTTP/1.1 200 OK"), head
            seqs.append(json.loads(body)["last_seq"])
        sock.sendall(request("last", close=True))
        head, body, buffered = _read_answer(sock, buffered)
        assert head.startswith(b"HTTP/1.1 200 OK") and b"\r\nConnection: close" in head, head
        seqs.append(json.loads(body)["last_seq"])
        assert buffered == b"" and sock.recv(1) == b""  # then closed, nothing more
    assert seqs == [1, 2, 3, 4]


# -- daphne's application instance: a future, done once the answer is handed over -------


@pytest.mark.asyncio
async def test_p2_a_client_that_left_before_its_body_ends_the_instance_without_an_answer():
    request = RecordingRequest()
    server = SimpleNamespace(connections={request: {}})
    queue = serve_on_daphne(server, request, _scope(EVENTS_PATH))
    queue.put_nowait({"type": "http.request", "body": b"{", "more_body": True})
    queue.put_nowait({"type": "http.disconnect"})
    instance = server.connections[request]["application_instance"]
    assert instance.done() and instance.result() is None
    assert request.replies == []


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_p2_a_request_daphne_cancelled_before_its_write_started_writes_nothing(
    django_user_model,
):
    """Shutdown cancels the application instances: a write not yet started never runs."""
    from asgiref.sync import sync_to_async

    user = await django_user_model.objects.acreate(username="shutdown")
    token, _ = await sync_to_async(ApiToken.issue)(user)
    conversation = await Conversation.objects.acreate(owner=user, title="cancelled")
    body = b'{"type": "user.message", "content": "never"}'
    request = RecordingRequest()
    server = SimpleNamespace(connections={request: {}})
    release = threading.Event()
    busy = [asyncio.ensure_future(on_writer(release.wait, 10)) for _ in range(writer_count())]
    try:
        queue = serve_on_daphne(
            server, request, _events_scope(conversation.pk, token, body, b"application/json")
        )
        queue.put_nowait({"type": "http.request", "body": body, "more_body": False})
        server.connections[request]["application_instance"].cancel()
        release.set()
        await asyncio.gather(*busy)
        await on_writer(lambda: None)  # everything queued before has had its turn
    finally:
        release.set()
        await close_writer_connections()
    await conversation.arefresh_from_db()
    assert conversation.last_seq == 0
    assert request.replies == []


class FailingRequest(RecordingRequest):
    def handle_reply(self, message: dict) -> None:
        raise ValueError("HTTP response has already been started")


@pytest.mark.asyncio
async def test_p2_a_failure_becomes_the_instances_exception_for_daphne_to_log_and_answer():
    """daphne's application checker logs an instance's exception and answers 500, as for
    a failed application task."""
    loop = asyncio.get_running_loop()
    crashed, refused = loop.create_future(), loop.create_future()
    _hand_over(RecordingRequest(), crashed, None, RuntimeError("the database went away"))
    start = {"type": "http.response.start", "status": 200, "headers": []}
    _hand_over(FailingRequest(), refused, (start, {"type": "http.response.body"}), None)
    assert isinstance(crashed.exception(), RuntimeError)
    assert isinstance(refused.exception(), ValueError)


@pytest.mark.asyncio
async def test_p2_a_streamed_answer_goes_through_djangos_send_response():
    async def parts():
        yield b"a"
        yield b"b"

    request = RecordingRequest()
    answering = asyncio.get_running_loop().create_future()
    _hand_over(request, answering, StreamingHttpResponse(parts()), None)
    await asyncio.wait_for(answering, 10)
    assert [m["type"] for m in request.replies] == ["http.response.start"] + [
        "http.response.body"
    ] * 3
    assert b"".join(m.get("body", b"") for m in request.replies[1:]) == b"ab"


@pytest.mark.asyncio
async def test_p2_a_write_that_cannot_be_handed_to_a_writer_is_daphnes_500(monkeypatch):
    """As a failing application task: the instance's exception, which daphne logs and
    answers 500 (not an exception thrown into daphne's own request processing)."""
    stopped = ThreadPoolExecutor(max_workers=1)
    stopped.shutdown()
    monkeypatch.setattr("chatui.ingest.writer_threads.writers", lambda: stopped)
    request = RecordingRequest()
    server = SimpleNamespace(connections={request: {}})
    queue = serve_on_daphne(server, request, _scope(EVENTS_PATH))
    queue.put_nowait({"type": "http.request", "body": b"{}", "more_body": False})
    instance = server.connections[request]["application_instance"]
    assert isinstance(instance.exception(), RuntimeError)
    assert request.replies == []
