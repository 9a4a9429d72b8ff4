"""Legacy text transcripts [003] → chatui events (docs/rendering.md#t2).

The container is either

- a JSON list of messages `{"role": "user"|"assistant"|"system", "content": str,
  "timestamp"?: ISO 8601}`, or `{"messages": [...]}` (`where` = `messages[i]`); or
- plain text (anything not starting with `[` or `{`): one assistant message.

User text is imported as it is. Assistant text is cut into prose and tool
blocks; each stretch of prose becomes an assistant message
(`agent.step.completed`) and each block a tool entry, in the order of the text,
so prose before, between and after tool calls stays in place. Legacy text has
no structured calls, so the assistant messages carry no `tool_calls`: entries
are created by their `agent.tool.started`, which keeps each `<validation>`
entry right after the call it validated. The blocks:

- `<tool>call\\nresult</tool>`: a tool entry: `agent.tool.started` (name and
  `args_summary` parsed from `name(args)`) and `agent.tool.completed` with the
  result text.
- `<tool>call</tool>`: a pending call. Followed by a `<validation>` block (the
  pre-[003] format, which emitted a call and a "completed in N s" block), it
  is a finished call whose output was never recorded: completed without a
  result, with `duration_ms` when the validation text says "completed in N s"
  (or ms). Otherwise it stays *running*, as the legacy UI showed it (⏳).
- `<validation>…</validation>`: kept as its own assistant message whose text is
  the block as the legacy UI stored it (`<validation>text</validation>`, the
  text unescaped once). The presenter shows such a message as a validation
  block (`AssistantView.validation`), never as a tool entry, so it is never
  counted in a batch. Why an assistant message and not a status: ingest's
  status messages of type `info` are ephemeral (S3 drops them when the run
  ends, and every import ends its run), and the legacy transcript held the
  block in the assistant's text — so that is where it stays.
- current mindroom markers: a line `` 🔧 `name` [n] ⏳ `` is a running call,
  `` 🔧 `name` [n] `` a finished one (its result lived in the message's
  metadata, not in the text). Each is a tool entry; a pending marker followed
  later in the message by the finished marker of the same name and index is
  one entry. A name's escaped backticks (a backslash before the backtick) are undone.
- `🔧 **Tool Call:** `call`` + `✅ **`name` result:**` + result: a tool entry.
  A result pairs with the earliest unanswered call of the same name in the
  message; a call with no result stays running; a result with no call is an
  entry of its own. The result runs to the first blank line or the next block
  marker, or — when it opens with a ``` fence — to the closing fence (blank
  lines allowed inside, fences dropped).

The legacy backend HTML-escaped `<tool>` and `<validation>` contents and
neutralised mentions (`@` + U+200B); the importer undoes both, so chatui
stores the original text and escapes it once, at render time (T1). Markdown
pairs were not escaped and are taken as they are. Tool call ids are
`import:<digest>:t<n>`.

The text is cut into blocks in one pass (`blocks_of`), linear in its length:
a regex for whole blocks searched for `</tool>` again from every unclosed
`<tool>`, and took 12 s over 144 KB of them.
"""

from __future__ import annotations

import html
import itertools
import re
from collections import deque
from dataclasses import dataclass
from typing import Any

from .files import Builder, Draft, TranscriptError, decode, load_json, message_list, source_time

MAX_NAME = 200
TRACE_KEY = "io.mindroom.tool_trace"
VALIDATION = "validation"

TOOL_TAGS = ("<tool>", "</tool>")
VALIDATION_TAGS = ("<validation>", "</validation>")
#: Where a block may begin: a tag, or a line whose first non-blank is 🔧 or ✅.
CANDIDATE = re.compile(r"<tool>|<validation>|^[ \t]*[🔧✅]", re.MULTILINE)
#: "🔧 **Tool Call:** `", matched at a line start; the call runs to the line's last "`".
CALL_HEADER = re.compile(r"[ \t]*🔧[ \t]*\*\*Tool Call:\*\*[ \t]*`")
RESULT_HEADER = re.compile(r"[ \t]*✅[ \t]*\*\*`(?P<name>[^`\n]+)`[ \t]*result:\*\*[ \t]*")
MARKER = re.compile(r"^[ \t]*(?:🔧[ \t]*\*\*Tool Call:|✅[ \t]*\*\*`|<tool>|<validation>)")
#: mindroom's current marker line: 🔧 `name` [n], with " ⏳" while the tool runs.
MINDROOM_MARKER = re.compile(
    r"[ \t]*🔧 `(?P<name>(?:[^`\\\n]|\\.){1,400})` \[(?P<index>\d{1,9})\](?P<pending> ⏳)?[ \t]*$",
    re.MULTILINE,
)
FENCE = re.compile(r"^[ \t]*```[^\n]*$", re.MULTILINE)
NEWLINES = re.compile(r"[\r\n]+")
NAME_END = re.compile(r"[\s(]")
DURATION = re.compile(
    r"\b(?:completed|finished|done|took)\b[^0-9\n]{0,20}(?P<value>\d+(?:\.\d+)?)\s*"
    r"(?P<unit>ms|milliseconds?|s|secs?|seconds?)\b",
    re.IGNORECASE,
)


