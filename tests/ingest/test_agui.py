"""docs/events.md#ag-ui: AG-UI events through `ingest`, the one writer — validation, derived
ids, and the mapping onto messages and runs, proved on a real Pydantic AI capture and on
hand-made events for the cases no capture holds."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from chatui.ingest import approvals
from chatui.ingest.service import approval_events_committed, ingest
from chatui.ingest.values import EventError
from chatui.models import Event, Message
from tests.support.agui import capture, comparable, run_status, tools, transcript

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


# -- the frameworks' own captures (tests/fixtures/agui/, made by capture/*.py) ----------


def test_langgraph_capture_user_message_first_then_tools_then_answer(conversation):
    for event in capture("langgraph"):
        ingest(conversation, event)
    shown = transcript(conversation)
    assert [m["role"] for m in shown] == ["user", "tool", "tool", "tool", "tool", "assistant"]
    assert shown[0]["id"] == "user-1"  # only the final snapshot named it: placed at the start
    assert shown[-1]["content"].startswith("## Result")
    calls = tools(conversation)
    assert calls["call_read_1"].metadata["args"] == {"path": "README.md"}  # from the snapshot
    assert run_status(conversation) == [("run-langgraph", "completed")]


def test_g6_g14_langgraph_failure_known_only_from_state_is_an_error_and_its_retry_attempt_two(
    conversation,
):
    ingest(conversation, capture("langgraph"))
    calls = tools(conversation)
    failed, retry = calls["call_cmd_1"], calls["call_cmd_2"]
    assert failed.tool_status == "error"
    assert "RuntimeError('make: *** [Makefile:12: test] Error 2" in failed.content
    assert "no_result_recorded" not in failed.metadata
    assert (failed.metadata["attempt"], retry.metadata["attempt"]) == (1, 2)
    assert retry.tool_status == "success"


def test_g6_langgraph_error_only_in_the_final_messages_snapshot_is_an_error(conversation):
    """LangGraph without its state snapshots and RAW events: the failed call got no
    result in the stream, and only MESSAGES_SNAPSHOT's tool message holds the error."""
    events = [e for e in capture("langgraph") if e["type"] not in ("STATE_SNAPSHOT", "RAW")]
    ingest(conversation, events)
    failed = tools(conversation)["call_cmd_1"]
    assert failed.tool_status == "error"
    assert failed.content.startswith("Error: RuntimeError('make: ***")
    assert "no_result_recorded" not in failed.metadata


def test_g6_langgraph_raw_on_tool_error_fails_the_call_before_any_snapshot(conversation):
    events = capture("langgraph")
    raw = next(
        i
        for i, e in enumerate(events)
        if e["type"] == "RAW" and e["event"]["event"] == "on_tool_error"
    )
    ingest(conversation, events[: raw + 1])
    assert tools(conversation)["call_cmd_1"].tool_status == "error"


@pytest.mark.parametrize(
    ("name", "call_id", "error"),
    [
        ("pydantic_ai_run_error", "call_fetch_1", "connection refused by <b>ci.example.test</b>"),
        (
            "langgraph_run_error",
            "call_cmd_1",
            "make: *** [Makefile:12: test] Error 2 (exit code 2): 1 failed, 11 passed",
        ),
    ],
)
def test_g6_s2_run_error_fails_the_run_and_its_interrupted_call_never_a_success(
    conversation, name, call_id, error
):
    ingest(conversation, capture(name))
    assert run_status(conversation) == [(f"run-{name}", "failed")]
    entry = tools(conversation)[call_id]
    assert entry.tool_status == "error"
    assert "no_result_recorded" not in entry.metadata
    banner = Message.objects.get(conversation=conversation, role="status", status_type="error")
    assert banner.content == error


def test_every_capture_reprojects_to_the_same_messages(conversation):
    from chatui.ingest.service import reproject
    from tests.support.agui import captures

    for name in captures():
        ingest(conversation, capture(name))
    before = transcript(conversation)
    reproject(conversation)
    assert transcript(conversation) == before


