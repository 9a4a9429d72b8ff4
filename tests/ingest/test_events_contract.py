"""docs/events.md#event-types: every event type validates and normalises; bad input names index and
field."""

from __future__ import annotations

import pytest

from chatui.ingest.events import EVENT_TYPES, parse_events
from chatui.ingest.values import EventError, json_depth, parse_seq, result_text

VALID = {
    "user.message": {"content": "hi"},
    "agent.message.delta": {"message_id": "m1", "delta": "he"},
    "agent.step.completed": {"content": "", "tool_calls": [{"id": "c1", "name": "ls"}]},
    "agent.tool.started": {"tool_call_id": "c1", "tool_name": "ls"},
    "agent.tool.progress": {"tool_call_id": "c1", "progress": 0.5},
    "agent.tool.completed": {"tool_call_id": "c1", "result": "ok"},
    "agent.continuation": {"should_continue": False, "stop_reason": "x", "resolved_by": "y"},
    "agent.status": {"status": "thinking"},
    "agent.tool.approval_requested": {"tool_call_id": "c1", "tool_name": "rm", "timeout_s": 60},
    "tool.approval": {"tool_call_id": "c1", "decision": "denied", "decided_by": "alice"},
    "agent.reasoning.delta": {"message_id": "m1", "delta": "hmm", "encrypted": False},
    "audit.note": {
        "target": {"tool_call_id": "c1"},
        "text": "wrong host",
        "label": "wrong_result",
        "refers_to": 3,
        "author": "audra",
    },
    "audit.erasure": {
        "erased": [{"seq": 2, "content_hash": "ab" * 32}],
        "reason": "personal data",
        "by": "eve",
    },
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
    assert event.payload == {
        "tool_call_id": "c1",
        "tool_name": "ls",
        "args": {"a": 1},
        "dialect": "agentspine",
    }


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
        "result_is_preview": True,
        "dialect": "agentspine",
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


# -- SEC6: numbers, ids and text the columns and the renderers can hold -------------

STEP = {"type": "agent.step.completed", "content": ""}
STARTED = {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "ls"}
COMPLETED = {"type": "agent.tool.completed", "tool_call_id": "c1"}
PROGRESS = {"type": "agent.tool.progress", "tool_call_id": "c1"}


@pytest.mark.parametrize(
    ("event", "field", "message"),
    [
        (
            {**STEP, "duration_ms": int("9" * 400)},
            "duration_ms",
            "field 'duration_ms' must be at most 315360000000 (10 years in ms)",
        ),
        (
            {**COMPLETED, "duration_ms": 315_360_000_000.5},
            "duration_ms",
            "field 'duration_ms' must be at most 315360000000 (10 years in ms)",
        ),
        (
            {**STEP, "tokens": int("9" * 4300)},
            "tokens",
            "field 'tokens' must be at most 1000000000000",
        ),
        ({**STARTED, "attempt": 10**6}, "attempt", "field 'attempt' must be at most 1000"),
        (
            {**STARTED, "max_attempts": 1001},
            "max_attempts",
            "field 'max_attempts' must be at most 1000",
        ),
        ({**COMPLETED, "duration_ms": -1}, "duration_ms", "field 'duration_ms' must not be"),
        # In-process callers can hand over floats JSON cannot carry.
        ({**STEP, "duration_ms": float("inf")}, "duration_ms", "must be a finite number"),
        ({**PROGRESS, "progress": float("nan")}, "progress", "must be a finite number"),
        ({**STEP, "tokens": 10**5000}, "tokens", "must have at most 4300 digits"),
    ],
)
def test_sec6_numbers_beyond_what_is_stored_and_shown_are_refused(event, field, message):
    with pytest.raises(EventError) as caught:
        parse_events([VALID_EVENT(), event])
    assert (caught.value.index, caught.value.field, caught.value.status) == (1, field, 400)
    assert message in caught.value.message


def test_sec6_numbers_at_the_limits_are_accepted():
    events = parse_events(
        [
            {**STEP, "duration_ms": 315_360_000_000, "tokens": 10**12},
            {**STARTED, "attempt": 1000, "max_attempts": 1000},
            {**PROGRESS, "progress": 1},
            {**COMPLETED, "duration_ms": 0.5},
        ]
    )
    assert [event.type for event in events] == [
        "agent.step.completed",
        "agent.tool.started",
        "agent.tool.progress",
        "agent.tool.completed",
    ]


LONG_ID = "x" * 201


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({**STARTED, "tool_call_id": LONG_ID}, "tool_call_id"),
        ({**PROGRESS, "tool_call_id": LONG_ID}, "tool_call_id"),
        ({**COMPLETED, "tool_call_id": LONG_ID}, "tool_call_id"),
        ({**STARTED, "tool_name": LONG_ID}, "tool_name"),
        ({**COMPLETED, "tool_name": LONG_ID}, "tool_name"),
        ({**STARTED, "parent_tool_call_id": LONG_ID}, "parent_tool_call_id"),
        ({**VALID_EVENT(), "run_id": LONG_ID}, "run_id"),
        ({**VALID_EVENT(), "event_id": LONG_ID}, "event_id"),
        ({**VALID_EVENT(), "message_id": LONG_ID}, "message_id"),
        ({"type": "agent.message.delta", "message_id": LONG_ID, "delta": "x"}, "message_id"),
        ({**STEP, "message_id": LONG_ID}, "message_id"),
        ({**STEP, "tool_calls": [{"id": LONG_ID, "name": "ls"}]}, "tool_calls[0].id"),
        ({**STEP, "tool_calls": [{"id": "c", "name": LONG_ID}]}, "tool_calls[0].name"),
        (
            {"type": "tool_execution_start", "tool_call_id": LONG_ID, "tool_name": "ls"},
            "tool_call_id",
        ),
    ],
)
def test_sec6_ids_longer_than_their_columns_are_refused(event, field):
    with pytest.raises(EventError) as caught:
        parse_events(event)
    assert caught.value.field == field
    assert caught.value.message == f"field '{field}' must be at most 200 characters"


