"""SPEC §8 P2: under daphne the events POST is served beside the ASGI application
(chatui.ingest_route.serve_on_daphne), and still answers, logs and persists as the
application would."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from types import SimpleNamespace

import pytest

from chatui.edge import SCOPE_CHECKED
from chatui.ingest_route import BodyQueue, serve_on_daphne
from tests.support.live import LiveServer


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