@dataclass
class Block:
    kind: str  # prose | tool | validation | md_call | md_result | marker
    text: str = ""  # prose text, validation text, or the call line
    result: str | None = None  # a tool's result; None while pending
    name: str = ""  # md_result: the tool name in its header
    validated_by: str | None = None  # a pending <tool> completed by its <validation>
    index: str = ""  # marker: mindroom's [n]


def parse(raw: bytes) -> Draft:
    text = decode(raw)
    builder = Builder(raw)
    stripped = text.strip()
    if not stripped:
        raise TranscriptError("the file is empty")
    if stripped[0] in "[{":
        for index, message in enumerate(message_list(load_json(text))):
            where = f"messages[{index}]"
            if not isinstance(message, dict):
                raise TranscriptError("a message must be a JSON object", where=where)
            role = message.get("role")
            content = message.get("content")
            if not isinstance(content, str):
                raise TranscriptError("'content' must be a string", where=where)
            at = source_time(message, where)
            if role == "user":
                if content.strip():
                    builder.add(
                        {
                            "type": "user.message",
                            "message_id": builder.message_id(index),
                            "content": content,
                        },
                        where=where,
                        at=at,
                    )
                else:
                    builder.skip("empty user message")
            elif role == "assistant":
                _assistant(builder, content, index, where, at, _trace_of(message))
            elif role == "system":
                builder.skip("system message")
            else:
                raise TranscriptError("'role' must be one of user, assistant, system", where=where)
    else:
        _assistant(builder, text, 0, "text", None)
    return builder.finish()


def _trace_of(message: dict[str, Any]) -> list[Any]:
    """mindroom kept each marker's args and result in the message's tool trace
    (`io.mindroom.tool_trace`, at the top level or under `metadata`)."""
    metadata = message.get("metadata")
    holder = metadata if isinstance(metadata, dict) and TRACE_KEY in metadata else message
    trace = holder.get(TRACE_KEY)
    events = trace.get("events") if isinstance(trace, dict) else None
    return events if isinstance(events, list) else []


def unescape(text: str) -> str:
    """Undo the legacy backend's escape(_neutralize_mentions(…))."""
    return html.unescape(text).replace("@\u200b", "@")


class _Closing:
    """Where the first closing tag at or after a position is, for positions that
    only grow: each stretch of the text is searched once, however many opening
    tags lack their closing one."""

    def __init__(self, text: str, tag: str):
        self.text, self.tag = text, tag
        self.found = -2  # not searched yet; -1: none left

    def at_or_after(self, position: int) -> int:
        if self.found != -1 and self.found < position:
            self.found = self.text.find(self.tag, position)
        return self.found


def blocks_of(text: str) -> list[Block]:
    """Assistant text as prose and tool blocks, in order, in one pass.

    A block begins at the first place one can (a tag, or a 🔧/✅ line) and is the
    first kind that fits there; a tag with no closing tag after it is prose."""
    blocks: list[Block] = []
    closings = {tags[0]: _Closing(text, tags[1]) for tags in (TOOL_TAGS, VALIDATION_TAGS)}
    position = search = 0
    while (candidate := CANDIDATE.search(text, search)) is not None:
        start = candidate.start()
        found = _block_at(text, start, closings)
        if found is None:
            search = start + 1
            continue
        block, end = found
        if start > position:
            blocks.append(Block("prose", text[position:start]))
        blocks.append(block)
        position = search = end
    if position < len(text):
        blocks.append(Block("prose", text[position:]))
    return blocks