def test_capture_posted_as_one_batch_or_event_by_event_projects_the_same(user):
    from chatui.models import Conversation

    for name in ("pydantic_ai", "langgraph"):
        whole = Conversation.objects.create(owner=user, title=name)
        piecemeal = Conversation.objects.create(owner=user, title=name)
        ingest(whole, capture(name))
        for event in capture(name):
            ingest(piecemeal, event)
        assert comparable(transcript(whole)) == comparable(transcript(piecemeal))


# -- text, steps, reasoning, interrupts, usage ------------------------------------------


def test_text_message_chunks_stream_one_answer_and_end_with_the_run(conversation):
    ingest(
        conversation,
        [
            RUN,
            {"type": "TEXT_MESSAGE_CHUNK", "messageId": "a1", "role": "assistant", "delta": "Hel"},
            {"type": "TEXT_MESSAGE_CHUNK", "delta": "lo"},
        ],
    )
    answer = Message.objects.get(conversation=conversation, role="assistant")
    assert (answer.message_id, answer.content, answer.is_final) == ("a1", "Hello", False)
    ingest(conversation, END)
    answer.refresh_from_db()
    assert answer.is_final


def test_r1_user_role_text_message_is_a_user_message_system_stays_in_the_log(conversation):
    ingest(
        conversation,
        [
            RUN,
            {"type": "TEXT_MESSAGE_START", "messageId": "u1", "role": "user"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "u1", "delta": "hi <b>there</b>"},
            {"type": "TEXT_MESSAGE_END", "messageId": "u1"},
            {"type": "TEXT_MESSAGE_START", "messageId": "s1", "role": "system"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "s1", "delta": "secret prompt"},
            {"type": "TEXT_MESSAGE_END", "messageId": "s1"},
        ],
    )
    assert [(m["role"], m["content"]) for m in transcript(conversation)] == [
        ("user", "hi <b>there</b>")
    ]
    assert (
        Event.objects.filter(conversation=conversation, type="agui.TEXT_MESSAGE_CONTENT").count()
        == 2
    )


def test_text_content_sent_alone_later_keeps_the_role_its_start_gave(conversation):
    ingest(
        conversation, [RUN, {"type": "TEXT_MESSAGE_START", "messageId": "s1", "role": "developer"}]
    )
    ingest(conversation, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "s1", "delta": "x"})
    assert not Message.objects.filter(conversation=conversation).exists()


def test_steps_show_as_the_run_status_line_while_they_run(conversation):
    ingest(conversation, [RUN, {"type": "STEP_STARTED", "stepName": "plan <b>it</b>"}])
    line = Message.objects.get(conversation=conversation, role="status")
    assert (line.status_type, line.content) == ("thinking", "plan <b>it</b>")
    ingest(conversation, {"type": "STEP_FINISHED", "stepName": "plan <b>it</b>"})
    assert not Message.objects.filter(conversation=conversation, role="status").exists()


def test_g5_tool_call_start_shows_a_running_card_with_args_streaming_into_its_call_line(
    conversation,
):
    ingest(conversation, [RUN, start("c1", "read_file"), args("c1", '{"path": "REA')])
    entry = tools(conversation)["c1"]
    assert entry.tool_status == "running"
    assert entry.metadata["args_summary"] == '{"path": "REA'
    ingest(conversation, [args("c1", 'DME.md"}'), end("c1")])
    entry = tools(conversation)["c1"]
    assert entry.metadata["args"] == {"path": "README.md"}
    assert "args_summary" not in entry.metadata


def test_args_that_do_not_parse_stay_as_text(conversation):
    ingest(conversation, [RUN, start("c1"), args("c1", "not json"), end("c1")])
    entry = tools(conversation)["c1"]
    assert entry.metadata["args_summary"] == "not json" and "args" not in entry.metadata


def test_tool_call_chunks_start_the_call_and_stream_its_args(conversation):
    ingest(
        conversation,
        [
            RUN,
            {
                "type": "TOOL_CALL_CHUNK",
                "toolCallId": "c1",
                "toolCallName": "fetch",
                "delta": '{"url":',
            },
            {"type": "TOOL_CALL_CHUNK", "delta": ' "https://x.test"}'},
            result("c1", '{"ok": true}'),
        ],
    )
    entry = tools(conversation)["c1"]
    assert entry.tool_name == "fetch" and entry.metadata["args"] == {"url": "https://x.test"}
    assert entry.metadata["tool_result"] == {"ok": True}


