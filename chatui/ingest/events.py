"""The event input contract (docs/events.md#event-types): validation and normalisation, no database.

`parse_events` turns a decoded request body into `NormalisedEvent`s or raises
`EventError` naming the event's index and the field at fault. AgentSpine's
`tool_execution_start`/`tool_execution_end` [001] are mapped onto chatui's types
here, so nothing downstream knows about aliases.

Why it is long: it is the whole input contract — one schema per event type plus the
AgentSpine dialect — and a reader checking what the API accepts reads it in one place.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.utils.dateparse import parse_datetime

from chatui.ingest import attachments
from chatui.ingest.attachments import Blob
from chatui.ingest.dialects import agui
from chatui.ingest.dialects.agentspine import (
    AGENTSPINE,
    AGENTSPINE_SCHEMAS,
    ALIASES,
    FROM_AGENTSPINE,
    with_agentspine_extras,
)
from chatui.ingest.dialects.otlp import OTEL_SCHEMAS
from chatui.ingest.dialects.sessions import SESSION_SCHEMAS

from .values import (
    MAX_ID_CHARS,
    MAX_SEQ,
    Checker,
    EventError,
    anything,
    attempt_count,
    boolean,
    canonical_json,
    duration,
    fraction,
    id_string,
    nonempty_string,
    number_up_to,
    obj,
    one_of,
    optional_id,
    short_name,
    string,
    token_count,
    token_usage,
    tool_call_list,
    unstorable,
)

TOOL_CALL_FIELDS: dict[str, tuple[Checker, bool]] = {
    "id": (optional_id, False),
    "name": (short_name, True),
    "args": (obj, False),
    "args_summary": (string, False),
}

#: `cancelled`: a person stopped the run (W5) — not a failure.
STATUSES = ("thinking", "running", "info", "completed", "failed", "cancelled")

#: docs/events.md#approvals. `expired` is decided by the server ("system") when `timeout_s` passed.
APPROVAL_DECISIONS = ("approved", "denied", "expired")
DEFAULT_APPROVAL_TIMEOUT_S = 600
MAX_APPROVAL_TIMEOUT_S = 7 * 24 * 60 * 60
#: Written only by chatui itself (chatui.ingest.approvals, chatui.ingest.notes): a runtime
#: posting one gets 400, saying who writes it and how to ask for it.
SERVER_ONLY_TYPES: dict[str, str] = {
    "tool.approval": (
        "'tool.approval' is written by chatui when a person decides; a runtime cannot "
        "post it (ask with 'agent.tool.approval_requested', then wait with "
        "GET …/approvals/{tool_call_id}?wait=30)"
    ),
    "audit.note": (
        "'audit.note' is written by chatui when an auditor annotates; a runtime cannot "
        "post it (an auditor posts notes with POST …/conversations/{id}/notes)"
    ),
    "audit.erasure": (
        "'audit.erasure' is written by chatui when a person with chatui.erase_content "
        "erases events' content (manage.py erase_content, or the admin); a runtime cannot "
        "post it"
    ),
}
#: docs/events.md#notes: an auditor's verdict on a tool call, a message or a run.
NOTE_LABELS = ("ok", "wrong_result", "unsafe", "policy_violation", "needs_review")
NOTE_TARGETS = ("tool_call_id", "message_id", "run_id")


def note_target(value: Any) -> str | None:
    """An `audit.note` target: an object naming exactly one of NOTE_TARGETS by its id."""
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in NOTE_TARGETS:
        return "must be an object with exactly one of " + ", ".join(NOTE_TARGETS)
    problem = id_string(next(iter(value.values())))
    return f"id {problem}" if problem else None


def erased_list(value: Any) -> str | None:
    """An `audit.erasure`'s list of what it erased: [{seq, content_hash}, …], not empty."""
    if not isinstance(value, list) or not value:
        return "must be a non-empty array of {seq, content_hash}"
    for item in value:
        if (
            not isinstance(item, dict)
            or set(item) != {"seq", "content_hash"}
            or positive_seq(item["seq"]) is not None
            or not isinstance(item["content_hash"], str)
            or not re.fullmatch(r"[0-9a-f]{64}", item["content_hash"])
        ):
            return "must be a non-empty array of {seq, content_hash} (a seq and 64 hex digits)"
    return None


