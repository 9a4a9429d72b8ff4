"""The event input contract (SPEC §2): validation and normalisation, no database.

`parse_events` turns a decoded request body into `NormalisedEvent`s or raises
`EventError` naming the event's index and the field at fault. AgentSpine's
`tool_execution_start`/`tool_execution_end` [001] are mapped onto chatui's types
here, so nothing downstream knows about aliases.

Why it is long: it is the whole input contract — one schema per event type plus the
AgentSpine dialect — and a reader checking what the API accepts reads it in one place.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.utils.dateparse import parse_datetime


class EventError(Exception):
    """Bad input: `status` is the HTTP status the API answers with."""

    def __init__(
        self, message: str, *, index: int | None = None, field: str | None = None, status: int = 400
    ):
        super().__init__(message)
        self.message = message
        self.index = index
        self.field = field
        self.status = status

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.message}
        if self.index is not None:
            body["index"] = self.index
        if self.field is not None:
            body["field"] = self.field
        return body


# --- limits: what the columns (chatui.models) and the renderers can hold ---------

#: Ids (`event_id`, `run_id`, `message_id`, `tool_call_id`, `parent_tool_call_id`,
#: `tool_calls[].id`) live in 200-character columns. A message id is 250 wide, but
#: the projection derives tool message ids from it (`tool_<id>_<n>`), so 200 here too.
MAX_ID_CHARS = 200
#: `tool_name` and `tool_calls[].name`: Message.tool_name is 200 characters.
MAX_TOOL_NAME_CHARS = 200
#: Conversation.title is 200 characters.
MAX_TITLE_CHARS = 200
MAX_DURATION_MS = 10 * 365 * 24 * 60 * 60 * 1000  # 10 years
MAX_TOKENS = 10**12
MAX_ATTEMPTS = 1000
#: Seqs and positions are 64-bit signed integers in SQLite and PostgreSQL.
MAX_SEQ = 2**63 - 1


# --- field checkers: each returns an error phrase, or None when the value fits ---

Checker = Callable[[Any], str | None]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def string(value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def nonempty_string(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    return None if value.strip() else "must not be empty"


def obj(value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be an object"


def boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _is_finite(value: int | float) -> bool:
    return isinstance(value, int) or math.isfinite(value)


def number_up_to(limit: int, meaning: str = "") -> Checker:
    """A finite number in 0..limit; `meaning` says what the limit is, for the message."""
    suffix = f" ({meaning})" if meaning else ""

    def check(value: Any) -> str | None:
        if not _is_number(value):
            return "must be a number"
        if not _is_finite(value):
            return "must be a finite number"
        if value < 0:
            return "must not be negative"
        return None if value <= limit else f"must be at most {limit}{suffix}"

    return check


def integer_up_to(limit: int) -> Checker:
    def check(value: Any) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool):
            return "must be an integer"
        if value < 0:
            return "must not be negative"
        return None if value <= limit else f"must be at most {limit}"

    return check


def fraction(value: Any) -> str | None:
    if not _is_number(value):
        return "must be a number"
    if _is_finite(value) and 0 <= value <= 1:
        return None
    return "must be between 0 and 1"


def id_string(value: Any) -> str | None:
    """A non-empty id that fits its column."""
    problem = nonempty_string(value)
    if problem is None and len(value) > MAX_ID_CHARS:
        return f"must be at most {MAX_ID_CHARS} characters"
    return problem


def short_name(value: Any) -> str | None:
    """A tool name that fits its column."""
    problem = nonempty_string(value)
    if problem is None and len(value) > MAX_TOOL_NAME_CHARS:
        return f"must be at most {MAX_TOOL_NAME_CHARS} characters"
    return problem


def optional_id(value: Any) -> str | None:
    """`tool_calls[].id`: "" means "no id" (matched by name), else an id that fits."""
    if not isinstance(value, str):
        return "must be a string"
    return None if len(value) <= MAX_ID_CHARS else f"must be at most {MAX_ID_CHARS} characters"


duration = number_up_to(MAX_DURATION_MS, "10 years in ms")
token_count = integer_up_to(MAX_TOKENS)
attempt_count = integer_up_to(MAX_ATTEMPTS)


def anything(value: Any) -> str | None:
    return None


def one_of(*choices: str) -> Checker:
    def check(value: Any) -> str | None:
        if value in choices:
            return None
        return "must be one of " + ", ".join(choices)

    return check


def tool_call_list(value: Any) -> str | None:
    return None if isinstance(value, list) else "must be an array"


def contract_number(value: Any, limit: int, *, integral: bool = False) -> int | float | None:
    """`value` if ingest would accept it today (finite, 0..limit), else None.

    For readers of stored data: rows written before these limits existed (or by
    hand) must render as "—", never crash a page, an export or a replay.
    """
    if not _is_number(value) or (integral and not isinstance(value, int)):
        return None
    if not _is_finite(value) or not 0 <= value <= limit:
        return None
    return value


_ASCII_DIGITS = re.compile(r"[0-9]{1,19}")


def parse_seq(text: str) -> int | None:
    """A query parameter such as `after=`/`before=`: ASCII digits only (`"²".isdigit()`
    is true, and int() refuses it) and at most MAX_SEQ (a bigger one overflows the
    database's integers). None when it is anything else."""
    if not _ASCII_DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if value <= MAX_SEQ else None


# --- text and numbers no column can hold (SEC6) ------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")
#: Above this many bits an int may exceed Python's int↔str digit limit (4300 digits):
#: such ints are checked exactly, the cheap test keeps ordinary ones fast.
_BIG_INT_BITS = 1000


def text_problem(text: str) -> str | None:
    """Why `text` cannot be stored and shown, or None. PostgreSQL refuses NUL in text
    and jsonb, and a lone surrogate cannot be encoded as UTF-8 at all: both are
    rejected (not silently replaced), so what is stored is what was sent."""
    if "\x00" in text:
        return "must not contain the NUL character (\\u0000)"
    found = _SURROGATE.search(text)
    if found:
        return (
            f"must not contain a lone surrogate (U+{ord(found.group()):04X}); "
            "text must be valid Unicode"
        )
    return None


def _number_problem(value: int | float) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number (1e999 overflows to infinity)"
    if isinstance(value, int) and value.bit_length() > _BIG_INT_BITS:
        try:
            str(value)
        except ValueError:
            return f"must have at most {sys.get_int_max_str_digits()} digits"
    return None


def _shown_key(key: str) -> str:
    """A key as it may appear in an error's field path: escaped and short."""
    shown = key.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\u0000")
    return shown if len(shown) <= 40 else shown[:39] + "…"


def unstorable(value: Any) -> tuple[str, str] | None:
    """The first string, key or number in decoded JSON that cannot be stored or
    rendered, as (field path, problem), or None. Iterative, like `json_depth`."""
    stack = [(value, "")]
    while stack:
        item, where = stack.pop()
        problem = None
        if isinstance(item, str):
            problem = text_problem(item)
        elif _is_number(item):
            problem = _number_problem(item)
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                name = key if isinstance(key, str) else str(key)
                child_path = f"{where}.{_shown_key(name)}" if where else _shown_key(name)
                key_problem = text_problem(name)
                if key_problem:
                    return child_path, f"has an invalid key: it {key_problem}"
                children.append((child, child_path))
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{where}[{i}]") for i, child in reversed(list(enumerate(item))))
        if problem:
            return where, problem
    return None


TOOL_CALL_FIELDS: dict[str, tuple[Checker, bool]] = {
    "id": (optional_id, False),
    "name": (short_name, True),
    "args": (obj, False),
    "args_summary": (string, False),
}

STATUSES = ("thinking", "running", "info", "completed", "failed")

#: SPEC §13. `expired` is decided by the server ("system") when `timeout_s` passed.
APPROVAL_DECISIONS = ("approved", "denied", "expired")
DEFAULT_APPROVAL_TIMEOUT_S = 600
MAX_APPROVAL_TIMEOUT_S = 7 * 24 * 60 * 60
#: Written only by chatui itself (chatui.approvals): a runtime posting one gets 400.
SERVER_ONLY_TYPES = ("tool.approval",)
#: A request for a person's decision, and the decision: announced on commit
#: (chatui.ingest.approval_events_committed) for their deadlines and their long polls.
APPROVAL_EVENT_TYPES = ("agent.tool.approval_requested", "tool.approval")
#: The `event_id`s chatui derives for what it writes itself, so that what it writes twice
#: (from two processes, or again after a restart) is stored once: a tool call's decision
#: and its expiry (`approval-…`, chatui.approvals), the composer's user messages
#: (`compose-…`, chatui.views), imported transcripts (`import:…`, chatui.importers), and a
#: built-in agent's run — its events and those that end it on Stop or when its worker is
#: lost (`run_<16 hex digits>.…`, chatui.agents). A runtime that took one first would
#: turn chatui's own write into a 409 — an approval nobody could decide and that never
#: expires — so a runtime posting one gets 400 (docs/SECURITY.md).
RESERVED_EVENT_ID = re.compile(r"approval-|compose-|import:|run_[0-9a-f]{16}\.")

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
        # SPEC §2: "details may be any JSON" (AgentSpine's contract says `Any`).
        "details": (anything, False),
        "skipped": (boolean, False),
        # [001] the result is only the runtime's preview (about 200 characters).
        "result_is_preview": (boolean, False),
    },
    # SPEC §13: a runtime asks a person before it runs a tool...
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
}

