"""Hypothesis strategies for AG-UI events, as a runtime might tee them: mostly shaped as
the protocol says, with hostile values, wrong types and stray fields now and then."""

from __future__ import annotations

import json
import sys
from typing import Any

from hypothesis import strategies as st

from tests.support.fuzz_events import contract_text, json_value, text

#: A few ids, so that starts, args, ends, results and snapshots meet the same call.
IDS = st.sampled_from(["c1", "c2", "m1", "m2", "r1", "<b>c3</b>", "i" * 200, "i" * 201])
NAMES = st.sampled_from(["read_file", "run_cmd", "<img src=x onerror=alert(1)>", " ", "x" * 201])
ROLES = st.sampled_from(["assistant", "user", "system", "developer", "tool", "reasoning"])
STAMPS = st.one_of(
    st.integers(0, 4 * 10**12),
    st.sampled_from([-(10**14), 10**15, 2**53, -1, 0]),
    st.floats(allow_nan=False),
    st.booleans(),
    contract_text,
)
MARKER = st.sampled_from(["retried", "failed", "denied", "interrupted", "success", 7]).map(
    lambda outcome: json.dumps({"pydantic_ai": {"outcome": outcome, "retry": {"attempt": 1}}})
)
ARGS_TEXT = st.one_of(contract_text, st.sampled_from(['{"path": "', 'README"}', "{}", "[1]"]))


def _as_json_text(value: Any) -> str:
    """A tool message's content as a runtime writes JSON; an integer past Python's digit
    limit (giant_int) cannot be written by json.dumps, so its digits stand in as text."""
    try:
        return json.dumps(value, default=str)
    except ValueError:
        return "9" * 4400


CONTENT = st.one_of(
    contract_text,
    json_value.map(_as_json_text),
    st.just([{"type": "text", "text": "part"}]),
)


def _message() -> st.SearchStrategy[dict[str, Any]]:
    call = st.fixed_dictionaries(
        {
            "id": IDS,
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": NAMES, "arguments": ARGS_TEXT}),
        }
    )
    return st.one_of(
        st.fixed_dictionaries({"id": IDS, "role": st.just("user"), "content": contract_text}),
        st.fixed_dictionaries(
            {"id": IDS, "role": st.just("assistant")},
            optional={"content": contract_text, "toolCalls": st.lists(call, max_size=2)},
        ),
        st.fixed_dictionaries(
            {"id": IDS, "role": st.just("tool"), "toolCallId": IDS, "content": CONTENT},
            optional={"error": contract_text},
        ),
        st.fixed_dictionaries(
            {"type": st.sampled_from(["human", "ai", "tool"]), "content": contract_text},
            optional={"tool_call_id": IDS, "status": st.just("error"), "id": IDS},
        ),
    )