def _block_at(text: str, start: int, closings: dict[str, _Closing]) -> tuple[Block, int] | None:
    """The block beginning at `start` and where it ends, or None."""
    for opening, closing in closings.items():
        if text.startswith(opening, start):
            inner_start = start + len(opening)
            end = closing.at_or_after(inner_start)
            if end == -1:
                return None
            inner = unescape(text[inner_start:end])
            if opening == TOOL_TAGS[0]:
                call, result = split_call(inner)
                block = Block("tool", call, result)
            else:
                block = Block(VALIDATION, inner.strip())
            return block, end + len(closing.tag)
    if (header := CALL_HEADER.match(text, start)) is not None:
        line_end = _line_end(text, header.end())
        rest = text[header.end() : line_end].rstrip(" \t")
        return (Block("md_call", rest[:-1]), line_end) if rest.endswith("`") else None
    if (header := RESULT_HEADER.match(text, start)) is not None:
        result, end = _markdown_result(text, header.end())
        return Block("md_result", name=header.group("name").strip()[:MAX_NAME], result=result), end
    if (marker := MINDROOM_MARKER.match(text, start)) is not None:
        name = unescape(re.sub(r"\\(.)", r"\1", marker.group("name")))[:MAX_NAME]
        block = Block("marker", name=name, index=marker.group("index"))
        block.result = None if marker.group("pending") else ""
        return block, marker.end()
    return None


def _markdown_result(text: str, start: int) -> tuple[str, int]:
    """The result after a "✅ **`name` result:**" header: (result, end offset)."""
    line_end = _line_end(text, start)
    lines = [text[start:line_end]] if text[start:line_end].strip() else []
    end = line_end
    cursor = line_end + 1
    if not lines and cursor < len(text):
        opening = FENCE.match(text, cursor)
        if opening is not None:
            closing = FENCE.search(text, opening.end() + 1)
            if closing is None:
                return text[opening.end() + 1 :].rstrip("\n"), len(text)
            body = text[opening.end() + 1 : closing.start()]
            return body.removesuffix("\n"), closing.end()
    while cursor < len(text):
        line_end = _line_end(text, cursor)
        line = text[cursor:line_end]
        if not line.strip() or MARKER.match(line):
            break
        lines.append(line)
        end = line_end
        cursor = line_end + 1
    return "\n".join(lines), end


def split_call(inner: str) -> tuple[str, str | None]:
    """A `<tool>` block's call and result (None: pending). The call is the first
    line — or, when an argument held newlines (its parentheses or quotes still
    open at the line's end), the lines up to where they close, each newline
    collapsed to one space (T2). One pass over the call's characters."""
    depth, quoted, escaped = 0, False, False
    for position, char in enumerate(inner):
        if char == "\n" and depth <= 0 and not quoted:
            return collapse_newlines(inner[:position]), inner[position + 1 :]
        if escaped:
            escaped = False
        elif quoted:
            escaped, quoted = char == "\\", char != '"'
        elif char == '"':
            quoted = True
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
    first, newline, rest = inner.partition("\n")  # never closed: the first line is the call
    if "\n" in inner and depth <= 0 and not quoted:
        return collapse_newlines(inner), None
    return first, rest if newline else None


def collapse_newlines(text: str) -> str:
    """Each run of line breaks inside an argument → one space; nothing else changes."""
    return NEWLINES.sub(" ", text)


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end == -1 else end


def parse_call(call: str) -> dict[str, Any]:
    """`name(args)` → tool_name and args_summary (the legacy display of the args).

    The name runs to the first blank or "("; what follows the "(" up to a final ")"
    (which may be missing: legacy lines were cut) is the args. A line that is not
    of this shape is all name. (String operations: the regex this replaces
    backtracked quadratically over blanks.)"""
    text = call.strip()
    found = NAME_END.search(text)
    name_end = found.start() if found else len(text)
    name, rest = text[:name_end], text[name_end:].lstrip()
    args = None
    if name and rest.startswith("("):
        args = rest[1:].removesuffix(")")
    elif not name or rest:
        name = text  # not `name(args)`: the whole line names the call
    parsed: dict[str, Any] = {"tool_name": name[:MAX_NAME] or "tool"}
    if args and args.strip():
        parsed["args_summary"] = args.strip()
    return parsed


def duration_ms(validation: str) -> int | None:
    match = DURATION.search(validation)
    if match is None:
        return None
    value = float(match.group("value"))
    return round(value if match.group("unit").lower().startswith("m") else value * 1000)