def test_g21_json_results_are_read_as_json_mcp_and_text_details(conversation):
    mcp = {"content": [{"type": "text", "text": "hi"}], "isError": True}
    ingest(
        conversation,
        [
            RUN,
            start("c1"),
            result("c1", json.dumps(mcp)),
            start("c2"),
            result("c2", json.dumps({"text": "done", "details": {"exit_code": 3}})),
            start("c3"),
            result("c3", "[not json"),
        ],
    )
    calls = tools(conversation)
    assert calls["c1"].metadata["tool_result"] == mcp
    assert calls["c2"].content == "done" and calls["c2"].tool_status == "error"  # G15
    assert calls["c3"].metadata["tool_result"] == "[not json"


def test_r6_reasoning_streams_into_a_block_never_the_answer(conversation):
    ingest(
        conversation,
        [
            {**RUN, "timestamp": 1_000_000},
            {"type": "REASONING_START", "messageId": "r1"},
            {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"},
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "Let me <think>"},
            {"type": "REASONING_MESSAGE_END", "messageId": "r1", "timestamp": 1_004_000},
            {"type": "REASONING_END", "messageId": "r1", "timestamp": 1_004_000},
        ],
    )
    block = Message.objects.get(conversation=conversation, message_id="r1")
    assert block.content == ""
    assert block.metadata["reasoning"] == "Let me <think>"
    assert block.metadata["reasoning_ended_at"] == "1970-01-01T00:16:44Z"


def test_r6_old_thinking_events_stream_a_reasoning_block(conversation):
    ingest(
        conversation,
        [
            RUN,
            {"type": "THINKING_START", "title": "plan"},
            {"type": "THINKING_TEXT_MESSAGE_START"},
            {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "one "},
            {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "two"},
            {"type": "THINKING_TEXT_MESSAGE_END"},
            {"type": "THINKING_END"},
        ],
    )
    (block,) = Message.objects.filter(conversation=conversation)
    assert block.metadata["reasoning"] == "one two"


def test_r6_encrypted_reasoning_says_only_that_it_happened(conversation):
    ingest(
        conversation,
        [
            RUN,
            {
                "type": "REASONING_ENCRYPTED_VALUE",
                "subtype": "message",
                "entityId": "r9",
                "encryptedValue": "gAAAAB…opaque",
            },
        ],
    )
    block = Message.objects.get(conversation=conversation, message_id="r9")
    assert block.metadata["reasoning_encrypted"] is True
    assert "opaque" not in json.dumps(block.metadata)


def test_approvals_interrupt_for_a_tool_call_puts_it_awaiting_approval(conversation):
    ingest(
        conversation,
        [
            RUN,
            start("c1", "delete_all"),
            end("c1"),
            {
                **END,
                "outcome": {
                    "type": "interrupt",
                    "interrupts": [
                        {"id": "i1", "reason": "tool_call", "toolCallId": "c1", "message": "sure?"}
                    ],
                },
            },
        ],
    )
    entry = tools(conversation)["c1"]
    assert entry.tool_status == "awaiting_approval"
    assert entry.metadata["approval"]["reason"] == "sure?"
    assert entry.metadata["interrupt"]["id"] == "i1"
    assert run_status(conversation) == [("r1", "completed")]


def test_s4_usage_gives_the_run_its_tokens(conversation):
    ingest(
        conversation,
        [
            RUN,
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a1", "delta": "done"},
            {
                **END,
                "usage": [
                    {"inputTokens": 100, "outputTokens": 20, "model": "m1"},
                    {"inputTokens": 5, "outputTokens": 5, "totalTokens": 10, "model": "m2"},
                ],
            },
        ],
    )
    answer = Message.objects.get(conversation=conversation, role="assistant")
    assert answer.metadata["tokens"] == 130
    assert answer.metadata["usage"] == {"input_tokens": 105, "output_tokens": 25, "model": "m1, m2"}


# -- snapshots: reconciliation ---------------------------------------------------------------


def snapshot(*messages: dict) -> dict:
    return {"type": "MESSAGES_SNAPSHOT", "messages": list(messages)}


