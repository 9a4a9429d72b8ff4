"""The streaming ingest channel (docs/events.md#streaming-channel) on a real daphne:
`/ws/ingest/{id}/`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.support.live import LiveServer

OTHER_USER = "channel-other"


def ws_url(server: LiveServer, conversation_id: str) -> str:
    return server.url.replace("http://", "ws://") + f"/ws/ingest/{conversation_id}/"


@contextmanager
def channel(
    server: LiveServer, conversation_id: str, token: str | None = None, **headers: str
) -> Iterator[ClientConnection]:
    sent = dict(headers)
    if token != "":
        sent["Authorization"] = f"Bearer {token or server.token}"
    url = ws_url(server, conversation_id)
    with connect(url, additional_headers=sent, open_timeout=30, proxy=None) as ws:
        yield ws


def answer(ws: ClientConnection) -> dict:
    return json.loads(ws.recv(timeout=30))


def close_code(ws: ClientConnection) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=30)
    return closed.value.rcvd.code if closed.value.rcvd else None


def delta(event_id: str, text: str, message_id: str = "a1") -> dict:
    return {
        "type": "agent.message.delta",
        "event_id": event_id,
        "message_id": message_id,
        "delta": text,
    }


def logged(server: LiveServer, conversation_id: str) -> list[dict]:
    with server.api() as api:
        return api.get(f"/conversations/{conversation_id}/events").json()["events"]


def test_sec2_2_ack_comes_after_the_event_is_durable(chatui_server):
    conversation_id = chatui_server.new_conversation("channel ack")
    with channel(chatui_server, conversation_id) as ws:
        ws.send(json.dumps({"type": "user.message", "event_id": "u1", "content": "hi"}))
        ack = answer(ws)
        assert ack == {"ack": ["u1"], "accepted": 1, "duplicates": 0, "last_seq": 1}
        # Acknowledged means stored: another connection reads it at once.
        assert [e["event_id"] for e in logged(chatui_server, conversation_id)] == ["u1"]


def test_sec2_2_bad_event_gets_the_error_json_and_the_channel_stays_open(chatui_server):
    conversation_id = chatui_server.new_conversation("channel errors")
    with channel(chatui_server, conversation_id) as ws:
        ws.send(json.dumps([delta("d1", "ok"), {"type": "nonsense"}]))
        problem = answer(ws)
        assert problem["field"] == "type" and problem["index"] == 1 and problem["status"] == 400
        assert "unknown event type" in problem["error"]
        ws.send("{not json")
        assert "not valid JSON" in answer(ws)["error"]
        ws.send(json.dumps(delta("d2", "still open")))
        assert answer(ws)["ack"] == ["d2"]
    # Nothing of the bad message was applied (a message is applied whole or not at all).
    assert [e["event_id"] for e in logged(chatui_server, conversation_id)] == ["d2"]


def test_sec13_runtime_cannot_post_a_tool_approval_over_the_channel(chatui_server):
    """Decisions are people's (docs/events.md#approvals): the channel refuses them as the API
    does."""
    conversation_id = chatui_server.new_conversation("channel approval")
    decision = {
        "type": "tool.approval",
        "event_id": "a1",
        "tool_call_id": "t1",
        "decision": "approved",
        "decided_by": "mallory",
    }
    with channel(chatui_server, conversation_id) as ws:
        ws.send(json.dumps(decision))
        problem = answer(ws)
        assert (problem["status"], problem["field"]) == (400, "type")
        ws.send(json.dumps(delta("d1", "still open")))
        assert answer(ws)["ack"] == ["d1"]
    assert [e["event_id"] for e in logged(chatui_server, conversation_id)] == ["d1"]


def test_sec2_2_resend_after_a_dropped_channel_stores_nothing_twice(chatui_server):
    conversation_id = chatui_server.new_conversation("channel resend")
    with channel(chatui_server, conversation_id) as ws:
        for n in (1, 2, 3):
            ws.send(json.dumps(delta(f"d{n}", f"{n} ")))
        acked = set()
        while len(acked) < 3:
            acked |= set(answer(ws)["ack"])
    # The runtime lost the channel not knowing about d3, say: it re-sends d3 on.
    with channel(chatui_server, conversation_id) as ws:
        ws.send(json.dumps([delta("d3", "3 "), delta("d4", "4 "), delta("d5", "5")]))
        ack = answer(ws)
        assert ack["ack"] == ["d3", "d4", "d5"] and ack["duplicates"] == 1
        assert ack["accepted"] == 2 and ack["last_seq"] == 5
    events = logged(chatui_server, conversation_id)
    assert [e["event_id"] for e in events] == ["d1", "d2", "d3", "d4", "d5"]
    with chatui_server.api() as api:
        messages = api.get(f"/conversations/{conversation_id}").json()["messages"]
    assert [m["content"] for m in messages] == ["1 2 3 4 5"]


def test_sec2_2_reused_event_id_fails_only_its_own_message(chatui_server):
    conversation_id = chatui_server.new_conversation("channel conflict")
    with channel(chatui_server, conversation_id) as ws:
        # Sent back to back: the server may write them as one batch.
        for event in (delta("c1", "a"), delta("c2", "b"), delta("c1", "other"), delta("c3", "c")):
            ws.send(json.dumps(event))
        # One ack may cover several messages: read until all three are acknowledged.
        answers = [answer(ws)]
        while sorted(i for a in answers for i in a.get("ack", [])) != ["c1", "c2", "c3"]:
            answers.append(answer(ws))
    errors = [a for a in answers if "error" in a]
    assert len(errors) == 1 and errors[0]["status"] == 409 and errors[0]["field"] == "event_id"
    assert [e["event_id"] for e in logged(chatui_server, conversation_id)] == ["c1", "c2", "c3"]


@pytest.mark.parametrize("token", ["", "not-a-token"], ids=["missing", "wrong"])
def test_sec2_2_missing_or_wrong_token_is_closed_with_4401(chatui_server, token):
    conversation_id = chatui_server.new_conversation("channel auth")
    with channel(chatui_server, conversation_id, token=token) as ws:
        assert close_code(ws) == 4401
    assert logged(chatui_server, conversation_id) == []


def test_sec2_2_another_users_conversation_is_refused(chatui_server):
    conversation_id = chatui_server.new_conversation("channel not yours")
    other_token = chatui_server.add_user(OTHER_USER, "other-password-1")
    with channel(chatui_server, conversation_id, token=other_token) as ws:
        assert close_code(ws) == 4404
    assert logged(chatui_server, conversation_id) == []


def test_sec4_ingest_channel_opened_by_another_sites_page_is_refused(chatui_server):
    conversation_id = chatui_server.new_conversation("channel origin")
    with channel(chatui_server, conversation_id, Origin="https://evil.example") as ws:
        assert close_code(ws) == 4401


def test_sec2_2_unknown_ingest_path_is_closed_with_4404(chatui_server):
    with channel(chatui_server, "not-a-uuid") as ws:
        assert close_code(ws) == 4404


def test_p5_a_viewer_gets_each_streamed_delta_as_a_small_frame(chatui_server):
    conversation_id = chatui_server.new_conversation("channel viewer")
    with channel(chatui_server, conversation_id) as ws:
        ws.send(json.dumps(delta("long", "All work and no play. " * 1000)))
        assert answer(ws)["last_seq"] == 1
        viewer_url = ws_url(chatui_server, conversation_id).replace("/ingest/", "/conversations/")
        with connect(
            viewer_url + "?after=1",
            origin=chatui_server.url,
            additional_headers={"Cookie": chatui_server.session_cookie()},
            proxy=None,
        ) as view:
            ws.send(json.dumps(delta("t1", "token")))
            assert answer(ws)["last_seq"] == 2
            frame = view.recv(timeout=30)
    assert frame.startswith("<!--seq 2 2-->") and ">token</div>" in frame
    assert len(frame.encode()) <= 1024


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_sec2_2_a_token_revoked_while_the_channel_is_open_stops_its_writes(
    monkeypatch, user, conversation
):
    from asgiref.sync import sync_to_async
    from channels.testing import WebsocketCommunicator

    from chatui.models import ApiToken, Event
    from chatui.web import ingest_socket
    from config.asgi import application

    monkeypatch.setattr(ingest_socket, "RECHECK_SECONDS", 0.0)
    token, raw = await sync_to_async(ApiToken.issue)(user)
    communicator = WebsocketCommunicator(
        application,
        f"/ws/ingest/{conversation.pk}/",
        headers=[(b"authorization", f"Bearer {raw}".encode())],
    )
    assert (await communicator.connect())[0]
    await communicator.send_json_to(delta("r1", "before"))
    assert (await communicator.receive_json_from(timeout=30))["ack"] == ["r1"]
    await sync_to_async(token.delete)()
    await communicator.send_json_to(delta("r2", "after"))
    closed = await communicator.receive_output(timeout=30)
    assert closed == {"type": "websocket.close", "code": 4401}
    assert await sync_to_async(list)(Event.objects.values_list("event_id", flat=True)) == ["r1"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_sec2_2_deltas_queued_on_the_channel_are_written_as_one_batch(user, conversation):
    from asgiref.sync import sync_to_async
    from channels.testing import WebsocketCommunicator

    from chatui.models import ApiToken, Event
    from config.asgi import application

    _token, raw = await sync_to_async(ApiToken.issue)(user)
    communicator = WebsocketCommunicator(
        application,
        f"/ws/ingest/{conversation.pk}/",
        headers=[(b"authorization", f"Bearer {raw}".encode())],
    )
    assert (await communicator.connect())[0]
    # Queued before the consumer reads any of them: one tick, one transaction, one ack.
    for n in (1, 2, 3):
        await communicator.send_json_to(delta(f"q{n}", f"{n} "))
    ack = await communicator.receive_json_from(timeout=30)
    assert ack == {"ack": ["q1", "q2", "q3"], "accepted": 3, "duplicates": 0, "last_seq": 3}
    received = await sync_to_async(list)(Event.objects.values_list("received_at", flat=True))
    assert len(set(received)) == 1  # one ingest call stamps one receive time
    await communicator.disconnect()
