"""The approval long poll (`GET …/approvals/{tool_call_id}?wait=N`) has a per-user cap and
costs nothing while it waits.

Found by the security probe (issue 28, finding 6): any number of long polls could wait
at once, and each re-ran its queries on every frame of the conversation (and every
second besides): 300 waiting polls took the ingest rate from 982 to 248 events/s. Now a
user may hold CHATUI_MAX_LONG_POLLS_PER_USER waiting polls in a process (a 429 naming
the limit beyond it), and a waiting poll looks again only when its own call is decided
(or its deadline passes).

In-process, against the real route (`LongPollRouter`, as daphne serves it: no thread
held while a poll waits), database and channel layer: the look (`_poll`) is counted by
wrapping it, the real one still doing the work.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async
from channels.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application

from chatui.ingest import approvals
from chatui.ingest.service import ingest
from chatui.models import ApiToken
from chatui.server.long_poll import LongPollRouter
from chatui.web import approval_views
from tests.support.sockets import fresh_channel_layer

__all__ = ["fresh_channel_layer"]

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def ask(call_id: str) -> dict:
    return {
        "type": "agent.tool.approval_requested",
        "tool_call_id": call_id,
        "tool_name": "delete_file",
        "run_id": "r1",
    }


def url(conversation, call_id: str) -> str:
    return f"/api/v1/conversations/{conversation.pk}/approvals/{call_id}"


def bearer(user) -> str:
    _, raw = ApiToken.issue(user)
    return raw


@dataclass
class Answer:
    status_code: int
    headers: dict[bytes, bytes]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Runtime:
    """A runtime's long polls, through the route daphne serves them by."""

    application = LongPollRouter(get_asgi_application())

    def __init__(self, token: str):
        self.token = token

    async def get(self, path: str, params: dict[str, str] | None = None) -> Answer:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": urlencode(params or {}).encode(),
            "root_path": "",
            "headers": [
                (b"host", b"testserver"),
                (b"authorization", f"Bearer {self.token}".encode()),
            ],
            "client": ("127.0.0.1", 1234),
            "server": ("testserver", 80),
        }
        communicator = ApplicationCommunicator(self.application, scope)
        await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await communicator.receive_output(40)
        body = await communicator.receive_output(10)
        await communicator.wait(10)
        return Answer(start["status"], dict(start["headers"]), body["body"])


async def until(condition, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


@pytest.fixture
def looks(monkeypatch) -> list[str]:
    """Each look a long poll takes at its call (the real look runs)."""
    seen: list[str] = []
    real = approval_views._poll

    def counted(user, conversation_id, tool_call_id):
        seen.append(tool_call_id)
        return real(user, conversation_id, tool_call_id)

    monkeypatch.setattr(approval_views, "_poll", counted)
    return seen


async def test_long_polls_per_user_are_capped_with_a_429_naming_the_limit(
    settings, user, other_user, conversation, looks
):
    settings.CHATUI_MAX_LONG_POLLS_PER_USER = 3
    await sync_to_async(ingest)(conversation, [ask(f"c{n}") for n in range(4)])
    client = Runtime(await sync_to_async(bearer)(user))
    waiting = [
        asyncio.create_task(client.get(url(conversation, f"c{n}"), {"wait": "20"}))
        for n in range(3)
    ]
    await until(lambda: len(looks) == 3)

    refused = await client.get(url(conversation, "c3"), {"wait": "20"})
    assert refused.status_code == 429
    assert refused.headers[b"Content-Type"] == b"application/json"
    problem = refused.json()["error"]
    assert "3" in problem and "CHATUI_MAX_LONG_POLLS_PER_USER" in problem
    # A look without waiting is not a long poll: still answered.
    assert (await client.get(url(conversation, "c3"))).status_code == 204
    # Another user's polls are theirs to count.
    theirs = Runtime(await sync_to_async(bearer)(other_user))
    assert (await theirs.get(url(conversation, "c3"), {"wait": "1"})).status_code == 404

    for n in range(3):
        await sync_to_async(approvals.decide)(conversation, f"c{n}", "approved", user)
    answers = await asyncio.wait_for(asyncio.gather(*waiting), 10)
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    # Their places are free again.
    await sync_to_async(approvals.decide)(conversation, "c3", "denied", user)
    again = await client.get(url(conversation, "c3"), {"wait": "5"})
    assert again.status_code == 200 and again.json()["decision"] == "denied"


async def test_a_waiting_long_poll_looks_again_only_when_its_own_call_is_decided(
    user, conversation, looks
):
    await sync_to_async(ingest)(conversation, [ask("c1"), ask("c2")])
    client = Runtime(await sync_to_async(bearer)(user))
    poll = asyncio.create_task(client.get(url(conversation, "c1"), {"wait": "20"}))
    await until(lambda: len(looks) == 1)

    for n in range(30):  # thirty frames of the conversation while it waits
        delta = {"type": "agent.message.delta", "message_id": "a1", "delta": f"word {n} "}
        await sync_to_async(ingest)(conversation, delta)
    await sync_to_async(approvals.decide)(conversation, "c2", "approved", user)  # not its call
    await asyncio.sleep(1.5)  # (it used to look again every second besides)
    assert looks == ["c1"]

    await sync_to_async(approvals.decide)(conversation, "c1", "denied", user)
    answer = await asyncio.wait_for(poll, 10)
    assert answer.status_code == 200 and answer.json()["decision"] == "denied"
    assert looks == ["c1", "c1"]