def _groups(blocks: list[Block]) -> list[tuple[str, list[Block]]]:
    """(prose, the tool blocks after it) — whitespace between blocks is not prose."""
    groups: list[tuple[str, list[Block]]] = []
    prose, tools = "", []
    for block in blocks:
        if block.kind != "prose":
            tools.append(block)
        elif block.text.strip():
            if tools:
                groups.append((prose, tools))
                prose, tools = "", []
            prose += block.text
    groups.append((prose, tools))
    for _, tools in groups:
        for current, following in itertools.pairwise(tools):
            if current.kind == "tool" and current.result is None and following.kind == VALIDATION:
                current.validated_by = following.text
    return groups


def _assistant(
    builder: Builder, text: str, index: int, where: str, at: Any, trace: list[Any] | None = None
) -> None:
    part = 0
    unanswered: dict[str, deque[str]] = {}  # md call name -> tool call ids awaiting a result
    markers: dict[tuple[str, str], str] = {}  # mindroom (name, [n]) -> its pending call id

    def step(content: str) -> None:
        nonlocal part
        event = {
            "type": "agent.step.completed",
            "message_id": builder.message_id(index, part),
            "content": content,
        }
        builder.add(event, where=where, at=at)
        part += 1

    for prose, tools in _groups(blocks_of(text)):
        if prose.strip():
            step(prose.strip())
        for block in tools:
            if block.kind == VALIDATION:  # its own block, never a tool entry (T2)
                step(f"<validation>{block.text}</validation>")
                continue
            for event in _tool_events(builder, block, unanswered, markers, trace or []):
                builder.add(event, where=where, at=at)
    if part == 0 and not text.strip():
        builder.skip("empty assistant message")


def _tool_events(
    builder: Builder,
    block: Block,
    unanswered: dict[str, deque[str]],
    markers: dict[tuple[str, str], str],
    trace: list[Any],
) -> list[dict[str, Any]]:
    """The events of one tool block, its entry created in block order."""
    if block.kind == "md_result" and unanswered.get(block.name):
        call_id = unanswered[block.name].popleft()
        return [_completed(call_id, block.name, result=block.result)]
    if block.kind == "marker":
        return _marker_events(builder, block, markers, trace)
    call_id = builder.new_tool_call_id()
    if block.kind not in ("tool", "md_call"):  # a Markdown result with no call before it
        started = {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": block.name}
        return [started, _completed(call_id, block.name, result=block.result)]
    parsed = parse_call(block.text)
    name = parsed["tool_name"]
    events: list[dict[str, Any]] = [
        {"type": "agent.tool.started", "tool_call_id": call_id, **parsed}
    ]
    if block.kind == "md_call":
        unanswered.setdefault(name, deque()).append(call_id)
    elif block.result is not None:
        events.append(_completed(call_id, name, result=block.result))
    elif block.validated_by is not None:
        events.append(_completed(call_id, name, took=duration_ms(block.validated_by)))
    return events


def _marker_events(
    builder: Builder, block: Block, markers: dict[tuple[str, str], str], trace: list[Any]
) -> list[dict[str, Any]]:
    """A mindroom marker: started (⏳), or completed — the pending marker's entry
    when one of the same name and index came before."""
    key = (block.name, block.index)
    events: list[dict[str, Any]] = []
    call_id = markers.pop(key, None) if block.result is not None else None
    if call_id is None:
        call_id = builder.new_tool_call_id()
        started = {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": block.name}
        entry = _trace_entry(trace, block.index)
        if isinstance(entry.get("args_preview"), str) and entry["args_preview"].strip():
            started["args_summary"] = collapse_newlines(entry["args_preview"]).strip()
        events.append(started)
        if block.result is None:
            markers[key] = call_id
            return events
    result = _trace_entry(trace, block.index).get("result_preview")
    events.append(
        _completed(call_id, block.name, result=result if isinstance(result, str) else None)
    )
    return events


def _trace_entry(trace: list[Any], index: str) -> dict[str, Any]:
    """mindroom's v2 tool trace keeps marker [n] at events[n-1]."""
    position = int(index) - 1
    if 0 <= position < len(trace) and isinstance(trace[position], dict):
        return trace[position]
    return {}


def _completed(
    call_id: str, name: str, *, result: str | None = None, took: int | None = None
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "agent.tool.completed",
        "tool_call_id": call_id,
        "tool_name": name,
    }
    if result is not None:
        event["result"] = result
    if took is not None:
        event["duration_ms"] = took
    return event
