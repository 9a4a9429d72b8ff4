"""Anthropic messages → chatui events.

The file is a JSON list of Messages-API messages (API responses, with `id`,
`type: message`, `usage`, fit too), or a request body `{"system", "messages"}`.
`content` is a string or a list of content blocks (`where` = `messages[i]`):

- `text` blocks: the message's text, joined by a blank line. In a user
  message they make a `user.message`; in an assistant message, the content of
  its `agent.step.completed`.
- `tool_use` {id, name, input} (and `server_tool_use`, `mcp_tool_use`): the
  step's `tool_calls`, `input` as `args`. A call answered later in the file is
  also `agent.tool.started` at this message's time; an unanswered one stays
  *queued*.
- `tool_result` {tool_use_id, content, is_error} (and `*_tool_result` blocks of
  server tools): an `agent.tool.completed`; `content` is a string or blocks
  whose text is joined by newlines; `is_error: true` makes the text the tool's
  `error` (status *error*) instead of its result. A user message's tool
  results are applied before its text.
- `thinking` / `redacted_thinking`: not shown in chatui; skipped, counted.
- `image` / `document`: `[image]` / `[document]` in the text; counted.
- An assistant message's `usage` gives the step's `tokens`
  (input_tokens + output_tokens).
- The `system` prompt is not part of the visible transcript; skipped, counted.
"""

from __future__ import annotations

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


def _is_call(kind: str) -> bool:
    return kind == "tool_use" or kind.endswith("_tool_use")


def _is_result(kind: str) -> bool:
    return kind == "tool_result" or kind.endswith("_tool_result")


def parse(raw: bytes) -> Draft:
    document = load_json(decode(raw))
    messages = message_list(document)
    builder = Builder(raw)
    if isinstance(document, dict) and document.get("system"):
        builder.skip("system prompt")
    calls = CallIds(builder)
    answered = _answered_ids(messages)
    for index, where, message, role, at in each_message(messages):
        blocks = _blocks(message.get("content"), where)
        if role == "user":
            _user(builder, calls, blocks, index, where, at)
        elif role == "assistant":
            _assistant(builder, calls, message, blocks, index, where, at, answered)
        elif role == "system":
            builder.skip("system message")
        else:
            raise TranscriptError(
                f"unknown role '{role[:40]}' (expected user or assistant)", where=where
            )
    return builder.finish()


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise TranscriptError("'content' must be a string or a list of blocks", where=where)
    for position, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise TranscriptError(
                f"content[{position}] must be an object with a 'type'", where=where
            )
    return content


def _answered_ids(messages: list[Any]) -> dict[str, int]:
    """tool_use_id -> index of the last message answering it."""
    answered: dict[str, int] = {}
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and _is_result(str(block.get("type"))):
                call_id = block.get("tool_use_id")
                if isinstance(call_id, str):
                    answered[call_id] = index
    return answered


def _text_of(
    block: dict[str, Any], where: str, builder: Builder, texts: list[str], *, in_result=False
) -> bool:
    """Add a text-like block's text to `texts`; False when the block is not text-like."""
    kind = block["type"]
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise TranscriptError("a text block's 'text' must be a string", where=where)
        texts.append(text)
        return True
    if kind in PLACEHOLDERS:
        texts.append(PLACEHOLDERS[kind])
        builder.skip(f"{kind} block" + (" in a tool result" if in_result else ""))
        return True
    return False


def _user(
    builder: Builder,
    calls: CallIds,
    blocks: list[dict[str, Any]],
    index: int,
    where: str,
    at: Any,
) -> None:
    texts: list[str] = []
    for position, block in enumerate(blocks):
        block_where = f"{where}.content[{position}]"
        if _is_result(block["type"]):
            builder.add(_result_event(builder, calls, block, block_where), where=where, at=at)
        elif not _text_of(block, block_where, builder, texts):
            builder.skip(f"{block['type']} block")
    text = join_text(texts)
    if text.strip():
        builder.add(
            {"type": "user.message", "message_id": builder.message_id(index), "content": text},
            where=where,
            at=at,
        )
    elif not any(_is_result(block["type"]) for block in blocks):
        builder.skip("empty user message")


def _result_event(
    builder: Builder, calls: CallIds, block: dict[str, Any], where: str
) -> dict[str, Any]:
    event = calls.completed(require(block, "tool_use_id", where))
    content = block.get("content")
    if isinstance(content, dict) and isinstance(content.get("error_code"), str):
        # Server tools report failures as {"type": "..._error", "error_code": "..."}.
        event["error"] = content["error_code"]
        return event
    result: Any
    if content is None or isinstance(content, str):
        result = content or ""
    elif isinstance(content, list):
        texts: list[str] = []
        others = []
        for position, part in enumerate(content):
            part_where = f"{where}.content[{position}]"
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise TranscriptError("a tool result block must have a 'type'", where=part_where)
            if not _text_of(part, part_where, builder, texts, in_result=True):
                others.append(part)
        # Text results read as text; structured ones (search results…) stay as data.
        result = content if others else join_text(texts, "\n")
    else:
        raise TranscriptError("'content' must be a string or a list of blocks", where=where)
    if block.get("is_error") is True:
        text = result if isinstance(result, str) else ""
        event["error"] = text or "tool failed"
    else:
        event["result"] = result
    return event


def _assistant(
    builder: Builder,
    calls: CallIds,
    message: dict[str, Any],
    blocks: list[dict[str, Any]],
    index: int,
    where: str,
    at: Any,
    answered: dict[str, int],
) -> None:
    texts: list[str] = []
    step = Step(calls, index)
    results: list[dict[str, Any]] = []
    for position, block in enumerate(blocks):
        block_where = f"{where}.content[{position}]"
        kind = block["type"]
        if _is_call(kind):
            name = require(block, "name", block_where)
            source_id = block.get("id")
            arguments = parse_arguments(block.get("input"))
            later = isinstance(source_id, str) and answered.get(source_id, -1) >= index
            step.call(source_id, name, arguments, block_where, started=bool(source_id) and later)
        elif _is_result(kind):  # a server tool's result, inside the assistant turn
            results.append(_result_event(builder, calls, block, block_where))
        elif kind in ("thinking", "redacted_thinking") or not _text_of(
            block, block_where, builder, texts
        ):
            builder.skip(f"{kind} block")  # not shown in chatui
    text = join_text(texts)
    usage = message.get("usage")
    tokens: dict[str, int] = {}
    if isinstance(usage, dict):
        counts = [usage.get(key) for key in ("input_tokens", "output_tokens")]
        numbers = [n for n in counts if isinstance(n, int) and not isinstance(n, bool)]
        if numbers:
            tokens["tokens"] = sum(numbers)
    step.after += results
    step.add_to(builder, text, where, at, **tokens)
