"""With CHATUI_HTTPS=1 every route redirects plain http to https — the routes served
beside Django's middleware chain too.

Found by the security probe (issue 28, finding 8): the events POST (routed straight to a
writer thread, chatui.server.ingest_route) and the approval long poll (chatui.web.approval_views'
`LongPollRouter`) skip the middleware chain, whose SecurityMiddleware makes the
redirect; over plain http they answered (and stored the events) while every other
route redirected. Now they apply the same rule, in the same order: the edge's own
checks (token, size) first, then the redirect, before anything is read or written.
"""

from __future__ import annotations

import json

import pytest
from channels.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application
from django.test import override_settings

from chatui.models import ApiToken, Conversation, Event
from chatui.server.ingest_route import IngestRoute
from chatui.server.long_poll import LongPollRouter
from tests.support.live import LiveServer

HTTPS = {"X-Forwarded-Proto": "https"}  # as the TLS proxy in front would say


@pytest.fixture(scope="module")
def https_server(tmp_path_factory):
    server = LiveServer(
        tmp_path_factory.mktemp("https"),
        extra_env={"CHATUI_HTTPS": "1", "CHATUI_BEHIND_TLS_PROXY": "1"},
    )
    with server.serving():
        yield server


def test_https_redirect_holds_on_the_routed_events_post_and_the_long_poll(https_server):
    server = https_server
    with server.api() as secure:
        secure.headers.update(HTTPS)
        made = secure.post("/conversations", json={"title": "https only"})
        assert made.status_code == 201, made.text
        conversation_id = made.json()["id"]
        ask = {"type": "agent.tool.approval_requested", "tool_call_id": "c1", "tool_name": "rm"}
        assert secure.post(f"/conversations/{conversation_id}/events", json=ask).status_code == 200

    events = f"/conversations/{conversation_id}/events"
    long_poll = f"/conversations/{conversation_id}/approvals/c1"
    with server.api() as plain:
        # The rule every route served by the middleware chain follows:
        reference = plain.get(f"/conversations/{conversation_id}")
        posted = plain.post(events, json={"type": "user.message", "content": "in clear"})
        polled = plain.get(long_poll, params={"wait": "2"})
    assert reference.status_code == 301
    for answer, path in ((posted, events), (polled, long_poll)):
        assert answer.status_code == 301, (path, answer.status_code, answer.text)
        assert answer.headers["location"].startswith(f"https://127.0.0.1:{server.port}/api/v1")
        assert answer.headers["location"].split("?")[0].endswith(path)

    with server.api() as secure:
        secure.headers.update(HTTPS)
        logged = secure.get(events).json()["events"]
        assert secure.get(long_poll).status_code == 204  # served over https
    assert [event["type"] for event in logged] == ["agent.tool.approval_requested"]


def _scope(method: str, path: str, token: str, body: bytes) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"wait=1" if method == "GET" else b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"authorization", f"Bearer {token}".encode()),
        ],
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
    }


async def _answer(application, scope: dict, body: bytes) -> dict:
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await communicator.receive_output(10)
    await communicator.receive_output(10)
    await communicator.wait(10)
    return {"status": start["status"], "headers": dict(start["headers"])}


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_https_redirect_holds_on_the_asgi_routes_beside_the_middleware(django_user_model):
    """The same routes on an ASGI server other than daphne (`IngestRoute`, `LongPollRouter`)."""
    from asgiref.sync import sync_to_async

    from tests.support.writer import close_writer_connections

    user = await django_user_model.objects.acreate(username="plain")
    _, raw = await sync_to_async(ApiToken.issue)(user)
    conversation = await Conversation.objects.acreate(owner=user, title="route")
    body = json.dumps({"type": "user.message", "content": "in clear"}).encode()
    base = f"/api/v1/conversations/{conversation.pk}"
    application = IngestRoute(LongPollRouter(get_asgi_application()))
    try:
        with override_settings(SECURE_SSL_REDIRECT=True):
            posted = await _answer(application, _scope("POST", base + "/events", raw, body), body)
            polled = await _answer(
                application, _scope("GET", base + "/approvals/c1", raw, b""), b""
            )
    finally:
        await close_writer_connections()
    for answer in (posted, polled):
        assert answer["status"] == 301
        assert answer["headers"][b"Location"].startswith(b"https://testserver" + base.encode())
    assert not await Event.objects.filter(conversation=conversation).aexists()
