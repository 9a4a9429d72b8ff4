"""Hypothesis strategies for events of every type, valid and hostile (the API's fuzzing,
the row-count properties)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Any

from hypothesis import strategies as st

from chatui.ingest.dialects.agentspine import ALIASES
from chatui.ingest.events import (
    EVENT_TYPES,
    MAX_APPROVAL_TIMEOUT_S,
    SCHEMAS,
    SERVER_ONLY_TYPES,
    STATUSES,
)
from chatui.ingest.values import MAX_ATTEMPTS, MAX_DURATION_MS, MAX_ID_CHARS, MAX_TOKENS, unstorable

SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]


SAFE_CHARS = list("aZ09 _-.:/@<>&\"'{}[]\\\n\t→é中😀\u200b\u202e\u2028\x85\x7f²١１")


HOSTILE_CHARS = [*SAFE_CHARS, "\x00", *SURROGATES]


TRICKY_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "\ud800",
        "x\udfff",
        "\\u0000",
        "@here",
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "{{ secret }}",
        "{% now %}",
        "→ 50%",
        "Error: boom",
        "out [exit code: 2]",
        "{",
        "[1,",
        "\r\n\r\n",
        "sk-abcdefghijklmnopqrstuvwxyz123456",
        "https://user:pass@example.com/x",
        # docs/rendering.md#rich-output's shapes, hostile: G17 ANSI, G18 diffs, G20 CSV/JSON
        "\x1b[1;31m<script>alert(1)</script>\x1b[0m\x1b]0;t\x07\r50%\r\x1b[38;2;9;9;9m",
        "\x1b[38;5;999;48;2;300;-1mx\x1b[\x1b]8;;",
        "--- a/x\n+++ b/x\n@@ -1,2 +1,99 @@\n-<img src=x onerror=alert(1)>\n+@here\n",
        "*** Begin Patch\n*** Update File: <b>.py\n@@\n-a\n+<script>\n*** End Patch",
        'a,b,"c\n1,<script>x</script>,3\n4,5,6\n7,8,9',
        '[{"a": 1, "b": "<i>x</i>"}, {"a": "sk-abcdefghijklmnopqrstuvwxyz123456"}]',
        '{"text": "line 1\nline 2", "token": "abc"}',
    ]
)


text = st.one_of(
    st.text(st.sampled_from(HOSTILE_CHARS), max_size=24),
    TRICKY_TEXT,
    st.integers(MAX_ID_CHARS - 2, MAX_ID_CHARS + 2).map(lambda n: "i" * n),
    st.integers(9, 300).map(lambda n: "long line\n" * n),  # past G4's 8 lines and 500 chars
)


giant_int = st.integers(300, 4400).map(lambda digits: 10**digits - 1)


number = st.one_of(
    st.integers(-3, MAX_ATTEMPTS + 3),
    st.integers(-(10**13), 10**13),
    st.sampled_from(
        [MAX_DURATION_MS, MAX_DURATION_MS + 1, MAX_TOKENS, MAX_TOKENS + 1, 2**63, -(2**63)]
    ),
    giant_int,
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.0000001, 1e308, 5e-324]),
)


scalar = st.none() | st.booleans() | number | text


KEYS = st.sampled_from(
    [
        *("kind", "path", "command", "exit_code", "url", "status_code", "text", "details"),
        *("token", "diff", "old", "new", "content", "input", "patch", "file_path"),
    ]
)


json_value = st.recursive(
    scalar,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(KEYS | text, children, max_size=4)
    ),
    max_leaves=10,
)


deep_value = st.integers(55, 70).map(lambda depth: nested(depth))


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for level in range(depth):
        value = {"d": value} if level % 2 else [value]
    return value


contract_text = st.text(st.sampled_from(SAFE_CHARS), max_size=40) | TRICKY_TEXT.filter(
    lambda value: not unstorable(value)
)


contract_id = st.one_of(
    st.sampled_from(["c1", "c2", "c3", "m1", "m2", "r1", "r2", "i" * MAX_ID_CHARS]),
    st.text(st.sampled_from(SAFE_CHARS), min_size=1, max_size=12).filter(str.strip),
)


contract_object = st.dictionaries(
    KEYS | contract_text,
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.sampled_from(["file", "command", "fetch", "subagent", "custom", "diff", "edit"])
        | st.sampled_from(["a.py", "Makefile", "x.rs", "<b>.js"])
        | contract_text,
        lambda children: (
            st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=4,
)


# docs/rendering.md#g21: MCP CallToolResults — every part type, binary data that is an
# image, SVG with script, HTML that says it is a PNG, not base64 at all, or a reference a
# runtime made up; parts that are not MCP's; structuredContent of any shape.
_BYTES = st.sampled_from(
    [
        b"\x89PNG\r\n\x1a\n" + bytes(20),
        b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>x</script></svg>',
        b"<html><script>alert(1)</script></html>",
        b"ID3\x03" + bytes(12),
        b"",
    ]
) | st.binary(max_size=24)
_BASE64 = _BYTES.map(lambda data: base64.b64encode(data).decode()) | st.sampled_from(
    ["not base64!", "QQ", "====", "A" * 5]
)
_MIME = (
    st.sampled_from(["image/png", "image/svg+xml", "audio/mpeg", "text/html", ""]) | contract_text
)
_REFERENCE = st.fixed_dictionaries(
    {},
    optional={
        "sha256": st.sampled_from(["a" * 64, "../x"]) | contract_text,
        "size": st.integers(-1, 10) | contract_text,
        "media_type": _MIME,
    },
)
mcp_part = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": contract_text}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["image", "audio"])},
        optional={"data": _BASE64 | st.integers(), "mimeType": _MIME, "attachment": _REFERENCE},
    ),
    st.fixed_dictionaries(
        {"type": st.just("resource_link"), "uri": contract_text | st.just("javascript:x()")},
        optional={"name": contract_text, "title": contract_text, "mimeType": _MIME},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("resource"),
            "resource": st.fixed_dictionaries(
                {"uri": st.sampled_from(["file:///a.py", "x", ""]) | contract_text},
                optional={"text": contract_text, "blob": _BASE64, "mimeType": _MIME},
            )
            | contract_text,
        }
    ),
    contract_object,
    contract_text,
)
mcp_result = st.fixed_dictionaries(
    {"content": st.lists(mcp_part, max_size=4)},
    optional={
        "structuredContent": contract_object | st.lists(contract_object, max_size=2),
        "isError": st.booleans() | st.none() | contract_text,
    },
)


contract_moment = st.datetimes(
    min_value=datetime(2, 1, 1),
    max_value=datetime(9998, 12, 31),
    timezones=st.sampled_from(
        [UTC, dt_timezone(timedelta(hours=5)), dt_timezone(-timedelta(hours=5))]
    ),
).map(datetime.isoformat)


tool_call = st.fixed_dictionaries(
    {"name": contract_id},
    optional={"id": contract_id, "args": contract_object, "args_summary": contract_text},
)


GOOD: dict[str, st.SearchStrategy] = {
    "message_id": contract_id,
    "tool_call_id": contract_id,
    "parent_tool_call_id": contract_id,
    "tool_name": contract_id,
    "run_id": contract_id,
    "event_id": contract_id,
    "content": contract_text.filter(str.strip),
    "delta": contract_text,
    "output": contract_text,
    "message": contract_text,
    "args_summary": contract_text,
    "error": contract_text,
    "stop_reason": contract_text,
    "resolved_by": contract_text,
    "error_message": contract_text,
    "result_preview": contract_text,
    "args": contract_object,
    "details": contract_object,
    "result": contract_object
    | contract_text
    | st.integers()
    | st.none()
    # G20: an array of flat objects (a table)
    | st.lists(
        st.dictionaries(KEYS, st.none() | st.integers() | contract_text, max_size=3), max_size=3
    )
    | mcp_result,  # G21
    "tool_calls": st.lists(tool_call, max_size=3),
    "duration_ms": st.integers(0, MAX_DURATION_MS) | st.floats(0, MAX_DURATION_MS),
    "tokens": st.integers(0, MAX_TOKENS),
    # S4 (docs/rendering.md#s4): a step's usage, every key optional
    "usage": st.fixed_dictionaries(
        {},
        optional={
            "input_tokens": st.integers(0, MAX_TOKENS),
            "output_tokens": st.integers(0, MAX_TOKENS),
            "model": contract_id,
        },
    ),
    "attempt": st.integers(0, MAX_ATTEMPTS),
    "max_attempts": st.integers(0, MAX_ATTEMPTS),
    "progress": st.floats(0, 1),
    "status": st.sampled_from(STATUSES),
    "should_continue": st.booleans(),
    "is_error": st.booleans(),
    "skipped": st.booleans(),
    "encrypted": st.booleans(),  # agent.reasoning.delta
    "timestamp": contract_moment,
    # AgentSpine's own fields (its aliases' raw shapes)
    "role": st.sampled_from(["assistant", "user"]),
    "source": st.sampled_from(["steer", "follow_up"]) | contract_text,
    "text_preview": contract_text,
    "partial": contract_text,
    "final_text": contract_text,
    "result_is_preview": st.booleans(),
    "phase": st.sampled_from(["start", "end"]),
    # docs/events.md#approvals
    "reason": contract_text,
    "timeout_s": st.integers(0, MAX_APPROVAL_TIMEOUT_S) | st.floats(0, MAX_APPROVAL_TIMEOUT_S),
}


EXTRA_FIELDS = ("event_id", "run_id", "timestamp")


ALIAS_FIELDS = {
    "tool_execution_end": ("result_preview", "is_error", "skipped"),
    "tool_execution_update": ("partial",),
    "agent_end": ("final_text",),
}


#: Fields of an alias's chatui type that the alias itself sets (not sent by AgentSpine).
ALIAS_SETS = {
    "turn_start": ("phase",),
    "turn_end": ("phase",),
    "agent_start": ("status",),
    "agent_end": ("status",),
}


#: What a runtime may post: `tool.approval` is chatui's own (docs/events.md#approvals), a near miss
#: here.
KINDS = st.sampled_from(
    tuple(kind for kind in EVENT_TYPES if kind not in SERVER_ONLY_TYPES) + tuple(ALIASES)
)


NEAR_MISS_KINDS = st.sampled_from(
    ["agent.tool.Started", "agent.tool", "tool_execution_update", "agent_start", "tool.approval"]
)


ROLL = st.integers(0, 99)


@st.composite
def event(draw, *, hostility: int) -> dict[str, Any]:
    """One event of a random (mostly real) type. Each field is present or not, and
    with `hostility` percent chance it holds anything at all rather than a value the
    contract accepts. With no hostility, required fields are always present."""
    hostile_kind = draw(ROLL) < hostility
    kind = draw(st.one_of(NEAR_MISS_KINDS, text, number) if hostile_kind else KINDS)
    schema = SCHEMAS.get(ALIASES.get(kind, kind), {}) if isinstance(kind, str) else {}
    raw: dict[str, Any] = {"type": kind}
    own_fields = [name for name in schema if name not in ALIAS_SETS.get(kind, ())]
    for name in [*own_fields, *EXTRA_FIELDS, *ALIAS_FIELDS.get(kind, ())]:
        required = name in schema and schema[name][1]
        present = 100 if required and not hostility else 95 if required else 40
        roll = draw(ROLL)  # one draw decides absent, hostile or good
        if roll >= present:
            continue
        hostile = roll < present * hostility // 100
        raw[name] = draw(json_value | deep_value if hostile else GOOD.get(name, json_value))
    if hostility and draw(ROLL) < 30:
        raw.update(draw(st.dictionaries(text, json_value, max_size=2)))
        if draw(ROLL) < 10:
            del raw["type"]
    return raw