def test_messages_snapshot_adds_the_results_and_texts_the_stream_did_not_deliver(conversation):
    ingest(conversation, [RUN, start("c1", "read_file"), end("c1")])
    ingest(
        conversation,
        snapshot(
            {"id": "u1", "role": "user", "content": "read it"},
            {
                "id": "a1",
                "role": "assistant",
                "toolCalls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "ls", "arguments": '{"d": "/"}'},
                    },
                ],
            },
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "file text"},
            {"id": "t2", "role": "tool", "toolCallId": "c2", "content": "", "error": "no such dir"},
            {"id": "a2", "role": "assistant", "content": "All read."},
        ),
    )
    calls = tools(conversation)
    assert (calls["c1"].tool_status, calls["c1"].content) == ("success", "file text")
    assert (calls["c2"].tool_status, calls["c2"].content) == ("error", "no such dir")
    assert calls["c2"].metadata["args"] == {"d": "/"}
    roles = [(m["role"], m["content"]) for m in transcript(conversation) if m["role"] != "tool"]
    assert roles == [("user", "read it"), ("assistant", "All read.")]


def test_messages_snapshot_removes_nothing_shown_and_adds_nothing_twice(conversation):
    ingest(
        conversation,
        [
            RUN,
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a1", "delta": "streamed"},
            start("c1"),
        ],
    )
    ingest(conversation, snapshot({"id": "other", "role": "user", "content": "x"}))
    before = transcript(conversation)
    ingest(conversation, snapshot({"id": "other", "role": "user", "content": "x"}))
    assert transcript(conversation) == before
    assert {m["id"] for m in before} >= {"a1", "tool_c1", "other"}


def test_t2_snapshot_holding_the_error_is_never_no_result_recorded(conversation):
    ingest(conversation, [RUN, start("c1"), end("c1"), END])
    assert tools(conversation)["c1"].metadata["no_result_recorded"] is True
    ingest(
        conversation,
        snapshot({"id": "t", "role": "tool", "toolCallId": "c1", "content": "", "error": "boom"}),
    )
    entry = tools(conversation)["c1"]
    assert entry.tool_status == "error" and "no_result_recorded" not in entry.metadata


def test_g6_snapshot_error_turns_a_success_into_an_error(conversation):
    ingest(conversation, [RUN, start("c1"), end("c1"), result("c1", "looked fine")])
    ingest(
        conversation,
        snapshot(
            {"id": "t", "role": "tool", "toolCallId": "c1", "content": "x", "error": "it was not"}
        ),
    )
    assert tools(conversation)["c1"].tool_status == "error"


def test_state_snapshot_messages_reconcile_too(conversation):
    ingest(conversation, [RUN, start("c1"), end("c1")])
    ingest(
        conversation,
        {
            "type": "STATE_SNAPSHOT",
            "snapshot": {
                "messages": [
                    {"type": "tool", "tool_call_id": "c1", "content": "bad", "status": "error"}
                ],
                "counter": 3,
            },
        },
    )
    assert tools(conversation)["c1"].tool_status == "error"


@pytest.mark.parametrize(
    "event",
    [
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/counter", "value": 4}]},
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "p1",
            "activityType": "plan",
            "content": {"s": 1},
        },
        {"type": "ACTIVITY_DELTA", "messageId": "p1", "activityType": "plan", "patch": []},
        {"type": "CUSTOM", "name": "note", "value": {"any": ["thing"]}},
        {"type": "RAW", "event": {"whatever": 1}, "source": "x"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"counter": 3}},
    ],
)
def test_state_activity_raw_and_custom_are_kept_in_the_log_and_show_no_message(conversation, event):
    ingest(conversation, [RUN, event])
    assert Event.objects.filter(conversation=conversation, type=f"agui.{event['type']}").exists()
    assert not Message.objects.filter(conversation=conversation).exists()


def test_t1_hostile_names_args_and_results_are_stored_as_sent(conversation):
    name = "<img src=x onerror=alert('name')>"
    ingest(
        conversation,
        [
            RUN,
            {**start("<script>id</script>", name)},
            args("<script>id</script>", '{"<b>k</b>": "<svg onload=alert(1)>"}'),
            end("<script>id</script>"),
            result("<script>id</script>", "<script>alert('result')</script>"),
        ],
    )
    entry = tools(conversation)["<script>id</script>"]
    assert entry.tool_name == name
    assert entry.metadata["args"] == {"<b>k</b>": "<svg onload=alert(1)>"}