def test_ids_of_200_characters_fit():
    longest = "x" * 200
    (event,) = parse_events(
        {
            **STEP,
            "message_id": longest,
            "run_id": longest,
            "event_id": longest,
            "tool_calls": [{"id": longest, "name": longest}],
        }
    )
    assert event.payload["tool_calls"] == [{"id": longest, "name": longest}]


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"type": "user.message", "content": "\ud800"}, "content"),
        ({**STARTED, "args": {"\udfff": 1}}, "args.\\udfff"),
        ({**STARTED, "args": {"a": {"b": ["fine", "x\ud83d"]}}}, "args.a.b[1]"),
        ({**COMPLETED, "result": [1, {"text": "\udc00"}]}, "result[1].text"),
        ({**STEP, "tool_calls": [{"name": "ls", "args": {"q": "\ud800"}}]}, "tool_calls[0].args.q"),
        ({"type": "user.\ud800", "content": "x"}, "type"),
        ({**VALID_EVENT(), "run_id": "r\ud800"}, "run_id"),
        ({**VALID_EVENT(), "unknown_extra": "\ud800"}, "unknown_extra"),
    ],
)
def test_sec6_lone_surrogate_anywhere_is_refused_naming_the_field(event, field):
    with pytest.raises(EventError) as caught:
        parse_events([VALID_EVENT(), event])
    assert (caught.value.index, caught.value.field, caught.value.status) == (1, field, 400)
    assert "lone surrogate" in caught.value.message


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"type": "user.message", "content": "a\x00b"}, "content"),
        ({**STARTED, "args": {"k\x00": 1}}, "args.k\\u0000"),
        ({**COMPLETED, "error": "boom\x00"}, "error"),
        ({**COMPLETED, "details": {"path": ["a", "\x00"]}}, "details.path[1]"),
    ],
)
def test_sec6_nul_in_any_text_is_refused_naming_the_field(event, field):
    """PostgreSQL cannot store NUL in text or jsonb: refused, never silently dropped."""
    with pytest.raises(EventError) as caught:
        parse_events(event)
    assert caught.value.field == field
    assert "NUL character" in caught.value.message


def test_the_text_backslash_u0000_is_not_a_nul():
    (event,) = parse_events({"type": "user.message", "content": "literally \\u0000"})
    assert event.payload["content"] == "literally \\u0000"


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_sec6_timestamp_that_overflows_utc_is_refused(moment):
    with pytest.raises(EventError) as caught:
        parse_events({**VALID_EVENT(), "timestamp": moment})
    assert caught.value.field == "timestamp"
    assert "out of range" in caught.value.message


def test_timestamps_are_stored_in_utc():
    (event,) = parse_events({**VALID_EVENT(), "timestamp": "2025-01-01T05:00:00+05:00"})
    assert event.timestamp.isoformat() == "2025-01-01T00:00:00+00:00"


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("42", 42), ("9223372036854775807", 2**63 - 1), ("007", 7)],
)
def test_parse_seq_reads_ascii_digits(text, value):
    assert parse_seq(text) == value


@pytest.mark.parametrize(
    "text", ["", "²", "١٢", "１", "-1", "+1", " 1", "1 ", "1.0", "9223372036854775808", "9" * 40]
)
def test_parse_seq_refuses_unicode_digits_signs_and_overflow(text):
    assert parse_seq(text) is None
