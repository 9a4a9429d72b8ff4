"""The event input contract (SPEC §2): validation and normalisation, no database.

`parse_events` turns a decoded request body into `NormalisedEvent`s or raises
`EventError` naming the event's index and the field at fault. AgentSpine's
`tool_execution_start`/`tool_execution_end` [001] are mapped onto chatui's types
here, so nothing downstream knows about aliases.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.utils.dateparse import parse_datetime


class EventError(Exception):
    """Bad input: `status` is the HTTP status the API answers with."""

    def __init__(
        self, message: str, *, index: int | None = None, field: str | None = None, status: int = 400
    ):
        super().__init__(message)
        self.message = message
        self.index = index
        self.field = field
        self.status = status

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.message}
        if self.index is not None:
            body["index"] = self.index
        if self.field is not None:
            body["field"] = self.field
        return body


# --- field checkers: each returns an error phrase, or None when the value fits ---

Checker = Callable[[Any], str | None]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def string(value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def nonempty_string(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    return None if value.strip() else "must not be empty"


def obj(value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be an object"


def boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def number(value: Any) -> str | None:
    if not _is_number(value):
        return "must be a number"
    return None if value >= 0 else "must not be negative"


def integer(value: Any) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return "must be an integer"
    return None if value >= 0 else "must not be negative"


def fraction(value: Any) -> str | None:
    if not _is_number(value):
        return "must be a number"
    return None if 0 <= value <= 1 else "must be between 0 and 1"


def anything(value: Any) -> str | None:
    return None


def one_of(*choices: str) -> Checker:
    def check(value: Any) -> str | None:
        if value in choices:
            return None
        return "must be one of " + ", ".join(choices)

    return check


def tool_call_list(value: Any) -> str | None:
    return None if isinstance(value, list) else "must be an array"


TOOL_CALL_FIELDS: dict[str, tuple[Checker, bool]] = {
    "id": (string, False),
    "name": (nonempty_string, True),
    "args": (obj, False),
    "args_summary": (string, False),
}

STATUSES = ("thinking", "running", "info", "completed", "failed")

# type -> {field: (checker, required)}
SCHEMAS: dict[str, dict[str, tuple[Checker, bool]]] = {
    "user.message": {
        "message_id": (nonempty_string, False),
        "content": (nonempty_string, True),
    },
    "agent.message.delta": {
        "message_id": (nonempty_string, True),
        "delta": (string, True),
    },
    "agent.step.completed": {
        "message_id": (nonempty_string, False),
        "content": (string, True),
        "tool_calls": (tool_call_list, False),
        "duration_ms": (number, False),
        "tokens": (integer, False),
    },
    "agent.tool.started": {
        "tool_call_id": (nonempty_string, True),
        "tool_name": (nonempty_string, True),
        "args": (obj, False),
        "args_summary": (string, False),
        "parent_tool_call_id": (nonempty_string, False),
        "attempt": (integer, False),
        "max_attempts": (integer, False),
    },
    "agent.tool.progress": {
        "tool_call_id": (nonempty_string, True),
        "progress": (fraction, False),
        "output": (string, False),
        "message": (string, False),
    },
    "agent.tool.completed": {
        "tool_call_id": (nonempty_string, True),
        "tool_name": (nonempty_string, False),
        "result": (anything, False),
        "error": (string, False),
        "duration_ms": (number, False),
        "details": (obj, False),
    },
    "agent.continuation": {
        "should_continue": (boolean, True),
        "stop_reason": (string, True),
        "resolved_by": (string, True),
    },
    "agent.status": {
        "status": (one_of(*STATUSES), True),
        "message": (string, False),
        "error_message": (string, False),
    },
}

ALIASES = {
    "tool_execution_start": "agent.tool.started",
    "tool_execution_end": "agent.tool.completed",
}

EVENT_TYPES = tuple(SCHEMAS)
COMMON_FIELDS = ("type", "event_id", "timestamp", "run_id")


@dataclass(frozen=True)
class NormalisedEvent:
    type: str
    payload: dict[str, Any]
    body_hash: str
    event_id: str | None = None
    run_id: str = ""
    timestamp: datetime | None = None
    index: int = 0

    @property
    def tool_call_id(self) -> str:
        return self.payload.get("tool_call_id", "")


def json_depth(value: Any) -> int:
    """Nesting depth of decoded JSON, computed without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def unwrap_batch(body: Any) -> list[Any]:
    """One event, a JSON array of events, or {"events": [...]}."""
    if isinstance(body, list):
        events = body
    elif isinstance(body, dict) and "events" in body and "type" not in body:
        events = body["events"]
        if not isinstance(events, list):
            raise EventError("'events' must be an array", field="events")
    elif isinstance(body, dict):
        events = [body]
    else:
        raise EventError('expected an event object, an array of events, or {"events": [...]}')
    if not events:
        raise EventError("no events given")
    return events


