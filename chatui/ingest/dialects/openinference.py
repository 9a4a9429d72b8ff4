"""OpenInference's conventions (Arize Phoenix's instrumentors: LangChain/LangGraph,
OpenAI Agents SDK, CrewAI, LlamaIndex, …), recognised by `openinference.span.kind`
(docs/events.md#openinference).

- `TOOL` spans are tool calls: name `tool.name`, id `tool_call.id` (else the span id),
  arguments `input.value`, result `output.value`.
- `LLM` spans are model calls: their messages flattened in
  `llm.input_messages.N.message.*` / `llm.output_messages.N.message.*` (`role`,
  `content` or `contents.M.message_content.text`, `tool_calls.K.tool_call.*`), tokens
  in `llm.token_count.prompt` / `completion`.
"""

from __future__ import annotations

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

KIND = "openinference.span.kind"


def speaks(attrs: dict[str, Any]) -> bool:
    return KIND in attrs


def read(span: dict[str, Any]) -> Reading:
    attrs = span.get("attributes") or {}
    kind = str(attrs.get(KIND, "")).upper()
    if kind == "TOOL":
        return Reading(tool=_tool(span, attrs))
    if kind == "LLM":
        return _model_call(span, attrs)
    return Reading()


def _tool(span: dict[str, Any], attrs: dict[str, Any]) -> ToolCall:
    output = json_or_text(attrs.get("output.value"))
    message = _tool_message(output)
    call_id = short_id(attrs.get("tool_call.id")) or short_id(message.get("tool_call_id"))
    call = ToolCall(
        call_id=call_id or span["spanId"],
        id_known=bool(call_id),
        name=tool_name(attrs.get("tool.name") or span.get("name")),
        args=json_or_text(attrs.get("input.value")),
        duration_ms=duration_ms(span),
    )
    if output is not None:
        call.result = json_or_text(message["content"]) if "content" in message else output
        call.has_result = True
    call.error = failure(span)
    return call


def _tool_message(value: Any) -> dict[str, Any]:
    """LangChain's instrumentor writes a ToolMessage as a tool's output
    (`{"type": "tool", "data": {"content", "tool_call_id", …}}`): its content is the
    result, and it names the call."""
    if isinstance(value, dict) and value.get("type") == "tool":
        data = value.get("data") if isinstance(value.get("data"), dict) else value
        return data
    return {}


def _model_call(span: dict[str, Any], attrs: dict[str, Any]) -> Reading:
    history = History()
    for message in flattened(attrs, "llm.input_messages"):
        role, content, calls = _parts(message.get("message") or {})
        history.add(role, content, calls)
    answer, tool_calls = "", []
    outputs = flattened(attrs, "llm.output_messages")
    for message in outputs:
        role, content, calls = _parts(message.get("message") or {})
        if role in ("assistant", "ai", ""):
            answer = answer + ("\n\n" if answer and content else "") + content
            tool_calls.extend(calls)
    step: dict[str, Any] = {"content": answer}
    if tool_calls:
        step["tool_calls"] = tool_calls
    tokens = token_sum(attrs.get("llm.token_count.prompt"), attrs.get("llm.token_count.completion"))
    if tokens is not None:
        step["tokens"] = tokens
    took = duration_ms(span)
    if took is not None:
        step["duration_ms"] = took
    return Reading(users=history.users, step=step if outputs or tokens is not None else None)


def _parts(message: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]]]:
    role = str(message.get("role") or "")
    if role == "human":
        role = "user"
    content = message.get("content")
    texts = [text(content)] if isinstance(content, str) else []
    for item in as_list(message.get("contents")):
        part = item.get("message_content") if isinstance(item, dict) else None
        if isinstance(part, dict) and part.get("type", "text") == "text" and part.get("text"):
            texts.append(text(part["text"]))
    calls = []
    for item in as_list(message.get("tool_calls")):
        call = item.get("tool_call") if isinstance(item, dict) else None
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        entry: dict[str, Any] = {"name": tool_name(function.get("name"))}
        if short_id(call.get("id")):
            entry["id"] = short_id(call.get("id"))
        args = json_or_text(function.get("arguments"))
        if isinstance(args, dict):
            entry["args"] = args
        elif args not in (None, ""):
            entry["args_summary"] = text(args)
        calls.append(entry)
    return role, "\n\n".join(t for t in texts if t), calls
