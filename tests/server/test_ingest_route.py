"""docs/PERFORMANCE.md#p2: the events POST is routed beside Django's middleware chain onto a
writer thread that keeps its database connection (chatui.server.ingest_route), and
answers exactly as the view does through Django."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from channels.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application
from django.db import connection

from chatui.ingest.service import events_ingested
from chatui.models import ApiToken, Conversation
from chatui.server.ingest_route import IngestRoute
from tests.support.writer import close_writer_connections

SECURITY_HEADERS = (
    "content-security-policy",
    "x-frame-options",
    "x-content-type-options",
    "referrer-policy",
    "cross-origin-opener-policy",
)


def test_p2_routed_post_carries_the_headers_the_middleware_gives_other_api_answers(
    chatui_server,
):
    conversation_id = chatui_server.new_conversation("headers")
    with chatui_server.api() as client:
        routed = client.post(
            f"/conversations/{conversation_id}/events",
            json={"type": "user.message", "content": "hi"},
        )
        through_django = client.get(f"/conversations/{conversation_id}/events")
    assert routed.status_code == 200
    assert routed.json() == {"accepted": 1, "duplicates": 0, "last_seq": 1}
    for name in SECURITY_HEADERS:
        assert routed.headers[name] == through_django.headers[name], name
    assert routed.headers["cache-control"] == "no-store"
    assert int(routed.headers["content-length"]) == len(routed.content)


@pytest.mark.parametrize(
    ("body", "headers", "status", "says"),
    [
        (b"{", {}, 400, "not valid JSON"),
        (b'{"type": "user.message"}', {}, 400, "content"),
        (b"{}", {"Content-Type": "text/plain"}, 415, "Content-Type must be application/json"),
    ],
)
def test_p2_routed_post_refuses_bad_input_with_the_views_json_error(
    chatui_server, body, headers, status, says
):
    conversation_id = chatui_server.new_conversation("refusals")
    with chatui_server.api() as client:
        response = client.post(
            f"/conversations/{conversation_id}/events",
            content=body,
            headers={"Content-Type": "application/json", **headers},
        )
        after = client.get(f"/conversations/{conversation_id}").json()
    assert response.status_code == status
    assert says in response.json()["error"]
    assert after["last_seq"] == 0  # nothing applied


def test_p2_routed_post_to_an_unknown_conversation_is_a_json_404(chatui_server):
    response = httpx.post(
        chatui_server.url + "/api/v1/conversations/00000000-0000-0000-0000-000000000000/events",
        json={"type": "user.message", "content": "hi"},
        headers={"Authorization": f"Bearer {chatui_server.token}"},
    )
    assert response.status_code == 404
    assert response.json() == {"error": "conversation not found"}


async def _post(application, conversation: Conversation, raw_token: str, content: str) -> dict:
    body = json.dumps({"type": "user.message", "content": content}).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": f"/api/v1/conversations/{conversation.pk}/events",
        "raw_path": f"/api/v1/conversations/{conversation.pk}/events".encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"authorization", f"Bearer {raw_token}".encode()),
        ],
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
    }
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await communicator.receive_output(10)
    answer = await communicator.receive_output(10)
    await communicator.wait(10)
    return {"status": start["status"], "body": json.loads(answer["body"])}


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_p2_routed_posts_run_on_one_writer_thread_that_keeps_its_connection(
    django_user_model,
):
    from asgiref.sync import sync_to_async

    user = await django_user_model.objects.acreate(username="writer")
    _, raw = await sync_to_async(ApiToken.issue)(user)
    conversation = await Conversation.objects.acreate(owner=user, title="route")
    seen: list[tuple[str, int]] = []

    def record(**kwargs) -> None:
        seen.append((threading.current_thread().name, id(connection.connection)))

    events_ingested.connect(record, dispatch_uid="test-writer-thread")
    try:
        application = IngestRoute(get_asgi_application())
        first = await _post(application, conversation, raw, "one")
        second = await _post(application, conversation, raw, "two")
    finally:
        events_ingested.disconnect(dispatch_uid="test-writer-thread")
        await close_writer_connections()  # the thread outlives the test database
    assert (first["status"], second["status"]) == (200, 200)
    assert [first["body"]["last_seq"], second["body"]["last_seq"]] == [1, 2]
    assert [name.startswith("chatui-writer") for name, _ in seen] == [True, True]
    if seen[0][0] == seen[1][0]:  # always on SQLite (one writer thread)
        assert seen[0][1] == seen[1][1]  # the same open connection, not a new one


@pytest.mark.asyncio
async def test_p2_routed_body_over_the_limit_keeps_one_byte_too_many_so_the_view_says_413(
    settings,
):
    """A body streamed in chunks past the limit is cut at limit + 1 bytes, never at a
    chunk boundary below the limit (which would hand the view a shorter, valid body)."""
    from chatui.server.ingest_route import _read_body

    settings.CHATUI_MAX_REQUEST_BYTES = 100
    messages = iter(
        [
            {"type": "http.request", "body": b"x" * 60, "more_body": True},
            {"type": "http.request", "body": b"y" * 60, "more_body": True},
            {"type": "http.request", "body": b"z" * 60, "more_body": False},
        ]
    )

    async def receive() -> dict:
        return next(messages)

    body = await _read_body(receive)
    assert body == b"x" * 60 + b"y" * 41