def positive_seq(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_SEQ:
        return "must be the seq of an earlier note (a whole number from 1)"
    return None


#: A request for a person's decision, and the decision: announced on commit
#: (chatui.ingest.service.approval_events_committed) for their deadlines and their long polls.
APPROVAL_EVENT_TYPES = ("agent.tool.approval_requested", "tool.approval")
#: The `event_id`s chatui derives for what it writes itself, so that what it writes twice
#: (from two processes, or again after a restart) is stored once: a tool call's decision
#: and its expiry (`approval-…`, chatui.ingest.approvals), the composer's user messages
#: (`compose-…`, chatui.web.views), imported transcripts (`import:…`, chatui.importers), and a
#: built-in agent's run — its events and those that end it on Stop or when its worker is
#: lost (`run_<16 hex digits>.…`, chatui.agents), and AG-UI events' derived ids (`agui:…`,
#: chatui.ingest.dialects.agui). A runtime that took one first would
#: turn chatui's own write into a 409 — an approval nobody could decide and that never
#: expires — so a runtime posting one gets 400 (docs/SECURITY.md).
RESERVED_EVENT_ID = re.compile(r"approval-|compose-|import:|agui:|run_[0-9a-f]{16}\.")

# type -> {field: (checker, required)}
SCHEMAS: dict[str, dict[str, tuple[Checker, bool]]] = {
    "user.message": {
        "message_id": (id_string, False),
        "content": (nonempty_string, True),
    },
    "agent.message.delta": {
        "message_id": (id_string, True),
        "delta": (string, True),
    },
    "agent.step.completed": {
        "message_id": (id_string, False),
        "content": (string, True),
        "tool_calls": (tool_call_list, False),
        "duration_ms": (duration, False),
        "tokens": (token_count, False),
        # S4 (docs/rendering.md#s4): the model's count in and out, priced by CHATUI_PRICES.
        "usage": (token_usage, False),
    },
    "agent.tool.started": {
        "tool_call_id": (id_string, True),
        "tool_name": (short_name, True),
        "args": (obj, False),
        "args_summary": (string, False),
        "parent_tool_call_id": (id_string, False),
        "attempt": (attempt_count, False),
        "max_attempts": (attempt_count, False),
    },
    "agent.tool.progress": {
        "tool_call_id": (id_string, True),
        "progress": (fraction, False),
        "output": (string, False),
        "message": (string, False),
    },
    "agent.tool.completed": {
        "tool_call_id": (id_string, True),
        "tool_name": (short_name, False),
        "result": (anything, False),
        "error": (string, False),
        "duration_ms": (duration, False),
        # docs/events.md#agentspine: "details may be any JSON" (AgentSpine's contract says `Any`).
        "details": (anything, False),
        "skipped": (boolean, False),
        # [001] the result is only the runtime's preview (about 200 characters).
        "result_is_preview": (boolean, False),
    },
    # docs/events.md#approvals: a runtime asks a person before it runs a tool...
    "agent.tool.approval_requested": {
        "tool_call_id": (id_string, True),
        "tool_name": (short_name, True),
        "args": (obj, False),
        "args_summary": (string, False),
        "reason": (string, False),
        "timeout_s": (number_up_to(MAX_APPROVAL_TIMEOUT_S, "a week in seconds"), False),
    },
    # ... and chatui records the decision (SERVER_ONLY_TYPES: never from a runtime).
    "tool.approval": {
        "tool_call_id": (id_string, True),
        "decision": (one_of(*APPROVAL_DECISIONS), True),
        "note": (string, False),
        "decided_by": (string, False),
        "decided_at": (string, False),
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
    # R6 (docs/rendering.md#r6): the model's reasoning, beside the answer, never in it.
    "agent.reasoning.delta": {
        "message_id": (id_string, True),
        "delta": (string, True),
        "encrypted": (boolean, False),
    },
    # docs/events.md#notes: an auditor's note (SERVER_ONLY_TYPES: never from a runtime).
    # Appended, never edited: a correction is a new note whose `refers_to` is the seq of
    # the note it corrects. `author` is the auditor's username, set by chatui.
    "audit.note": {
        "target": (note_target, True),
        "text": (nonempty_string, True),
        "label": (one_of(*NOTE_LABELS), False),
        "refers_to": (positive_seq, False),
        "author": (short_name, False),
    },
    # docs/events.md#erasure: events' content erased (SERVER_ONLY_TYPES: never from a
    # runtime); each erased event's payload is a tombstone, its content hash kept and
    # recorded here, so the chain still verifies (docs/auditing.md#erasing-content).
    "audit.erasure": {
        "erased": (erased_list, True),
        "reason": (nonempty_string, True),
        "by": (short_name, False),
    },
}
# AgentSpine's logged types are validated like native ones (dialects.agentspine), and so
# is the record the session dialects keep (dialects.sessions, docs/events.md#sessions).
SCHEMAS.update(AGENTSPINE_SCHEMAS)
# docs/events.md#otlp: spans and log records, logged as received, read by the projector.
SCHEMAS.update(OTEL_SCHEMAS)
SCHEMAS.update(SESSION_SCHEMAS)

_LOGGED_ONLY = {*AGENTSPINE_SCHEMAS, *OTEL_SCHEMAS, *SESSION_SCHEMAS}
EVENT_TYPES = tuple(name for name in SCHEMAS if name not in _LOGGED_ONLY)


@dataclass(frozen=True)
class NormalisedEvent:
    type: str
    payload: dict[str, Any]
    body_hash: str
    event_id: str | None = None
    run_id: str = ""
    timestamp: datetime | None = None
    index: int = 0
    #: The event_id was derived by chatui (an AG-UI event's), not chosen by the sender.
    derived_id: bool = False
    #: An MCP result's binary parts, taken out of `payload` (chatui.ingest.attachments):
    #: stored by ingest with the event.
    attachments: tuple[Blob, ...] = ()

    @property
    def tool_call_id(self) -> str:
        if self.type in agui.LOG_TYPES:  # kept as sent: camelCase
            call_id = self.payload.get("toolCallId")
            return call_id if isinstance(call_id, str) else ""
        return self.payload.get("tool_call_id", "")


def encode_event(raw: dict[str, Any], index: int) -> bytes:
    """The event's canonical UTF-8 (its size and hash), refusing what no column or
    renderer can hold: NUL, lone surrogates, non-finite or giant numbers (SEC6).

    The common case costs one dump and one encode: only when those fail, or the text
    holds an escaped NUL, is the event walked to name the field at fault.
    """
    try:
        text = canonical_json(raw)
        encoded = text.encode()
    except (ValueError, UnicodeEncodeError):
        text = None
    # json.dumps escapes NUL as the six characters \u0000 (text that merely holds them
    # is walked for nothing).
    if text is None or "\\u0000" in text:
        found = unstorable(raw)
        if found is not None:
            path, problem = found
            raise EventError(f"field '{path}' {problem}", index=index, field=path)
        if text is None:
            raise EventError("event cannot be encoded as JSON", index=index)
    return encoded


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


def parse_events(
    body: Any, *, max_event_bytes: int | None = None, from_runtime: bool = False
) -> list[NormalisedEvent]:
    """`from_runtime`: the events come from an agent runtime (the API, the ingest
    channel), which may not write what only chatui decides (SERVER_ONLY_TYPES), nor
    under the ids chatui derives for its own writes (RESERVED_EVENT_ID)."""
    events = [
        normalise_event(raw, index, max_event_bytes=max_event_bytes)
        for index, raw in enumerate(unwrap_batch(body))
    ]
    if from_runtime:
        refuse_server_only(events)
    return events


def refuse_server_only(events: list[NormalisedEvent]) -> None:
    for event in events:
        if event.derived_id:
            continue  # chatui's own derivation, in the reserved `agui:` space
        if event.event_id is not None and RESERVED_EVENT_ID.match(event.event_id):
            raise EventError(
                f"event_id '{event.event_id[:80]}' is in chatui's reserved space (ids beginning "
                "'approval-', 'compose-', 'import:', 'agui:' or 'run_' and 16 hex digits and "
                "'.' are chatui's own); choose another",
                index=event.index,
                field="event_id",
            )
        if event.type in SERVER_ONLY_TYPES:
            raise EventError(SERVER_ONLY_TYPES[event.type], index=event.index, field="type")


def normalise_event(
    raw: Any, index: int = 0, *, max_event_bytes: int | None = None
) -> NormalisedEvent:
    if not isinstance(raw, dict):
        raise EventError("an event must be a JSON object", index=index)
    encoded = encode_event(raw, index)
    if max_event_bytes is not None and len(encoded) > max_event_bytes:
        raise EventError(f"event is larger than {max_event_bytes} bytes", index=index, status=413)
    raw_type = raw.get("type")
    if raw_type is None:
        raise EventError("missing required field 'type'", index=index, field="type")
    if not isinstance(raw_type, str):
        raise EventError("field 'type' must be a string", index=index, field="type")
    if raw_type in agui.TYPES:
        checked = agui.check(raw, index)
        return NormalisedEvent(
            type=checked.type,
            payload=checked.payload,
            body_hash=checked.body_hash,
            event_id=checked.event_id,
            run_id=checked.run_id,
            timestamp=checked.timestamp,
            index=index,
            derived_id=checked.derived_id,
        )
    event_type = ALIASES.get(raw_type, raw_type)
    if event_type not in SCHEMAS:
        valid = ", ".join(EVENT_TYPES + tuple(ALIASES)) + ", and AG-UI's (RUN_STARTED, …)"
        raise EventError(
            f"unknown event type '{raw_type[:80]}'; valid types are: {valid}",
            index=index,
            field="type",
        )
    fields = dict(raw)
    if raw_type in ALIASES:
        fields = FROM_AGENTSPINE[raw_type](fields)

    event_id = _optional_common(fields, "event_id", index)
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
    # An exported AgentSpine event (`export --format events`) comes back under its
    # logged type with its marker: it is still AgentSpine's, extras and all.
    if raw_type in ALIASES or raw_type in AGENTSPINE_SCHEMAS or raw.get("dialect") == AGENTSPINE:
        payload = with_agentspine_extras(payload, fields, known=SCHEMAS[event_type])
        # An extra named `tool_call_id` still fills the event row's column of that name
        # (`NormalisedEvent.tool_call_id`): it is checked as that id is everywhere else.
        if "tool_call_id" in payload and "tool_call_id" not in SCHEMAS[event_type]:
            problem = id_string(payload["tool_call_id"])
            if problem:
                raise EventError(
                    f"field 'tool_call_id' {problem}", index=index, field="tool_call_id"
                )
    if event_type == "agent.step.completed" and "tool_calls" in payload:
        payload["tool_calls"] = _check_tool_calls(payload["tool_calls"], index)
    blobs: list[Blob] = []
    if event_type == "agent.tool.completed" and "result" in payload:
        # docs/events.md#mcp-results: an MCP result's base64 parts become references to
        # attachments; the log keeps the rest of the result as received.
        payload["result"], blobs = attachments.extract(
            payload["result"], settings.CHATUI_MAX_ATTACHMENT_BYTES
        )

    return NormalisedEvent(
        type=event_type,
        payload=payload,
        body_hash=hashlib.sha256(encoded).hexdigest(),
        event_id=event_id,
        run_id=run_id,
        timestamp=timestamp,
        index=index,
        attachments=tuple(blobs),
    )


def _optional_common(fields: dict[str, Any], name: str, index: int) -> str | None:
    value = fields.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise EventError(f"field '{name}' must be a non-empty string", index=index, field=name)
    if len(value) > MAX_ID_CHARS:
        raise EventError(
            f"field '{name}' must be at most {MAX_ID_CHARS} characters", index=index, field=name
        )
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
        return parsed.replace(tzinfo=UTC)
    try:
        # Stored as UTC: 0001-01-01T00:00+05:00 and 9999-12-31T23:59-05:00 do not fit.
        return parsed.astimezone(UTC)
    except OverflowError:
        raise EventError(
            "field 'timestamp' is out of range once converted to UTC (years 1 to 9999)",
            index=index,
            field="timestamp",
        ) from None


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
