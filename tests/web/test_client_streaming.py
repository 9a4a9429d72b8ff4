"""The client's streaming (docs/events.md#streaming-channel, issue 12 item 5) against a real daphne:
deltas coalesced, flushed before any other event, over HTTP or the ingest channel."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from chatui_client import ChatuiClient, ChatuiError
from chatui_client.streaming import (
    MAX_WAITING,
    MESSAGE_BYTES,
    MESSAGE_EVENTS,
    EventStream,
    IngestChannel,
    socket_messages,
)

PATIENCE_S = 30  # an upper bound for eventual delivery, never a measured latency


class CountingTransport(httpx.HTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.posts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.posts += request.method == "POST"
        return super().handle_request(request)


def delta(text: str) -> dict:
    return {"type": "agent.message.delta", "message_id": "a1", "delta": text}


def logged(server, conversation_id: str) -> list[dict]:
    with server.api() as api:
        return api.get(f"/conversations/{conversation_id}/events").json()["events"]


def recording_batches(out: EventStream) -> tuple[IngestChannel, list[list[dict]]]:
    """The stream's channel, and the batches the stream hands it from now on."""
    channel, batches = out._send.__self__, []

    def recording(batch: list[dict]) -> None:
        batches.append(batch)
        channel.send(batch)

    out._send = recording
    return channel, batches


def test_sec2_2_client_coalesces_deltas_and_sends_them_before_any_other_event(chatui_server):
    conversation_id = chatui_server.new_conversation("client coalescing")
    transport = CountingTransport()
    with ChatuiClient(chatui_server.url, chatui_server.token, transport=transport) as chatui:
        # A long flush period: only the tool event and close() may send anything.
        with chatui.stream(conversation_id, flush_after=60) as out:
            for word in ("one ", "two ", "three "):
                out.send(delta(word))
            assert transport.posts == 0
            out.send({"type": "agent.tool.started", "tool_call_id": "t1", "tool_name": "ls"})
            assert transport.posts == 1  # the deltas and the tool event, in one request
            out.send(delta("four"))
        assert transport.posts == 2  # close() flushed the last delta
    events = logged(chatui_server, conversation_id)
    assert [e["type"] for e in events] == ["agent.message.delta"] * 3 + [
        "agent.tool.started",
        "agent.message.delta",
    ]
    assert [e["payload"].get("delta") for e in events if "delta" in e["payload"]] == [
        "one ",
        "two ",
        "three ",
        "four",
    ]
    # One request, one ingest call: the first four share their server receive time.
    assert len({e["timestamp"] for e in events[:4]}) == 1


def test_sec2_2_client_flushes_waiting_deltas_by_itself(chatui_server):
    conversation_id = chatui_server.new_conversation("client timer")
    with ChatuiClient(chatui_server.url, chatui_server.token) as chatui:
        out = chatui.stream(conversation_id)
        out.delta("a1", "no flush called")
        deadline = time.monotonic() + PATIENCE_S
        while not logged(chatui_server, conversation_id) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [e["payload"]["delta"] for e in logged(chatui_server, conversation_id)] == [
            "no flush called"
        ]
        out.close()


def test_sec2_2_client_over_the_channel_stores_everything_once_across_a_drop(chatui_server):
    conversation_id = chatui_server.new_conversation("client channel")
    with ChatuiClient(chatui_server.url, chatui_server.token) as chatui:
        out = chatui.stream(conversation_id, channel=True)
        channel, batches = recording_batches(out)
        for word in ("one ", "two ", "three "):
            out.delta("a1", word)
        assert out.flush() == 3
        # As if the socket had dropped before its acks came: all three are re-sent.
        sent = [event for batch in batches for event in batch]
        channel._unacked.update({event["event_id"]: event for event in sent})
        channel._socket.close()
        out.delta("a1", "four")
        out.send({"type": "agent.step.completed", "message_id": "a1", "content": "done"})
        assert out.flush() == 5
        out.close()
        assert sum(map(len, batches)) == 5
    events = logged(chatui_server, conversation_id)
    assert len(events) == 5 and len({e["event_id"] for e in events}) == 5
    with chatui_server.api() as api:
        messages = api.get(f"/conversations/{conversation_id}").json()["messages"]
    assert [m["content"] for m in messages] == ["done"]


