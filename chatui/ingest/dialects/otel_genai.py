"""OpenTelemetry's GenAI conventions, current and older, as frameworks emit them
(docs/events.md#otel-genai): Pydantic AI's instrumentation (every data-format version it
offers), and what the conventions said before.

- A tool call is a span with `gen_ai.operation.name` = `execute_tool`, or the older
  `running tool` span: name `gen_ai.tool.name`, id `gen_ai.tool.call.id` (else the span
  id), arguments `gen_ai.tool.call.arguments` (older: `tool_arguments`), result
  `gen_ai.tool.call.result` (older: `tool_response`).
- A model call carries its messages in `gen_ai.input.messages` / `gen_ai.output.messages`
  (JSON, parts `text` / `tool_call` / `tool_call_response`); older ones in span events
  (`gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.choice`), in Pydantic AI's
  `events` attribute (the same events as JSON), or flattened in `gen_ai.prompt.N.*` /
  `gen_ai.completion.N.*`. Tokens: `gen_ai.usage.input_tokens` / `output_tokens` (older:
  `prompt_tokens` / `completion_tokens`).
"""

from __future__ import annotations

import json
from typing import Any

from .spans import (
    History,
    Reading,
    ToolCall,
    as_list,
    duration_ms,
    failure,
    flattened,
    json_or_text,
    short_id,
    text,
    token_sum,
    tool_name,
)

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
OLD_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def read(span: dict[str, Any]) -> Reading:
    attrs = span.get("attributes") or {}
    operation = attrs.get("gen_ai.operation.name")
    if operation == "execute_tool" or (span.get("name") == "running tool" and _tool_name(attrs)):
        return Reading(tool=_tool(span, attrs))
    if operation in MODEL_OPERATIONS or _has_messages(span, attrs):
        return _model_call(span, attrs)
    return Reading()


def _tool_name(attrs: dict[str, Any]) -> Any:
    return attrs.get("gen_ai.tool.name") or attrs.get("tool.name")


def _tool(span: dict[str, Any], attrs: dict[str, Any]) -> ToolCall:
    call = ToolCall(
        call_id=short_id(attrs.get("gen_ai.tool.call.id")) or span["spanId"],
        name=tool_name(_tool_name(attrs) or span.get("name")),
        args=json_or_text(_first(attrs, "gen_ai.tool.call.arguments", "tool_arguments")),
        duration_ms=duration_ms(span),
    )
    result = _first(attrs, "gen_ai.tool.call.result", "tool_response")
    if result is not None:
        call.result, call.has_result = json_or_text(result), True
    call.error = failure(span)
    return call


def _first(attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if attrs.get(key) is not None:
            return attrs[key]
    return None


def _has_messages(span: dict[str, Any], attrs: dict[str, Any]) -> bool:
    if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
        return True
    if "events" in attrs and isinstance(attrs["events"], str):
        return True
    if any(key.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for key in attrs):
        return True
    names = {event.get("name") for event in span.get("events") or ()}
    return bool(names & {*OLD_MESSAGE_EVENTS, "gen_ai.choice"})


def _model_call(span: dict[str, Any], attrs: dict[str, Any]) -> Reading:
    inputs, outputs = _messages(span, attrs)
    history = History()
    for message in inputs:
        role, content, calls = _parts(message)
        history.add(role, content, calls)
    answer, tool_calls = "", []
    for message in outputs:
        role, content, calls = _parts(message)
        if role in ("assistant", "model", ""):
            answer = answer + ("\n\n" if answer and content else "") + content
            tool_calls.extend(calls)
    step: dict[str, Any] = {"content": answer}
    if tool_calls:
        step["tool_calls"] = tool_calls
    tokens = token_sum(
        _first(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        _first(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    )
    if tokens is not None:
        step["tokens"] = tokens
    took = duration_ms(span)
    if took is not None:
        step["duration_ms"] = took
    return Reading(users=history.users, step=step if outputs or tokens is not None else None)


def _messages(span: dict[str, Any], attrs: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """(input messages, output messages) in whichever form the span holds them."""
    if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
        return _json_list(attrs.get("gen_ai.input.messages")), _json_list(
            attrs.get("gen_ai.output.messages")
        )
    events: list[dict[str, Any]] = []
    if isinstance(attrs.get("events"), str):  # Pydantic AI's event_mode="attributes"
        events = [
            {"name": item.get("event.name"), "attributes": item}
            for item in _json_list(attrs["events"])
            if isinstance(item, dict)
        ]
    events += list(span.get("events") or ())
    inputs, outputs = [], []
    for event in events:
        name, data = event.get("name"), event.get("attributes") or {}
        if name in OLD_MESSAGE_EVENTS:
            inputs.append({"role": data.get("role") or OLD_MESSAGE_EVENTS[name], **data})
        elif name == "gen_ai.choice":
            message = data.get("message")
            message = json_or_text(message) if isinstance(message, str) else message
            outputs.append(message if isinstance(message, dict) else data)
    if not inputs and not outputs:
        inputs = flattened(attrs, "gen_ai.prompt")
        outputs = flattened(attrs, "gen_ai.completion")
    return inputs, outputs


def _json_list(value: Any) -> list[Any]:
    decoded = json_or_text(value)
    return decoded if isinstance(decoded, list) else []


def _parts(message: Any) -> tuple[str, str, list[dict[str, Any]]]:
    """(role, its text, its tool calls) of a message in any of the forms above."""
    if not isinstance(message, dict):
        return "", "", []
    role = str(message.get("role") or "")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    parts = message.get("parts")
    if isinstance(parts, list):  # the current form
        for part in parts:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                texts.append(text(part.get("content")))
            elif part.get("type") == "tool_call":
                calls.append(_call(part.get("id"), part.get("name"), part.get("arguments")))
    else:  # the older forms: content text, tool_calls [{id, function: {name, arguments}}]
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(
                text(item.get("text") or item.get("content"))
                for item in content
                if isinstance(item, dict) and item.get("type", "text") == "text"
            )
        raw_calls = message.get("tool_calls")
        if isinstance(raw_calls, str):
            raw_calls = json_or_text(raw_calls)
        for raw in as_list(raw_calls):
            if isinstance(raw, dict):
                function = raw.get("function") if isinstance(raw.get("function"), dict) else raw
                calls.append(_call(raw.get("id"), function.get("name"), function.get("arguments")))
    return role, "\n\n".join(t for t in texts if t), calls


def _call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": tool_name(name)}
    if short_id(call_id):
        call["id"] = short_id(call_id)
    args = json_or_text(arguments)
    if isinstance(args, dict):
        call["args"] = args
    elif args not in (None, ""):
        call["args_summary"] = text(args) if not isinstance(args, str) else args
    return call


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
