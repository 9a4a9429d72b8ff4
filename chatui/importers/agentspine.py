"""AgentSpine event JSONL [001] → chatui events.

One AgentSpine event per line, as its `on_event` hook emits them (see
AgentSpine's docs/EVENTS.md): `agent_start`, then per round `turn_start`,
`message_start`/`message_update`/`message_end`, `tool_execution_start`/
`tool_execution_update`/`tool_execution_end`, `turn_end`; then `agent_end`.
`where` = `line N`. The whole file is one chatui run.

- `message_end` (user): a `user.message`. AgentSpine only emits the user
  messages it injects (steer, follow-up), and only as a `text_preview` (cut at
  200 characters): a full `content` or `text` key wins when a logger added one.
- `message_end` (assistant): an `agent.step.completed` whose content is the
  streamed `message_update` deltas joined, else `content`/`text`, else the
  `text_preview`; its `tool_calls` are the `tool_execution_start`s that follow
  in the same round; its `duration_ms` is message_start → message_end when
  both lines carry a timestamp.
- `tool_execution_start` / `tool_execution_end`: passed on as those events
  (chatui's aliases, SPEC §2), with `args` — a JSON string in AgentSpine —
  decoded into an object (kept as `args_summary` when it is not one).
  `result_preview` stands in for a missing `result`; `is_error: true` makes the
  text the tool's error; `details` ride along.
- `tool_execution_update`: `agent.tool.progress` with `partial` as the
  progress `message`.
- `turn_end` with status `cancelled` or `loop_detected`, and an `agent_end`
  whose `final_text` is "(agent stopped: …)": an `agent.continuation`
  (should_continue false, resolved_by "AgentSpine").
- `agent_end`'s `final_text` is the last answer in full: it replaces the last
  assistant message when that one only had a preview, or is added as the
  final assistant message when the run ended on tool calls.
- `agent_start`, `turn_start`, other `turn_end`s: structure only, nothing to show.
- Any other event type is skipped and counted by type.
"""

from __future__ import annotations

import re
from typing import Any

from .base import (
    Builder,
    Draft,
    TranscriptError,
    decode,
    jsonl_lines,
    parse_arguments,
    require,
    source_time,
)

MESSAGE_BOUNDARY = {
    "message_start",
    "message_end",
    "turn_start",
    "turn_end",
    "agent_start",
    "agent_end",
}
STOPPED = re.compile(r"^\(agent stopped: (?P<reason>.+)\)$", re.DOTALL)
STOP_STATUSES = ("cancelled", "loop_detected")
START_KEYS = ("args_summary", "parent_tool_call_id", "attempt", "max_attempts")
END_KEYS = ("tool_name", "result", "result_preview", "details", "is_error", "error", "duration_ms")


def parse(raw: bytes) -> Draft:
    lines = jsonl_lines(decode(raw))
    builder = Builder(raw)
    state = _Run()
    for position, (number, event) in enumerate(lines):
        where = f"line {number}"
        kind = event.get("type")
        if not isinstance(kind, str) or not kind:
            raise TranscriptError("'type' must be a non-empty string", where=where)
        at = source_time(event, where)
        handler = HANDLERS.get(kind)
        if handler is None:
            builder.skip(f"{kind[:60]} event")
            continue
        handler(builder, state, lines, position, event, where, at)
    return builder.finish()


class _Run:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.open: dict[str, Any] | None = None
        self.last_step: dict[str, Any] | None = None
        self.last_step_is_preview = False
        self.stopped = False


def _agent_start(builder, state, lines, position, event, where, at) -> None:
    state.reset()


def _structure(builder, state, lines, position, event, where, at) -> None:
    pass


def _message_start(builder, state, lines, position, event, where, at) -> None:
    state.open = {"role": event.get("role"), "deltas": [], "line": lines[position][0], "at": at}


def _message_update(builder, state, lines, position, event, where, at) -> None:
    delta = event.get("delta")
    if not isinstance(delta, str):
        raise TranscriptError("'delta' must be a string", where=where)
    if state.open is None:
        state.open = {"role": "assistant", "deltas": [], "line": lines[position][0], "at": at}
    state.open["deltas"].append(delta)