def test_sec2_2_client_channel_raises_the_servers_error_and_goes_on(chatui_server):
    conversation_id = chatui_server.new_conversation("client channel error")
    with ChatuiClient(chatui_server.url, chatui_server.token) as chatui:
        out = chatui.stream(conversation_id, channel=True)
        out.send({"type": "agent.tool.started", "tool_call_id": "t1"})  # no tool_name
        with pytest.raises(ChatuiError) as refused:
            out.flush()
        assert refused.value.status == 400 and refused.value.field == "tool_name"
        out.delta("a1", "still streaming")
        assert out.flush() == 1
        out.close()


def test_sec2_2_channel_events_handed_over_together_go_out_as_one_message(chatui_server):
    conversation_id = chatui_server.new_conversation("client channel together")
    with ChatuiClient(chatui_server.url, chatui_server.token) as chatui:
        out = chatui.stream(conversation_id, channel=True)
        _, batches = recording_batches(out)  # a batch of small events: one socket message
        call = {"tool_call_id": "t1", "run_id": "r1"}
        runtime = threading.Thread(
            target=lambda: [
                out.send({"type": "agent.tool.started", "tool_name": "read_file", **call}),
                out.send({"type": "agent.tool.completed", "result": "ok", **call}),
            ],
            daemon=True,  # a send that blocked would otherwise keep the test run alive
        )
        with out._sending:  # the stream's thread is busy sending: both events wait
            runtime.start()
            runtime.join(timeout=PATIENCE_S)
            assert not runtime.is_alive()  # and the runtime did not wait for it
        assert out.flush() == 2
        out.close()
    assert [len(batch) for batch in batches] == [2]  # so one ingest: one transaction
    events = logged(chatui_server, conversation_id)
    assert [e["type"] for e in events] == ["agent.tool.started", "agent.tool.completed"]
    assert len({e["timestamp"] for e in events}) == 1  # one ingest call's receive time


def test_sec2_2_a_channel_send_never_waits_for_the_network():
    stalled, released = threading.Event(), threading.Event()
    batches: list[list[dict]] = []

    def slow_socket(batch: list[dict]) -> None:
        stalled.set()
        released.wait(timeout=PATIENCE_S)
        batches.append(batch)

    out = EventStream(slow_socket, background=True)
    out.send({"type": "agent.tool.started", "tool_call_id": "t1", "tool_name": "ls"})
    assert stalled.wait(timeout=PATIENCE_S)  # the stream's thread is in the socket
    for n in range(3):  # returns at once, though the network is stuck
        out.send({"type": "agent.tool.progress", "tool_call_id": "t1", "output": f"{n}"})
    assert len(batches) == 0
    released.set()
    out.close()
    assert [len(batch) for batch in batches] == [1, 3]  # what waited went out together


def test_sec2_2_a_background_stream_holds_at_most_max_waiting_events():
    released = threading.Event()
    out = EventStream(lambda batch: released.wait(timeout=PATIENCE_S), background=True)
    out.send({"type": "agent.status", "status": "running"})  # the thread is now stuck
    time.sleep(0.05)
    waiting = threading.Thread(
        target=lambda: [
            out.send({"type": "agent.status", "status": "running"}) for _ in range(MAX_WAITING + 1)
        ]
    )
    waiting.start()
    waiting.join(timeout=2)
    assert waiting.is_alive()  # blocked: the buffer is full
    assert len(out._buffer) == MAX_WAITING
    released.set()
    waiting.join(timeout=PATIENCE_S)
    assert not waiting.is_alive()
    out.close()


def test_sec2_2_channel_messages_are_cut_by_count_and_by_size():
    small = [{"event_id": f"e{n}", "type": "agent.status"} for n in range(MESSAGE_EVENTS + 1)]
    assert [len(ids) for ids, _ in socket_messages(small)] == [MESSAGE_EVENTS, 1]
    big = "x" * (MESSAGE_BYTES // 2)
    large = [{"event_id": f"b{n}", "type": "user.message", "content": big} for n in range(3)]
    cut = socket_messages(large)
    assert [ids for ids, _ in cut] == [["b0"], ["b1"], ["b2"]]  # two would exceed the limit
    assert all(len(text) <= MESSAGE_BYTES for _, text in cut)
    huge = [{"event_id": "h", "type": "user.message", "content": "y" * (MESSAGE_BYTES + 1)}]
    assert [ids for ids, _ in socket_messages(huge)] == [["h"]]  # alone: the server decides
    assert [json.loads(text) for _, text in socket_messages(small)][1] == small[-1:]