#: type -> (required fields, optional fields)
SHAPES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "RUN_STARTED": ({"threadId": IDS, "runId": IDS}, {}),
    "RUN_FINISHED": (
        {"threadId": IDS, "runId": IDS},
        {
            "usage": st.lists(
                st.fixed_dictionaries(
                    {}, optional={"inputTokens": st.integers(0, 10**6), "model": contract_text}
                ),
                max_size=2,
            ),
            "outcome": st.one_of(
                st.just({"type": "success"}),
                st.just({"type": "cancelled"}),
                st.fixed_dictionaries(
                    {
                        "type": st.just("interrupt"),
                        "interrupts": st.lists(
                            st.fixed_dictionaries(
                                {"id": IDS, "reason": st.sampled_from(["tool_call", "input"])},
                                optional={"toolCallId": IDS, "message": contract_text},
                            ),
                            min_size=1,
                            max_size=2,
                        ),
                    }
                ),
            ),
        },
    ),
    "RUN_ERROR": ({"message": contract_text}, {"code": contract_text}),
    "STEP_STARTED": ({"stepName": contract_text}, {}),
    "STEP_FINISHED": ({"stepName": contract_text}, {}),
    "TEXT_MESSAGE_START": ({"messageId": IDS}, {"role": ROLES}),
    "TEXT_MESSAGE_CONTENT": ({"messageId": IDS, "delta": contract_text}, {}),
    "TEXT_MESSAGE_END": ({"messageId": IDS}, {}),
    "TEXT_MESSAGE_CHUNK": ({}, {"messageId": IDS, "role": ROLES, "delta": contract_text}),
    "TOOL_CALL_START": ({"toolCallId": IDS, "toolCallName": NAMES}, {"parentMessageId": IDS}),
    "TOOL_CALL_ARGS": ({"toolCallId": IDS, "delta": ARGS_TEXT}, {}),
    "TOOL_CALL_END": ({"toolCallId": IDS}, {}),
    "TOOL_CALL_CHUNK": ({}, {"toolCallId": IDS, "toolCallName": NAMES, "delta": ARGS_TEXT}),
    "TOOL_CALL_RESULT": ({"toolCallId": IDS, "messageId": IDS, "content": CONTENT}, {}),
    "REASONING_START": ({"messageId": IDS}, {}),
    "REASONING_MESSAGE_CONTENT": ({"messageId": IDS, "delta": contract_text}, {}),
    "REASONING_MESSAGE_CHUNK": ({}, {"messageId": IDS, "delta": contract_text}),
    "REASONING_END": ({"messageId": IDS}, {}),
    "REASONING_ENCRYPTED_VALUE": (
        {
            "subtype": st.sampled_from(["message", "tool-call"]),
            "entityId": IDS,
            "encryptedValue": st.one_of(contract_text, MARKER),
        },
        {},
    ),
    "THINKING_TEXT_MESSAGE_CONTENT": ({"delta": contract_text}, {}),
    "THINKING_END": ({}, {}),
    "MESSAGES_SNAPSHOT": ({"messages": st.lists(_message(), max_size=4)}, {}),
    "STATE_SNAPSHOT": (
        {
            "snapshot": st.one_of(
                json_value,
                st.fixed_dictionaries({"messages": st.lists(_message(), max_size=3)}),
            )
        },
        {},
    ),
    "STATE_DELTA": (
        {
            "delta": st.lists(
                st.fixed_dictionaries(
                    {"op": st.just("add"), "path": st.just("/a"), "value": json_value}
                ),
                max_size=2,
            )
        },
        {},
    ),
    "RAW": (
        {
            "event": st.one_of(
                json_value,
                st.fixed_dictionaries(
                    {
                        "event": st.just("on_tool_error"),
                        "data": st.fixed_dictionaries({"tool_call_id": IDS, "error": json_value}),
                    }
                ),
            )
        },
        {"source": contract_text},
    ),
    "CUSTOM": ({"name": contract_text, "value": json_value}, {}),
    "SUBAGENT_STARTED": ({"subagentRunId": IDS, "name": contract_text}, {"parentToolCallId": IDS}),
}  # fmt: skip

ROLL = st.integers(0, 99)


@st.composite
def agui_event(draw, *, hostility: int) -> dict[str, Any]:
    """One AG-UI event of a random type: its fields as the protocol shapes them, or with
    `hostility` percent chance each, anything at all (or missing)."""
    kind = draw(st.sampled_from(sorted(SHAPES)))
    required, optional = SHAPES[kind]
    raw: dict[str, Any] = {"type": kind}
    for name, values in required.items():
        roll = draw(ROLL)
        if roll < hostility // 3:
            continue  # missing
        raw[name] = draw(json_value | text if roll < hostility else values)
    for name, values in optional.items():
        if draw(st.booleans()):
            raw[name] = draw(json_value if draw(ROLL) < hostility else values)
    if draw(ROLL) < 40:
        raw["timestamp"] = draw(STAMPS if draw(ROLL) < hostility else st.integers(0, 4 * 10**12))
    if hostility and draw(ROLL) < 15:
        raw.update(draw(st.dictionaries(text, json_value, max_size=2)))
    return raw


def as_json(value: Any) -> str:
    """JSON as a hostile client writes it: ints past Python's 4300-digit guard, NaN and
    Infinity as bare words."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return json.dumps(value)
    finally:
        sys.set_int_max_str_digits(limit)


def as_sse(events: list[Any]) -> str:
    """The SSE text an AG-UI server streams for `events` (AG-UI's own encoder's framing)."""
    return "".join(f"data: {as_json(event)}\n\n" for event in events)
