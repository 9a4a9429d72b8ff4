"""docs/events.md#approvals against a real daphne: a long poll outlasts the edge's request deadline.

`CHATUI_REQUEST_TIMEOUT` (chatui.server.edge) bounds how long a request may take to *arrive*;
a long poll has arrived at once and then waits for its answer. With the deadline set
below the wait, the poll must still end in its own time with 204, not a 408 or a cut
connection."""

from __future__ import annotations

import asyncio
import threading

import pytest
from chatui_client import AsyncChatuiClient, ChatuiClient

from tests.support.live import LiveServer


@pytest.fixture(scope="module")
def short_deadline_server(tmp_path_factory):
    server = LiveServer(
        tmp_path_factory.mktemp("approval-live"), extra_env={"CHATUI_REQUEST_TIMEOUT": "2"}
    )
    with server.serving():
        yield server


def test_sec13_long_poll_outlasts_the_edge_request_deadline(short_deadline_server):
    server = short_deadline_server
    conversation_id = server.new_conversation("slow decision")
    server.post_events(
        conversation_id,
        {
            "type": "agent.tool.approval_requested",
            "tool_call_id": "w1",
            "tool_name": "delete_file",
        },
    )
    with server.api() as api:
        answer = api.get(
            f"/conversations/{conversation_id}/approvals/w1", params={"wait": 5}, timeout=30
        )
    assert answer.status_code == 204


def test_sec13_python_client_wait_for_approval_gets_the_decision(chatui_server):
    """The runtime's side with the Python client: ask, then wait; a person (here the
    API, as the page would) decides meanwhile."""
    with ChatuiClient(chatui_server.url, chatui_server.token) as chatui:
        conversation = chatui.create_conversation("client approval")
        run = chatui.run(conversation["id"])
        run.approval_requested("cw1", "delete_file", {"path": "a.txt"}, reason="destructive")
        assert chatui.wait_for_approval(conversation["id"], "cw1", timeout=1) is None

        def approve() -> None:
            with chatui_server.api() as api:
                api.post(
                    f"/conversations/{conversation['id']}/approvals/cw1",
                    json={"decision": "approved", "note": "go ahead"},
                )

        person = threading.Timer(0.5, approve)
        person.start()
        decision = chatui.wait_for_approval(conversation["id"], "cw1", timeout=60)
        person.join()
    assert decision["decision"] == "approved"
    assert decision["decided_by"] == "e2e"
    assert decision["note"] == "go ahead"

    async def again() -> dict:
        async with AsyncChatuiClient(chatui_server.url, chatui_server.token) as client:
            return await client.wait_for_approval(conversation["id"], "cw1", timeout=5)

    assert asyncio.run(again())["decision"] == "approved"
