"""SPEC §2: every event type validates and normalises; bad input names index and field."""

from __future__ import annotations

import pytest

from chatui.events import EVENT_TYPES, EventError, json_depth, parse_events, result_text

VALID = {
    "user.message": {"content": "hi"},
    "agent.message.delta": {"message_id": "m1", "delta": "he"},
    "agent.step.completed": {"content": "", "tool_calls": [{"id": "c1", "name": "ls"}]},
    "agent.tool.started": {"tool_call_id": "c1", "tool_name": "ls"},
    "agent.tool.progress": {"tool_call_id": "c1", "progress": 0.5},
    "agent.tool.completed": {"tool_call_id": "c1", "result": "ok"},
    "agent.continuation": {"should_continue": False, "stop_reason": "x", "resolved_by": "y"},
    "agent.status": {"status": "thinking"},
}


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_every_event_type_validates(event_type):
    (event,) = parse_events({"type": event_type, **VALID[event_type]})
    assert event.type == event_type
    assert event.payload == VALID[event_type]


def test_agentspine_tool_execution_start_alias():
    (event,) = parse_events(
        {"type": "tool_execution_start", "tool_name": "ls", "tool_call_id": "c1", "args": {"a": 1}}
    )
    assert event.type == "agent.tool.started"
    assert event.payload == {"tool_call_id": "c1", "tool_name": "ls", "args": {"a": 1}}


def test_agentspine_tool_execution_end_uses_result_preview_when_result_missing():
    (event,) = parse_events(
        {
            "type": "tool_execution_end",
            "tool_call_id": "c1",
            "tool_name": "ls",
            "result_preview": "a b c",
            "details": {"kind": "file"},
            "is_error": False,
        }
    )
    assert event.type == "agent.tool.completed"
    assert event.payload == {
        "tool_call_id": "c1",
        "tool_name": "ls",
        "result": "a b c",
        "details": {"kind": "file"},
    }


def test_agentspine_is_error_makes_result_text_the_error():
    (event,) = parse_events(
        {
            "type": "tool_execution_end",
            "tool_call_id": "c1",
            "tool_name": "ls",
            "result": {"text": "permission denied", "details": {}},
            "is_error": True,
        }
    )
    assert event.payload["error"] == "permission denied"


def test_tool_execution_result_text_is_display_text():
    assert result_text({"text": "shown", "details": {"kind": "file"}}) == "shown"
    assert result_text({"text": "shown", "other": 1}) == '{"text":"shown","other":1}'
    assert result_text({"b": [1, 2]}) == '{"b":[1,2]}'


def test_unknown_type_lists_valid_types():
    with pytest.raises(EventError) as caught:
        parse_events([VALID_EVENT(), {"type": "agent.dance"}])
    problem = caught.value
    assert (problem.index, problem.field, problem.status) == (1, "type", 400)
    for valid in EVENT_TYPES:
        assert valid in problem.message


def VALID_EVENT() -> dict:
    return {"type": "user.message", "content": "hello"}


@pytest.mark.parametrize(
    ("event", "field", "phrase"),
    [
        ({"type": "user.message"}, "content", "missing required field 'content'"),
        ({"type": "user.message", "content": "   "}, "content", "must not be empty"),
        ({"type": "user.message", "content": 5}, "content", "must be a string"),
        ({"type": "agent.tool.started", "tool_call_id": "c"}, "tool_name", "missing"),
        (
            {"type": "agent.tool.started", "tool_call_id": "c", "tool_name": "x", "args": []},
            "args",
            "must be an object",
        ),
        (
            {"type": "agent.tool.progress", "tool_call_id": "c", "progress": 2},
            "progress",
            "between 0 and 1",
        ),
        ({"type": "agent.status", "status": "sleeping"}, "status", "must be one of"),
        (
            {
                "type": "agent.continuation",
                "should_continue": "no",
                "stop_reason": "a",
                "resolved_by": "b",
            },
            "should_continue",
            "true or false",
        ),
        (
            {"type": "agent.step.completed", "content": "", "tool_calls": [{"id": "c"}]},
            "tool_calls[0].name",
            "missing",
        ),
        ({"type": "agent.step.completed", "content": "", "tokens": 1.5}, "tokens", "integer"),
        (
            {"type": "user.message", "content": "x", "timestamp": "yesterday"},
            "timestamp",
            "ISO 8601",
        ),
        (
            {"type": "user.message", "content": "x", "event_id": "e" * 201},
            "event_id",
            "at most 200",
        ),
        ({"content": "x"}, "type", "missing required field 'type'"),
    ],
)
def test_missing_or_mistyped_field_names_index_and_field(event, field, phrase):
    with pytest.raises(EventError) as caught:
        parse_events([VALID_EVENT(), VALID_EVENT(), event])
    assert caught.value.index == 2
    assert caught.value.field == field
    assert phrase in caught.value.message


def test_batch_shapes_are_equivalent():
    one = parse_events(VALID_EVENT())
    listed = parse_events([VALID_EVENT()])
    wrapped = parse_events({"events": [VALID_EVENT()]})
    assert one == listed == wrapped


def test_per_event_size_limit_is_413():
    with pytest.raises(EventError) as caught:
        parse_events(
            [VALID_EVENT(), {"type": "user.message", "content": "x" * 2000}], max_event_bytes=1000
        )
    assert (caught.value.status, caught.value.index) == (413, 1)


def test_json_depth_counts_containers_without_recursion():
    deep: list = []
    cursor = deep
    for _ in range(5000):
        cursor.append([])
        cursor = cursor[0]
    assert json_depth(deep) == 5001
    assert json_depth({"a": [1, {"b": 2}]}) == 3
    assert json_depth("flat") == 0