#: [001] AgentSpine's own events that need the projector's state (which run, which
#: message): logged under these types (an events export re-imports under them).
AGENTSPINE_SCHEMAS: dict[str, dict[str, tuple[Checker, bool]]] = {
    "agentspine.turn": {"phase": (one_of("start", "end"), True), "status": (string, False)},
    "agentspine.message_start": {"role": (string, True), "source": (string, False)},
    "agentspine.message_update": {"role": (string, True), "delta": (string, True)},
    "agentspine.message_end": {"role": (string, True), "text_preview": (string, False)},
}
SCHEMAS.update(AGENTSPINE_SCHEMAS)

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

EVENT_TYPES = tuple(name for name in SCHEMAS if name not in AGENTSPINE_SCHEMAS)
COMMON_FIELDS = ("type", "event_id", "timestamp", "run_id")


@dataclass(frozen=True)
class NormalisedEvent:
    type: str
    payload: dict[str, Any]
    body_hash: str
    event_id: str | None = None
    run_id: str = ""
    timestamp: datetime | None = None
    index: int = 0

    @property
    def tool_call_id(self) -> str:
        return self.payload.get("tool_call_id", "")


def json_depth(value: Any) -> int:
    """Nesting depth of decoded JSON, computed without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def decode_json(text: str, subject: str, *, max_depth: int) -> Any:
    """`text` as JSON, refusing NaN and infinities and nesting deeper than `max_depth`;
    errors name `subject` ("request body", "message"). The API and the ingest channel
    read their input through this one function."""
    try:
        if text.startswith("\ufeff"):  # as json.loads refuses it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        body = _DECODER.decode(text)
    except RecursionError:
        raise _too_deep(max_depth) from None
    except ValueError as problem:
        raise EventError(f"{subject} is not valid JSON: {problem}") from None
    if json_depth(body) > max_depth:
        raise _too_deep(max_depth)
    return body


def _too_deep(max_depth: int) -> EventError:
    return EventError(f"JSON is nested deeper than {max_depth} levels")


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


# Made once: `json.loads` given a keyword builds a decoder on every call, about half of
# decoding a small event's body (on the event loop for the ingest channel).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def canonical_json(value: Any) -> str:
    """Raises ValueError for NaN, infinities and ints over Python's digit limit."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


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
        if event.event_id is not None and RESERVED_EVENT_ID.match(event.event_id):
            raise EventError(
                f"event_id '{event.event_id[:80]}' is in chatui's reserved space (ids beginning "
                "'approval-', 'compose-', 'import:' or 'run_' and 16 hex digits and '.' are "
                "chatui's own); choose another",
                index=event.index,
                field="event_id",
            )
        if event.type in SERVER_ONLY_TYPES:
            raise EventError(
                f"'{event.type}' is written by chatui when a person decides; a runtime cannot "
                "post it (ask with 'agent.tool.approval_requested', then wait with "
                "GET …/approvals/{tool_call_id}?wait=30)",
                index=event.index,
                field="type",
            )


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
    event_type = ALIASES.get(raw_type, raw_type)
    if event_type not in SCHEMAS:
        valid = ", ".join(EVENT_TYPES + tuple(ALIASES))
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
        payload = _with_agentspine_extras(payload, fields, known=SCHEMAS[event_type])
    if event_type == "agent.step.completed" and "tool_calls" in payload:
        payload["tool_calls"] = _check_tool_calls(payload["tool_calls"], index)

    return NormalisedEvent(
        type=event_type,
        payload=payload,
        body_hash=hashlib.sha256(encoded).hexdigest(),
        event_id=event_id,
        run_id=run_id,
        timestamp=timestamp,
        index=index,
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


# -- [001] AgentSpine, exactly as its Agent emits it ----------------------------------


def _with_agentspine_extras(
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

# -- failures that are only text or details (SPEC §2 [001], G15) ------------------------

_EXIT_CODE = re.compile(r"\[exit code: (-?\d{1,10})\]\s*\Z")


def text_failure(text: str) -> str | None:
    """AgentSpine's failures are text: the error text when `text` says it failed.

    `Error:` / `[Tool Error]` prefixes and an `[exit code: N]` suffix (N ≠ 0). The
    suffix regex is anchored and bounded, so it costs one pass over the tail.
    """
    stripped = text.lstrip()
    if stripped.startswith(("Error:", "[Tool Error]")):
        return text.strip()
    found = _EXIT_CODE.search(text[-64:])
    if found and int(found.group(1)) != 0:
        return text.strip()
    return None


def details_failure(details: Any) -> str | None:
    """G15: details saying a command exited non-zero or a fetch got HTTP ≥ 400."""
    if not isinstance(details, dict):
        return None
    code = _whole_number(details.get("exit_code"))
    if code is not None and code != 0:
        return f"exit code {code}"
    status = _whole_number(details.get("status_code"))
    if status is not None and status >= 400:
        return f"HTTP {status}"
    return None


def _whole_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,10}", value.strip()):
        return int(value.strip())
    return None


def result_text(result: Any) -> str:
    """The human-readable text of a tool result (SPEC §3 `content`)."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if is_tool_execution_result(result):
        return result["text"]
    return json.dumps(result, separators=(",", ":"), ensure_ascii=False)


def is_tool_execution_result(result: Any) -> bool:
    """[001] `{"text": str, "details"?: any}` and nothing else."""
    return (
        isinstance(result, dict)
        and isinstance(result.get("text"), str)
        and set(result) <= {"text", "details"}
    )