def _message_end(builder, state, lines, position, event, where, at) -> None:
    opened = state.open or {}
    state.open = None
    role = event.get("role") or opened.get("role")
    message_id = builder.message_id(opened.get("line", lines[position][0]))
    began = opened.get("at")
    if at is None:
        at = began
    deltas = opened.get("deltas") or []
    full = next((event[k] for k in ("content", "text") if isinstance(event.get(k), str)), None)
    preview = event.get("text_preview") if isinstance(event.get("text_preview"), str) else ""
    if role == "assistant" and deltas:
        text, is_preview = "".join(deltas), False
    elif full is not None:
        text, is_preview = full, False
    else:
        text, is_preview = preview, True
    if role == "user":
        if not text.strip():
            builder.skip("empty user message")
            return
        builder.add(
            {"type": "user.message", "message_id": message_id, "content": text}, where=where, at=at
        )
        return
    if role != "assistant":
        builder.skip(f"{str(role)[:40]} message")
        return
    tool_calls = _following_calls(lines, position)
    if not text and not tool_calls:
        builder.skip("empty assistant message")
        return
    step: dict[str, Any] = {"type": "agent.step.completed", "message_id": message_id}
    step["content"] = text
    if tool_calls:
        step["tool_calls"] = tool_calls
    if began is not None and at is not None and at >= began:
        step["duration_ms"] = round((at - began).total_seconds() * 1000)
    builder.add(step, where=where, at=at)
    state.last_step, state.last_step_is_preview = step, is_preview


def _following_calls(lines: list[tuple[int, dict[str, Any]]], position: int) -> list[dict]:
    calls = []
    for number, event in lines[position + 1 :]:
        kind = event.get("type")
        if kind in MESSAGE_BOUNDARY:
            break
        if kind == "tool_execution_start":
            where = f"line {number}"
            call = {
                "id": require(event, "tool_call_id", where),
                "name": require(event, "tool_name", where),
            }
            call.update(parse_arguments(event.get("args")))
            if isinstance(event.get("args_summary"), str):
                call["args_summary"] = event["args_summary"]
            calls.append(call)
    return calls


def _tool_start(builder, state, lines, position, event, where, at) -> None:
    mapped: dict[str, Any] = {
        "type": "tool_execution_start",
        "tool_call_id": require(event, "tool_call_id", where),
        "tool_name": require(event, "tool_name", where),
    }
    mapped.update(parse_arguments(event.get("args")))
    mapped.update({key: event[key] for key in START_KEYS if event.get(key) is not None})
    builder.add(mapped, where=where, at=at)


def _tool_update(builder, state, lines, position, event, where, at) -> None:
    partial = event.get("partial")
    if not isinstance(partial, str):
        builder.skip("tool_execution_update without text")
        return
    builder.add(
        {
            "type": "agent.tool.progress",
            "tool_call_id": require(event, "tool_call_id", where),
            "message": partial,
        },
        where=where,
        at=at,
    )


def _tool_end(builder, state, lines, position, event, where, at) -> None:
    mapped: dict[str, Any] = {
        "type": "tool_execution_end",
        "tool_call_id": require(event, "tool_call_id", where),
    }
    mapped.update({key: event[key] for key in END_KEYS if event.get(key) is not None})
    builder.add(mapped, where=where, at=at)


def _turn_end(builder, state, lines, position, event, where, at) -> None:
    status = event.get("status")
    if status in STOP_STATUSES:
        _stop(builder, state, status, where, at)


def _stop(builder, state, reason: str, where: str, at) -> None:
    if state.stopped:
        return
    state.stopped = True
    builder.add(
        {
            "type": "agent.continuation",
            "should_continue": False,
            "stop_reason": reason,
            "resolved_by": "AgentSpine",
        },
        where=where,
        at=at,
    )


def _agent_end(builder, state, lines, position, event, where, at) -> None:
    final = event.get("final_text")
    if not isinstance(final, str) or not final.strip():
        return
    stopped = STOPPED.match(final.strip())
    if stopped:
        _stop(builder, state, stopped.group("reason"), where, at)
        return
    last = state.last_step
    if last is not None and not last.get("tool_calls"):
        if state.last_step_is_preview:
            last["content"] = final  # the preview was cut at 200 characters
        return
    builder.add(
        {
            "type": "agent.step.completed",
            "message_id": builder.message_id(lines[position][0]),
            "content": final,
        },
        where=where,
        at=at,
    )
    state.last_step, state.last_step_is_preview = None, False


HANDLERS = {
    "agent_start": _agent_start,
    "turn_start": _structure,
    "message_start": _message_start,
    "message_update": _message_update,
    "message_end": _message_end,
    "tool_execution_start": _tool_start,
    "tool_execution_update": _tool_update,
    "tool_execution_end": _tool_end,
    "turn_end": _turn_end,
    "agent_end": _agent_end,
}
