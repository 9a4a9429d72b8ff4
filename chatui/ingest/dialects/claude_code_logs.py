"""Claude Code's telemetry events (OTLP logs, `CLAUDE_CODE_ENABLE_TELEMETRY=1`), by
`session.id` (docs/events.md#claude-code-logs):

- `claude_code.user_prompt` is a user turn: its `prompt` (sent only with
  `OTEL_LOG_USER_PROMPTS=1`; else "(prompt of N characters)").
- `claude_code.tool_result` is a tool entry: `tool_name`, `success`, `duration_ms`,
  `error`, its arguments from `tool_input` / `tool_parameters` (JSON text).
- `claude_code.api_request` is a model call: its tokens (`input_tokens`,
  `output_tokens`), `model`, `duration_ms`, on an assistant step with no text.

A record's event name is its body (`claude_code.tool_result`), or its `event.name`
attribute (`tool_result`). Records carry no ids: a record's id digests its whole
content (so a re-sent export is a duplicate), and a run is its `prompt.id` where sent.
"""

from __future__ import annotations

from typing import Any

from .spans import Reading, ToolCall, json_or_text, text, token_sum, tool_name

PREFIX = "claude_code."
EVENTS = ("user_prompt", "tool_result", "api_request", "api_error", "tool_decision")


def event_name(record: dict[str, Any]) -> str:
    """`user_prompt`, `tool_result`, … or "" for a record that is not Claude Code's."""
    attrs = record.get("attributes") or {}
    for candidate in (record.get("eventName"), record.get("body"), attrs.get("event.name")):
        if isinstance(candidate, str):
            name = candidate.removeprefix(PREFIX)
            if name in EVENTS:
                return name
    return ""


def session(record: dict[str, Any]) -> str:
    value = (record.get("attributes") or {}).get("session.id")
    return str(value) if value not in (None, "") else ""


def run_of(record: dict[str, Any]) -> str:
    prompt = (record.get("attributes") or {}).get("prompt.id")
    return f"claude-code-{text(prompt)[:120]}" if prompt not in (None, "") else ""


def read(record: dict[str, Any], record_id: str) -> Reading:
    name = event_name(record)
    attrs = record.get("attributes") or {}
    if name == "user_prompt":
        prompt = attrs.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            prompt = f"(prompt of {attrs.get('prompt_length', '?')} characters, not logged)"
        return Reading(users=[(f"cc-user-{record_id}", prompt)])
    if name == "tool_result":
        call = ToolCall(
            call_id=f"cc-{record_id}",
            name=tool_name(attrs.get("tool_name")),
            args=json_or_text(attrs.get("tool_input") or attrs.get("tool_parameters")),
            duration_ms=_int(attrs.get("duration_ms")),
        )
        if str(attrs.get("success", "true")).lower() == "false":
            call.error = text(attrs.get("error")) or "failed"
        elif attrs.get("tool_result_size_bytes") is not None:
            call.result = f"({attrs['tool_result_size_bytes']} bytes of output, not logged)"
            call.has_result = True
        return Reading(tool=call)
    if name == "api_request":
        step: dict[str, Any] = {"content": ""}
        tokens = token_sum(_int(attrs.get("input_tokens")), _int(attrs.get("output_tokens")))
        if tokens is not None:
            step["tokens"] = tokens
        took = _int(attrs.get("duration_ms"))
        if took is not None:
            step["duration_ms"] = took
        return Reading(step=step)
    return Reading()


def _int(value: Any) -> int | None:
    try:
        number = int(float(value))
    except (TypeError, ValueError, OverflowError):
        return None
    return number if 0 <= number <= 10**12 else None