def parse_events(body: Any, *, max_event_bytes: int | None = None) -> list[NormalisedEvent]:
    return [
        normalise_event(raw, index, max_event_bytes=max_event_bytes)
        for index, raw in enumerate(unwrap_batch(body))
    ]


def normalise_event(
    raw: Any, index: int = 0, *, max_event_bytes: int | None = None
) -> NormalisedEvent:
    if not isinstance(raw, dict):
        raise EventError("an event must be a JSON object", index=index)
    encoded = canonical_json(raw)
    if max_event_bytes is not None and len(encoded.encode()) > max_event_bytes:
        raise EventError(f"event is larger than {max_event_bytes} bytes", index=index, status=413)
    raw_type = raw.get("type")
    if raw_type is None:
        raise EventError("missing required field 'type'", index=index, field="type")
    if not isinstance(raw_type, str):
        raise EventError("field 'type' must be a string", index=index, field="type")
    event_type = ALIASES.get(raw_type, raw_type)
    if event_type not in SCHEMAS:
        valid = ", ".join(EVENT_TYPES + tuple(ALIASES))
        raise EventError(
            f"unknown event type '{raw_type[:80]}'; valid types are: {valid}",
            index=index,
            field="type",
        )
    fields = dict(raw)
    if raw_type == "tool_execution_end":
        fields = _from_tool_execution_end(fields)

    event_id = _optional_common(fields, "event_id", index)
    if event_id is not None and len(event_id) > 200:
        raise EventError(
            "field 'event_id' must be at most 200 characters", index=index, field="event_id"
        )
    run_id = _optional_common(fields, "run_id", index) or ""
    timestamp = _parse_timestamp(fields.get("timestamp"), index)

    payload: dict[str, Any] = {}
    for name, (check, required) in SCHEMAS[event_type].items():
        value = fields.get(name)
        if value is None:
            if required:
                raise EventError(f"missing required field '{name}'", index=index, field=name)
            continue
        problem = check(value)
        if problem:
            raise EventError(f"field '{name}' {problem}", index=index, field=name)
        payload[name] = value
    if event_type == "agent.step.completed" and "tool_calls" in payload:
        payload["tool_calls"] = _check_tool_calls(payload["tool_calls"], index)

    return NormalisedEvent(
        type=event_type,
        payload=payload,
        body_hash=hashlib.sha256(encoded.encode()).hexdigest(),
        event_id=event_id,
        run_id=run_id,
        timestamp=timestamp,
        index=index,
    )


def _optional_common(fields: dict[str, Any], name: str, index: int) -> str | None:
    value = fields.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise EventError(f"field '{name}' must be a non-empty string", index=index, field=name)
    return value


def _parse_timestamp(value: Any, index: int) -> datetime | None:
    if value is None:
        return None
    parsed = None
    if isinstance(value, str):
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
    if parsed is None:
        raise EventError(
            "field 'timestamp' must be an ISO 8601 date-time", index=index, field="timestamp"
        )
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def _check_tool_calls(calls: list[Any], index: int) -> list[dict[str, Any]]:
    checked = []
    for position, call in enumerate(calls):
        where = f"tool_calls[{position}]"
        if not isinstance(call, dict):
            raise EventError(f"field '{where}' must be an object", index=index, field=where)
        clean: dict[str, Any] = {}
        for name, (check, required) in TOOL_CALL_FIELDS.items():
            value = call.get(name)
            if value is None:
                if required:
                    raise EventError(
                        f"missing required field '{where}.{name}'",
                        index=index,
                        field=f"{where}.{name}",
                    )
                continue
            problem = check(value)
            if problem:
                raise EventError(
                    f"field '{where}.{name}' {problem}", index=index, field=f"{where}.{name}"
                )
            clean[name] = value
        checked.append(clean)
    return checked


def _from_tool_execution_end(fields: dict[str, Any]) -> dict[str, Any]:
    """[001] tool_execution_end → agent.tool.completed."""
    mapped = {
        key: value for key, value in fields.items() if key not in ("result_preview", "is_error")
    }
    if mapped.get("result") is None and fields.get("result_preview") is not None:
        mapped["result"] = fields["result_preview"]
    if fields.get("is_error") is True:
        mapped["error"] = result_text(mapped.get("result")) or "tool failed"
    return mapped


def result_text(result: Any) -> str:
    """The human-readable text of a tool result (SPEC §3 `content`)."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if is_tool_execution_result(result):
        return result["text"]
    return json.dumps(result, separators=(",", ":"), ensure_ascii=False)


def is_tool_execution_result(result: Any) -> bool:
    """[001] `{"text": str, "details"?: any}` and nothing else."""
    return (
        isinstance(result, dict)
        and isinstance(result.get("text"), str)
        and set(result) <= {"text", "details"}
    )
