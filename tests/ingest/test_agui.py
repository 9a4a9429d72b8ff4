"""docs/events.md#ag-ui: AG-UI events through `ingest`, the one writer — validation, derived
ids, and the mapping onto messages and runs, proved on a real Pydantic AI capture and on
hand-made events for the cases no capture holds."""

from __future__ import annotations

import json

import pytest

from chatui.ingest.service import ingest
from chatui.ingest.values import EventError
from chatui.models import Event, Message
from tests.support.agui import capture, run_status, tools, transcript

RUN = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
END = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}


def start(call_id: str, name: str = "run_cmd") -> dict:
    return {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name}


def args(call_id: str, delta: str) -> dict:
    return {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": delta}


def end(call_id: str) -> dict:
    return {"type": "TOOL_CALL_END", "toolCallId": call_id}


def result(call_id: str, content: str, message_id: str = "") -> dict:
    return {
        "type": "TOOL_CALL_RESULT",
        "toolCallId": call_id,
        "messageId": message_id or f"m-{call_id}",
        "content": content,
    }


def test_pydantic_ai_capture_projects_its_tools_answer_and_run(conversation):
    for event in capture("agui_pydantic_ai"):
        ingest(conversation, event)
    calls = tools(conversation)
    assert calls["call_read_1"].metadata["args"] == {"path": "README.md"}
    assert calls["call_read_1"].tool_status == "success"
    assert calls["call_fetch_1"].metadata["tool_result"]["status"] == "green"  # JSON read
    answer = [m for m in transcript(conversation) if m["role"] == "assistant"]
    assert [m["content"] for m in answer] == [
        "## Result\n\n- **README**: read (20 lines)\n- **Tests**: `make test` failed once, "
        "then passed on retry (12 passed)\n- **CI**: build 1423 on `main` is **green**.\n"
    ]
    assert run_status(conversation) == [("run-fixture-1", "completed")]


def test_g14_pydantic_ai_retried_marker_makes_a_failed_attempt_and_its_retry_attempt_two(
    conversation,
):
    ingest(conversation, capture("agui_pydantic_ai"))
    calls = tools(conversation)
    failed, retry = calls["call_cmd_1"], calls["call_cmd_2"]
    assert failed.tool_status == "error"
    assert failed.metadata["tool_error"].startswith("make: *** [Makefile:12: test] Error 2")
    assert (failed.metadata["attempt"], failed.metadata["max_attempts"]) == (1, 3)
    assert retry.tool_status == "success"
    assert (retry.metadata["attempt"], retry.metadata["max_attempts"]) == (2, 3)


def test_g6_outcome_marker_turns_a_card_shown_as_success_into_an_error_live(conversation):
    ingest(conversation, [RUN, start("c1"), args("c1", '{"command": "make"}'), end("c1")])
    ingest(conversation, result("c1", "exit 2", message_id="res-1"))
    assert tools(conversation)["c1"].tool_status == "success"
    marker = {"pydantic_ai": {"outcome": "retried", "retry": {"attempt": 1, "max_retries": 1}}}
    ingest(
        conversation,
        {
            "type": "REASONING_ENCRYPTED_VALUE",
            "subtype": "message",
            "entityId": "res-1",
            "encryptedValue": json.dumps(marker),
        },
    )
    entry = tools(conversation)["c1"]
    assert entry.tool_status == "error" and entry.content == "exit 2"


def test_rel1_resent_starts_ends_and_results_are_duplicates(conversation):
    events = capture("agui_pydantic_ai")
    ingest(conversation, events)
    before = transcript(conversation)
    again = ingest(conversation, events)
    deltas = [e for e in events if e["type"] in ("TOOL_CALL_ARGS", "TEXT_MESSAGE_CONTENT")]
    assert again.duplicates == len(events) - len(deltas)
    assert again.accepted == len(deltas)  # a content delta has no id: applied, changes nothing
    assert transcript(conversation) == before


def test_rel1_a_resent_start_with_another_timestamp_is_still_a_duplicate(conversation):
    ingest(conversation, [RUN, {**start("c1"), "timestamp": 1795764139000}])
    again = ingest(conversation, {**start("c1"), "timestamp": 1795764999000})
    assert (again.accepted, again.duplicates) == (0, 1)


def test_ids_are_per_conversation_whatever_the_thread_id(conversation, user):
    from chatui.models import Conversation

    other = Conversation.objects.create(owner=user, title="Other")
    ingest(conversation, [RUN, start("c1")])
    second = ingest(other, [RUN, start("c1")])
    assert second.accepted == 2
    assert run_status(other) == [("r1", "running")]


def test_raw_events_stay_in_the_log_as_received(conversation):
    events = capture("agui_pydantic_ai")
    ingest(conversation, events)
    logged = list(Event.objects.filter(conversation=conversation).order_by("seq"))
    assert [row.payload for row in logged] == events
    assert {row.type for row in logged} >= {"agui.RUN_STARTED", "agui.TOOL_CALL_START"}
    assert logged[3].tool_call_id == "call_read_1"


def test_epoch_millisecond_timestamps_are_read(conversation):
    ingest(conversation, [{**RUN, "timestamp": 1795764139886}])
    row = Event.objects.get(conversation=conversation)
    assert row.timestamp.isoformat() == "2026-11-27T07:22:19.886000+00:00"


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"type": "TOOL_CALL_START", "toolCallName": "x"}, "toolCallId"),
        ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 5}, "delta"),
        (
            {"type": "MESSAGES_SNAPSHOT", "messages": [{"role": "user", "id": "u"}]},
            "messages[0].content",
        ),
        ({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 10**15}, "timestamp"),
        ({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": " "}, "toolCallName"),
    ],
)
def test_bad_agui_event_is_refused_naming_index_and_field_and_nothing_is_written(
    conversation, event, field
):
    with pytest.raises(EventError) as refused:
        ingest(conversation, [RUN, event])
    assert (refused.value.index, refused.value.field) == (1, field)
    assert refused.value.status == 400
    assert not Event.objects.filter(conversation=conversation).exists()


def test_r3_empty_text_message_start_end_pair_shows_nothing(conversation):
    ingest(
        conversation,
        [
            RUN,
            {"type": "TEXT_MESSAGE_START", "messageId": "a1", "role": "assistant"},
            {"type": "TEXT_MESSAGE_END", "messageId": "a1"},
        ],
    )
    assert not Message.objects.filter(conversation=conversation).exists()


def test_run_error_fails_the_run_with_its_message(conversation):
    ingest(conversation, [RUN, {"type": "RUN_ERROR", "message": "model exploded", "code": "E42"}])
    assert run_status(conversation) == [("r1", "failed")]
    banner = Message.objects.get(conversation=conversation, role="status")
    assert banner.status_type == "error" and banner.content == "model exploded (E42)"