def interrupted(call_id: str, **interrupt: object) -> list[dict]:
    return [
        RUN,
        start(call_id, "delete_all"),
        end(call_id),
        {
            **END,
            "outcome": {
                "type": "interrupt",
                "interrupts": [
                    {"id": f"i-{call_id}", "reason": "tool_call", "toolCallId": call_id} | interrupt
                ],
            },
        },
    ]


def asked_at_and_deadline(conversation, call_id: str) -> tuple[datetime, datetime]:
    approval = tools(conversation)[call_id].metadata["approval"]
    return (
        datetime.fromisoformat(approval["requested_at"]),
        datetime.fromisoformat(approval["expires_at"]),
    )


def test_sec13_an_interrupts_expires_at_is_its_approval_deadline(conversation):
    expires = timezone.now() + timedelta(minutes=5)
    ingest(conversation, interrupted("c1", expiresAt=expires.isoformat()))
    _, deadline = asked_at_and_deadline(conversation, "c1")
    assert abs(deadline - expires) < timedelta(milliseconds=1)


@pytest.mark.parametrize(
    ("expires_at", "after"),
    [
        (None, timedelta(seconds=600)),  # none given: the native default
        ("soon", timedelta(seconds=600)),  # not a time: the native default
        ("2026-13-40T25:00:00Z", timedelta(seconds=600)),  # shaped like one, out of range
        ("2001-01-01T00:00:00Z", timedelta(0)),  # already past: due at once
        ("2999-01-01T00:00:00Z", timedelta(days=7)),  # beyond a week: a week, as native
    ],
)
def test_sec13_an_interrupts_deadline_is_bounded_as_a_native_requests(
    conversation, expires_at, after
):
    interrupt = {} if expires_at is None else {"expiresAt": expires_at}
    ingest(conversation, interrupted("c1", **interrupt))
    asked, deadline = asked_at_and_deadline(conversation, "c1")
    assert deadline - asked == after


def test_sec13_an_interrupt_past_its_deadline_expires_like_a_native_request(conversation):
    ingest(conversation, interrupted("c1", expiresAt="2001-01-01T00:00:00Z"))
    assert approvals.expire_overdue(conversation) == 1
    entry = tools(conversation)["c1"]
    assert (entry.tool_status, entry.metadata["approval"]["decision"]) == ("denied", "expired")
    assert approvals.decision_for(conversation, "c1").decided_by == "system"


def test_sec13_the_approval_clock_is_told_an_interrupts_deadline_on_commit(
    conversation, django_capture_on_commit_callbacks
):
    """The clock (chatui.live.approval_clock) learns of an AG-UI interrupt's deadline when
    its ingest commits, as of a native request's, not at its next rescan."""
    told: list[tuple[object, list[datetime]]] = []

    def heard(sender, conversation_id, rows, deadlines=(), **kwargs):
        told.append((conversation_id, list(deadlines)))

    expires = timezone.now() + timedelta(seconds=30)
    approval_events_committed.connect(heard, weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            ingest(conversation, interrupted("c1", expiresAt=expires.isoformat()))
    finally:
        approval_events_committed.disconnect(heard)
    _, deadline = asked_at_and_deadline(conversation, "c1")
    assert told == [(conversation.pk, [deadline])]


def test_a_chunk_naming_the_role_gives_it_to_text_teed_in_a_later_request(conversation):
    """A TEXT_MESSAGE_CHUNK may name the message's role and carry no text; content for
    that message in a later request takes that role, as re-projecting the log gives
    (found by tests/web/test_fuzz_agui.py: live it became the assistant's)."""
    from chatui.ingest.service import reproject

    ingest(conversation, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "c1", "role": "user"})
    ingest(conversation, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "c1", "delta": "hi"})
    live = [(m.role, m.content) for m in Message.objects.filter(conversation=conversation)]
    reproject(conversation)
    again = [(m.role, m.content) for m in Message.objects.filter(conversation=conversation)]
    assert live == again == [("user", "hi")]
