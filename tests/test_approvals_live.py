"""SPEC §13 against a real daphne: a long poll outlasts the edge's request deadline.

`CHATUI_REQUEST_TIMEOUT` (chatui.edge) bounds how long a request may take to *arrive*;
a long poll has arrived at once and then waits for its answer. With the deadline set
below the wait, the poll must still end in its own time with 204, not a 408 or a cut
connection."""

from __future__ import annotations

import pytest

from tests.support.live import LiveServer


@pytest.fixture(scope="module")
def short_deadline_server(tmp_path_factory):
    server = LiveServer(
        tmp_path_factory.mktemp("approval-live"), extra_env={"CHATUI_REQUEST_TIMEOUT": "2"}
    )
    server.prepare()
    server.start()
    yield server
    server.stop()


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
