"""AgentSpine [001], as its `Agent` emits its events: the same translator for a runtime
posting live and for an imported file (chatui.importers).

A file is one AgentSpine event per line, exactly as its `Agent` emits them (see the real
captures in tests/fixtures/agentspine/); `parse` reads it into a draft of the very events
a live runtime would have posted, stamping ids and times (`files`) and wrapping the file
in one run; an event type chatui does not know is skipped and counted (`where` = `line N`).

Its events come in under their own names (`tool_execution_start`, `turn_end`, …) and are
mapped onto chatui's types here (`ALIASES`, `FROM_AGENTSPINE`); the four that need the
projector's state (which run, which message) are logged under `agentspine.*` types with
their own schemas. Fields chatui does not know are kept in the log, unread, and the
event carries `"dialect": "agentspine"`. See docs/events.md#agentspine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from django.conf import settings

from chatui.ingest.values import (
    COMMON_FIELDS,
    Checker,
    EventError,
    decode_json,
    one_of,
    result_text,
    string,
    text_failure,
    unstorable,
)

from .files import Builder, Draft, TranscriptError, decode, jsonl_lines, source_time

#: [001] AgentSpine's own events that need the projector's state (which run, which
#: message): logged under these types (an events export re-imports under them).
AGENTSPINE_SCHEMAS: dict[str, dict[str, tuple[Checker, bool]]] = {
    "agentspine.turn": {"phase": (one_of("start", "end"), True), "status": (string, False)},
    "agentspine.message_start": {"role": (string, True), "source": (string, False)},
    "agentspine.message_update": {"role": (string, True), "delta": (string, True)},
    "agentspine.message_end": {"role": (string, True), "text_preview": (string, False)},
}

#: Marks an event that came in AgentSpine's dialect: run-less ones belong to the
#: conversation's current AgentSpine run (the projector names it).
AGENTSPINE = "agentspine"

ALIASES = {
    "agent_start": "agent.status",
    "agent_end": "agent.status",
    "turn_start": "agentspine.turn",
    "turn_end": "agentspine.turn",
    "message_start": "agentspine.message_start",
    "message_update": "agentspine.message_update",
    "message_end": "agentspine.message_end",
    "tool_execution_start": "agent.tool.started",
    "tool_execution_update": "agent.tool.progress",
    "tool_execution_end": "agent.tool.completed",
}


# -- [001] AgentSpine, exactly as its Agent emits it ----------------------------------


def with_agentspine_extras(
    payload: dict[str, Any], fields: dict[str, Any], *, known: dict[str, Any]
) -> dict[str, Any]:
    """Unknown AgentSpine fields (`round`, `tool_results_preview`, …) are kept in the
    log, untouched and unread; the marker says which dialect the event spoke. Fields
    the type knows are never extras: a known field sent as null stays absent, as for
    every other event (the projector reads `payload.get(name)` as a checked value)."""
    extras = {
        key: value
        for key, value in fields.items()
        if key not in known and key not in COMMON_FIELDS and not key.startswith("_")
    }
    return {**payload, **extras, "dialect": AGENTSPINE}


def _agent_start(fields: dict[str, Any]) -> dict[str, Any]:
    return {**fields, "status": "running"}


def _agent_end(fields: dict[str, Any]) -> dict[str, Any]:
    return {**fields, "status": "completed"}


def _turn_start(fields: dict[str, Any]) -> dict[str, Any]:
    return {**fields, "phase": "start"}


def _turn_end(fields: dict[str, Any]) -> dict[str, Any]:
    return {**fields, "phase": "end"}


def _unchanged(fields: dict[str, Any]) -> dict[str, Any]:
    return fields


def _from_tool_execution_start(fields: dict[str, Any]) -> dict[str, Any]:
    """`args` arrives as a JSON-encoded string: decoded as strictly as a request body
    (no NaN or infinities, which no JSON column stores — nor a number such as 1E310 that
    only overflows to one once decoded; no deeper nesting), or kept as text."""
    args = fields.get("args")
    if not isinstance(args, str):
        return fields
    mapped = {key: value for key, value in fields.items() if key != "args"}
    try:
        decoded = decode_json(args, "args", max_depth=settings.CHATUI_MAX_JSON_DEPTH)
    except EventError:
        decoded = None
    if isinstance(decoded, dict) and unstorable(decoded) is None:
        mapped["args"] = decoded
    elif args.strip():
        mapped.setdefault("args_summary", args)
    return mapped


_PERCENT = re.compile(r"\s*(\d{1,3}(?:\.\d+)?)\s*%\s*")


def _from_tool_execution_update(fields: dict[str, Any]) -> dict[str, Any]:
    """`partial`: "→ …" is the progress line, "50%" the progress, else output."""
    mapped = {key: value for key, value in fields.items() if key != "partial"}
    partial = fields.get("partial")
    if not isinstance(partial, str):
        if partial is not None:
            mapped["output"] = json.dumps(partial, ensure_ascii=False, default=str)
        return mapped
    percent = _PERCENT.fullmatch(partial)
    if partial.startswith("→ "):
        mapped["message"] = partial[2:].strip()
    elif percent and float(percent.group(1)) <= 100:
        mapped["progress"] = float(percent.group(1)) / 100
    else:
        mapped["output"] = partial if partial.endswith("\n") else partial + "\n"
    return mapped


def _from_tool_execution_end(fields: dict[str, Any]) -> dict[str, Any]:
    """[001] tool_execution_end → agent.tool.completed; its failures are text."""
    mapped = {
        key: value for key, value in fields.items() if key not in ("result_preview", "is_error")
    }
    if mapped.get("result") is None and fields.get("result_preview") is not None:
        mapped["result"] = fields["result_preview"]
        mapped["result_is_preview"] = True
    if mapped.get("error") is None:
        failure = text_failure(result_text(mapped.get("result")))
        if fields.get("is_error") is True:
            failure = result_text(mapped.get("result")) or "tool failed"
        if failure and fields.get("skipped") is not True:
            mapped["error"] = failure
    return mapped


FROM_AGENTSPINE: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "agent_start": _agent_start,
    "agent_end": _agent_end,
    "turn_start": _turn_start,
    "turn_end": _turn_end,
    "message_start": _unchanged,
    "message_update": _unchanged,
    "message_end": _unchanged,
    "tool_execution_start": _from_tool_execution_start,
    "tool_execution_update": _from_tool_execution_update,
    "tool_execution_end": _from_tool_execution_end,
}


# -- a file of AgentSpine events (the importer's `agentspine` format) -------------


def parse(raw: bytes) -> Draft:
    builder = Builder(raw)
    for number, event in jsonl_lines(decode(raw)):
        where = f"line {number}"
        kind = event.get("type")
        if not isinstance(kind, str) or not kind:
            raise TranscriptError("'type' must be a non-empty string", where=where)
        if kind not in ALIASES:  # a newer AgentSpine's event: counted, not shown
            builder.skip(f"{kind[:60]} event")
            continue
        at = source_time(event, where)
        builder.add({k: v for k, v in event.items() if k != "timestamp"}, where=where, at=at)
    return builder.finish()
