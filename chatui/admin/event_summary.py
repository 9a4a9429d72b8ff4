"""A3 (docs/rendering.md#a3): one line that says what an event is, for the events list.
Plain text, secrets masked (T3) before it is cut, so a secret is never half shown; the
admin escapes it and marks invisible characters when it shows it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from chatui.read.exporters import masked_event
from chatui.read.presenters import call_line
from chatui.secrets import mask_text
from chatui.text import clip, collapse_newlines, format_tokens

#: Characters of a summary line: two lines of the list's summary column at 1280 px.
SUMMARY_CHARS = 160


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return value["text"]  # [001] a ToolExecutionResult
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _step(payload: dict[str, Any]) -> str:
    line = _text(payload.get("content")).strip() or "(no text)"
    calls = payload.get("tool_calls")
    if isinstance(calls, list) and calls:
        names = [str(call.get("name")) for call in calls if isinstance(call, dict)]
        line += " → calls " + ", ".join(names)
    if isinstance(payload.get("tokens"), int):
        line += " · " + format_tokens(payload["tokens"])
    return line


def _started(payload: dict[str, Any]) -> str:
    line = call_line(
        str(payload.get("tool_name", "")), payload.get("args"), payload.get("args_summary")
    )
    attempt = payload.get("attempt")
    return line + (f" · attempt {attempt}" if isinstance(attempt, int) else "")


def _progress(payload: dict[str, Any]) -> str:
    parts = []
    if isinstance(payload.get("progress"), int | float):
        parts.append(f"{payload['progress']:.0%}")
    for key in ("message", "output"):
        if payload.get(key):
            parts.append(_text(payload[key]))
    return " · ".join(parts)


def _completed(payload: dict[str, Any]) -> str:
    name = str(payload.get("tool_name") or "tool")
    if payload.get("error"):
        return f"{name} failed: {_text(payload['error'])}"
    if payload.get("skipped") is True:
        return f"{name} skipped"
    return f"{name} → {_text(payload.get('result'))}"


def _approval(payload: dict[str, Any]) -> str:
    line = f"{payload.get('decision', '')} by {payload.get('decided_by') or '—'}"
    return line + (f": {payload['note']}" if payload.get("note") else "")


def _status(payload: dict[str, Any]) -> str:
    text = payload.get("error_message") or payload.get("message") or ""
    return str(payload.get("status", "")) + (f": {_text(text)}" if text else "")


def _note(payload: dict[str, Any]) -> str:
    label = payload.get("label")
    return (f"[{label}] " if label else "") + _text(payload.get("text"))


def _reasoning(payload: dict[str, Any]) -> str:
    return "(encrypted)" if payload.get("encrypted") else _text(payload.get("delta"))


SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "user.message": lambda payload: _text(payload.get("content")),
    "agent.message.delta": lambda payload: _text(payload.get("delta")),
    "agent.reasoning.delta": _reasoning,
    "agent.step.completed": _step,
    "agent.tool.started": _started,
    "agent.tool.progress": _progress,
    "agent.tool.completed": _completed,
    "agent.tool.approval_requested": lambda payload: (
        f"{payload.get('tool_name', '')} asks a person: {_text(payload.get('reason'))}"
    ),
    "tool.approval": _approval,
    "agent.status": _status,
    "agent.continuation": lambda payload: (
        f"stopped: {payload.get('stop_reason', '')} (resolved by {payload.get('resolved_by', '')})"
    ),
    "audit.note": _note,
}


def event_summary(event_type: str, payload: Any) -> str:
    """ "read_file(path=a.py)", "running", "denied by alice: too risky"; for a dialect's
    event (AG-UI, OTLP, a session record) its fields as compact JSON. Masked, one line,
    at most SUMMARY_CHARS."""
    if not isinstance(payload, dict):
        line = _text(payload)
    else:
        masked = masked_event({"type": event_type, **payload})
        summarise = SUMMARIES.get(event_type)
        if summarise is not None:
            line = summarise(masked)
        else:
            rest = {key: value for key, value in masked.items() if key != "type"}
            line = _text(rest) if rest else ""
    return clip(collapse_newlines(mask_text(line)).strip(), SUMMARY_CHARS)
