"""docs/events.md#ag-ui: the AG-UI translator as plain data — what one event means, read
without a database (chatui.ingest.dialects.agui)."""

from __future__ import annotations

import json

import pytest

from chatui.ingest.dialects import agui
from chatui.ingest.values import EventError
from tests.support.agui import capture, sse_text


def test_translation_of_the_pydantic_ai_retry_marker_is_a_failed_attempt_of_its_result():
    marker = {"pydantic_ai": {"outcome": "retried", "retry": {"attempt": 1, "max_retries": 2}}}
    ops = agui.translate(
        "REASONING_ENCRYPTED_VALUE",
        {"subtype": "message", "entityId": "m1", "encryptedValue": json.dumps(marker)},
    )
    assert ops == [
        ("agui.outcome", {"entity_id": "m1", "outcome": "retried", "attempt": 1, "max_attempts": 3})
    ]


def test_other_encrypted_values_are_opaque_reasoning():
    ops = agui.translate(
        "REASONING_ENCRYPTED_VALUE",
        {"subtype": "message", "entityId": "r1", "encryptedValue": '{"pydantic_ai": 5}'},
    )
    assert ops == [("agui.encrypted_reasoning", {"message_id": "r1"})]
    assert (
        agui.translate(
            "REASONING_ENCRYPTED_VALUE",
            {"subtype": "tool-call", "entityId": "c", "encryptedValue": "x"},
        )
        == []
    )


def test_run_error_fails_the_interrupted_calls_then_the_run():
    assert agui.translate("RUN_ERROR", {"message": "boom", "code": "E1"}) == [
        ("agui.run_error", {"error": "boom (E1)"}),
        ("agent.status", {"status": "failed", "error_message": "boom (E1)"}),
    ]


def test_run_finished_with_usage_and_a_tool_call_interrupt():
    ops = agui.translate(
        "RUN_FINISHED",
        {
            "runId": "r",
            "usage": [{"inputTokens": 3, "outputTokens": 4, "model": "m"}],
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "i", "reason": "tool_call", "toolCallId": "c"}],
            },
        },
    )
    assert [name for name, _ in ops] == ["agui.usage", "agui.interrupt", "agent.status"]
    assert ops[0][1] == {"input_tokens": 3, "output_tokens": 4, "tokens": 7, "model": "m"}
    assert ops[1][1]["tool_call_id"] == "c"


def test_tool_results_json_text_is_read_as_json_other_text_stays_text():
    assert agui.result_value('{"a": [1, 2]}') == {"a": [1, 2]}
    assert agui.result_value("[1, 2]") == [1, 2]
    assert agui.result_value("42") == "42"
    assert agui.result_value('{"a": NaN}') == '{"a": NaN}'
    assert agui.result_value([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == "ab"


def test_snapshot_messages_read_ag_ui_and_langchain_shapes_alike():
    plain = agui.snapshot_messages(
        [
            {"id": "u", "role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "type": "ai",
                "id": "a",
                "content": "",
                "tool_calls": [{"id": "c", "name": "f", "args": {"x": 1}}],
            },
            {"type": "tool", "tool_call_id": "c", "content": "bad", "status": "error"},
            {"id": "t", "role": "tool", "toolCallId": "d", "content": "why", "error": "error"},
            {"id": "t2", "role": "tool", "toolCallId": "e", "content": "", "error": "disk full"},
            {"id": "s", "role": "system", "content": "prompt"},
        ]
    )
    assert plain == [
        {"role": "user", "id": "u", "content": "hi"},
        {
            "role": "assistant",
            "id": "a",
            "content": "",
            "tool_calls": [{"id": "c", "name": "f", "args": {"x": 1}}],
        },
        {"role": "tool", "id": "", "tool_call_id": "c", "result": "bad", "error": "bad"},
        {"role": "tool", "id": "t", "tool_call_id": "d", "result": "why", "error": "why"},
        {"role": "tool", "id": "t2", "tool_call_id": "e", "result": "", "error": "disk full"},
    ]


def test_langgraph_raw_on_tool_error_names_its_call():
    ops = agui.translate(
        "RAW",
        {"event": {"event": "on_tool_error", "data": {"error": {}, "tool_call_id": "c1"}}},
    )
    assert ops == [("agui.tool_error", {"tool_call_id": "c1", "error": agui.TOOL_FAILED})]


def test_ids_are_derived_from_the_named_id_and_type_and_ignore_the_timestamp():
    first = agui.check(
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "timestamp": 1}, 0
    )
    again = agui.check(
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "timestamp": 2}, 0
    )
    assert first.event_id == again.event_id and first.event_id.startswith(
        "agui:TOOL_CALL_START:c1:"
    )
    assert first.body_hash == again.body_hash
    delta = agui.check({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "x"}, 0)
    assert delta.event_id is None


def test_sse_text_reads_as_the_same_events_as_jsonl():
    assert agui.parse_sse(sse_text("pydantic_ai")) == capture("pydantic_ai")
    assert agui.parse_sse(sse_text("langgraph").replace("\n", "\r\n")) == capture("langgraph")


def test_sse_comments_event_names_and_multi_line_data_are_sse_own():
    text = (
        ": keep-alive\n\nevent: message\nid: 7\n"
        'data: {"type": "RUN_STARTED",\ndata:  "threadId": "t", "runId": "r"}\n\n'
    )
    assert agui.parse_sse(text) == [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]


@pytest.mark.parametrize(
    ("text", "index"),
    [("data: {}\n\ndata: {nope\n\n", 1), ("data: NaN\n\n", 0), (": only a comment\n\n", None)],
)
def test_bad_sse_is_refused_naming_the_event(text, index):
    with pytest.raises(EventError) as refused:
        agui.parse_sse(text)
    assert refused.value.index == index and refused.value.status == 400
