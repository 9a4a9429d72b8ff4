"""OpenAI chat messages → chatui events.

The file is a JSON list of chat-completions messages, or a request body
`{"messages": [...], ...}`. Per message (`where` = `messages[i]`):

- `user`: a `user.message`; `content` is a string or a list of content parts,
  whose `text` parts are joined by a blank line and whose other parts (images,
  audio, files) stand as `[image]`, `[audio]`, `[file]` (counted as skipped).
- `assistant`: an `agent.step.completed` with the text (or the `refusal`) and
  the `tool_calls` ({id, type: function, function: {name, arguments}}; the
  `arguments` JSON string becomes `args`, or stays verbatim as `args_summary`
  when it is not a JSON object). A call that gets a result later in the file
  is also `agent.tool.started` at this message's time; a call never answered
  stays *queued*, as the transcript leaves it. The deprecated `function_call`
  is read as one call.
- `tool` (and the deprecated `function`): an `agent.tool.completed` for its
  `tool_call_id` with the content as `result`. OpenAI's format has no error
  flag on tool messages, so a failed tool's message is imported as its output:
  the importer does not guess failures from the text.
- `system` / `developer`: not part of the visible transcript; skipped, counted.

Tool call ids are kept. When a file reuses an id (some OpenAI-compatible
servers number calls per turn), its second use becomes `<id>~2`, and so on.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from .chat_messages import CallIds, Step, each_message
from .files import (
    PLACEHOLDERS,
    Builder,
    Draft,
    TranscriptError,
    decode,
    join_text,
    load_json,
    message_list,
    parse_arguments,
    require,
)


def content_text(content: Any, where: str, builder: Builder, separator: str = "\n\n") -> str:
    """A message's `content`: a string, null, or a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise TranscriptError("'content' must be a string, null or a list of parts", where=where)
    texts = []
    for position, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise TranscriptError(
                f"content[{position}] must be an object with a 'type'", where=where
            )
        kind = part["type"]
        if kind in ("text", "input_text", "output_text"):
            texts.append(require(part, "text", f"{where}.content[{position}]", str))
        elif kind == "refusal":
            texts.append(require(part, "refusal", f"{where}.content[{position}]", str))
        else:
            texts.append(PLACEHOLDERS.get(kind, f"[{kind}]"))
            builder.skip(f"{kind} content part")
    return join_text(texts, separator)


def parse(raw: bytes) -> Draft:
    messages = message_list(load_json(decode(raw)))
    builder = Builder(raw)
    calls = CallIds(builder)
    answered = _answered_ids(messages)
    open_functions: dict[str, deque[str]] = {}  # name -> chatui ids of unanswered function_calls
    for index, where, message, role, at in each_message(messages):
        if role in ("system", "developer"):
            builder.skip(f"{role} message")
        elif role == "user":
            text = content_text(message.get("content"), where, builder)
            if not text.strip():
                builder.skip("empty user message")
                continue
            builder.add(
                {"type": "user.message", "message_id": builder.message_id(index), "content": text},
                where=where,
                at=at,
            )
        elif role == "assistant":
            _assistant(builder, calls, message, index, where, at, answered, open_functions)
        elif role == "tool":
            event = calls.completed(require(message, "tool_call_id", where))
            event["result"] = content_text(message.get("content"), where, builder, "\n")
            builder.add(event, where=where, at=at)
        elif role == "function":
            name = require(message, "name", where)
            waiting = open_functions.get(name)
            call_id = waiting.popleft() if waiting else builder.new_tool_call_id()
            builder.add(
                {
                    "type": "agent.tool.completed",
                    "tool_call_id": call_id,
                    "tool_name": name,
                    "result": content_text(message.get("content"), where, builder, "\n"),
                },
                where=where,
                at=at,
            )
        else:
            raise TranscriptError(
                f"unknown role '{role[:40]}' (expected system, developer, user, assistant, tool)",
                where=where,
            )
    return builder.finish()


def _answered_ids(messages: list[Any]) -> dict[str, int]:
    """tool_call_id -> index of the last tool message answering it."""
    answered: dict[str, int] = {}
    for index, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str):
                answered[call_id] = index
    return answered


def _assistant(
    builder: Builder,
    calls: CallIds,
    message: dict[str, Any],
    index: int,
    where: str,
    at: Any,
    answered: dict[str, int],
    open_functions: dict[str, deque[str]],
) -> None:
    text = content_text(message.get("content"), where, builder)
    if not text and isinstance(message.get("refusal"), str):
        text = message["refusal"]
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise TranscriptError("'tool_calls' must be a list", where=where)
    step = Step(calls, index)
    for position, raw_call in enumerate(raw_calls):
        call_where = f"{where}.tool_calls[{position}]"
        if not isinstance(raw_call, dict):
            raise TranscriptError("a tool call must be an object", where=call_where)
        kind = raw_call.get("type", "function")
        if kind == "function":
            function = raw_call.get("function")
            if not isinstance(function, dict):
                raise TranscriptError("'function' must be an object", where=call_where)
            name = require(function, "name", f"{call_where}.function")
            arguments = parse_arguments(function.get("arguments"))
        elif kind == "custom":
            custom = raw_call.get("custom")
            if not isinstance(custom, dict):
                raise TranscriptError("'custom' must be an object", where=call_where)
            name = require(custom, "name", f"{call_where}.custom")
            arguments = parse_arguments(custom.get("input"))
        else:
            builder.skip(f"{kind} tool call")
            continue
        source_id = raw_call.get("id")
        later = isinstance(source_id, str) and answered.get(source_id, -1) > index
        step.call(source_id, name, arguments, call_where, started=bool(source_id) and later)
    function_call = message.get("function_call")
    if isinstance(function_call, dict):
        name = require(function_call, "name", f"{where}.function_call")
        arguments = parse_arguments(function_call.get("arguments"))
        call_id = step.call(None, name, arguments, where, started=True)
        open_functions.setdefault(name, deque()).append(call_id)
    step.add_to(builder, text, where, at)
