"""AG-UI (the Agent-User Interaction protocol, `ag-ui-protocol` 1.0): one translator for
the events endpoint, the `agui` client backend and the importer (docs/events.md#ag-ui).

The contract, for every writer:

- `ingest(conversation, events)` accepts raw AG-UI event dicts, camelCase as on the wire,
  mixed freely with native events in one batch; they are recognised by AG-UI's type names
  (`RUN_STARTED`, `TOOL_CALL_START`, … : `is_agui`). Each is validated with the package's
  own pydantic models (`check`); a bad one is an `EventError` naming its index and field
  (`toolCallId`, `messages[2].content`, …), and nothing of the batch is written.
- The log keeps each event as received: `Event.type` is `agui.<TYPE>` (`log_type`),
  `Event.payload` the event itself, `Event.tool_call_id` its `toolCallId`. The translation
  is re-derived from the payload whenever the conversation is projected (`translate`): a
  pure function from one event to chatui's own operations, plain data the projector
  (chatui.ingest.projection) applies. Nothing else reads AG-UI's shapes.
- `event_id`s are derived, not sent: `agui:<TYPE>:<runId|messageId|toolCallId|…>:<digest>`
  (`derived_event_id`), the digest that of the event without its `timestamp`, so a
  re-sent start, end or result — the same event again, whenever it is sent — is a
  duplicate; a content delta has no id, so a re-sent delta is applied again. Ids are per
  conversation: the conversation is the one posted to, whatever `threadId` says. An
  event carrying its own `event_id` (the importer stamps one on each line) keeps it; it
  is not part of the logged payload.
- Run-less events (everything but `RUN_STARTED`/`RUN_FINISHED`) belong to the
  conversation's current run, as the projector names it (its latest). Timestamps are
  epoch milliseconds.
- `parse_sse` reads the SSE text an agent streams (`Content-Type: text/event-stream`),
  exactly as streamed, into the same list of events. A writer holding the package's event
  objects passes `event.model_dump(mode="json", by_alias=True)`: the dict on the wire.

Why it is long: the whole dialect in one place — validation and ids, the SSE reader, the
importer's format, one small translator per AG-UI event type, and the reading of
snapshots in AG-UI's and LangChain's message shapes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jsonpatch
import jsonpointer
from ag_ui.core import Event as AguiEvent
from ag_ui.core import EventType
from django.conf import settings
from httpx_sse import EventSource, SSEError
from pydantic import TypeAdapter, ValidationError

from chatui.ingest.values import (
    MAX_ID_CHARS,
    MAX_TOOL_NAME_CHARS,
    EventError,
    canonical_json,
    decode_json,
    unstorable,
)

from .files import DIGEST_CHARS, Draft, TranscriptError, check_json, decode, jsonl_lines
from .files import decode_json as decode_json_file

#: Marks a logged event as AG-UI's: `Event.type` is this prefix and the AG-UI type.
LOG_PREFIX = "agui."
#: The event id prefix chatui derives AG-UI ids under (reserved for AG-UI events).
ID_PREFIX = "agui:"

#: The deprecated 0.x reasoning events, which left the protocol in 1.0 but are still
#: streamed by older adapters: validated here (the package has no models for them).
THINKING_TYPES = (
    "THINKING_START",
    "THINKING_END",
    "THINKING_TEXT_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END",
)
TYPES = frozenset(kind.value for kind in EventType) | frozenset(THINKING_TYPES)
LOG_TYPES = frozenset(LOG_PREFIX + kind for kind in TYPES)
#: The logged AG-UI events the projector reads back (chatui.ingest.projection.LOG_READ_BACK):
#: a text message's role from its start, a subagent's parent call from its start.
LOG_READ_BACK = frozenset({"agui.TEXT_MESSAGE_START", "agui.SUBAGENT_STARTED"})

_ADAPTER: TypeAdapter[Any] = TypeAdapter(AguiEvent)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The key an event's derived id is made from, by type (the first field present).
_ID_KEYS: dict[str, tuple[str, ...]] = {
    "RUN_STARTED": ("runId",),
    "RUN_FINISHED": ("runId",),
    "TEXT_MESSAGE_START": ("messageId",),
    "TEXT_MESSAGE_END": ("messageId",),
    "TOOL_CALL_START": ("toolCallId",),
    "TOOL_CALL_END": ("toolCallId",),
    "TOOL_CALL_RESULT": ("toolCallId",),
    "REASONING_START": ("messageId",),
    "REASONING_END": ("messageId",),
    "REASONING_MESSAGE_START": ("messageId",),
    "REASONING_MESSAGE_END": ("messageId",),
    "REASONING_ENCRYPTED_VALUE": ("entityId",),
    "SUBAGENT_STARTED": ("subagentRunId",),
    "SUBAGENT_FINISHED": ("subagentRunId",),
    "SUBAGENT_ERROR": ("subagentRunId",),
}
_KEY_CHARS = 100
#: Fields whose text becomes a key or a column of chatui's rows.
_ID_FIELDS = (
    "runId", "messageId", "toolCallId", "toolCallName", "parentMessageId", "entityId",
    "subagentRunId", "parentToolCallId",
)  # fmt: skip
_DIGEST_CHARS = 16
#: Pydantic AI's outcome marker on a tool result's message (REASONING_ENCRYPTED_VALUE).
PYDANTIC_AI = "pydantic_ai"


def is_agui(raw: Any) -> bool:
    kind = raw.get("type") if isinstance(raw, dict) else None
    return isinstance(kind, str) and kind in TYPES  # a list or dict `type` is no AG-UI type


def log_type(agui_type: str) -> str:
    return LOG_PREFIX + agui_type


# -- validation: ingest's side ---------------------------------------------------------


@dataclass(frozen=True)
class Checked:
    """What ingest needs of a valid AG-UI event (chatui.ingest.events builds the row)."""

    type: str  # the logged type, `agui.<TYPE>`
    payload: dict[str, Any]  # the event as received (less an importer's `event_id`)
    event_id: str | None
    body_hash: str
    run_id: str
    timestamp: datetime | None
    derived_id: bool


def check(raw: dict[str, Any], index: int) -> Checked:
    """Validate one AG-UI event with the package's own models; EventError names the
    field (camelCase, as sent) at fault."""
    kind = raw["type"]
    own_id = raw.get("event_id")
    payload = {key: value for key, value in raw.items() if key != "event_id"}
    timestamp = _timestamp(payload.get("timestamp"), index)
    if kind in THINKING_TYPES:
        _check_thinking(payload, index)
    else:
        try:
            _ADAPTER.validate_python(payload)
        except ValidationError as problem:
            raise _validation_error(kind, problem, index, payload) from None
    if own_id is not None and (
        not isinstance(own_id, str) or not own_id or len(own_id) > MAX_ID_CHARS
    ):
        raise EventError(
            f"field 'event_id' must be a non-empty string of at most {MAX_ID_CHARS} characters",
            index=index,
            field="event_id",
        )
    # The ids and names chatui keys rows by: what its columns hold (the models allow "").
    for name in _ID_FIELDS:
        value = payload.get(name)
        if not isinstance(value, str):
            continue
        limit = MAX_TOOL_NAME_CHARS if name == "toolCallName" else MAX_ID_CHARS
        if not value.strip():
            raise EventError(f"field '{name}' must not be empty", index=index, field=name)
        if len(value) > limit:
            raise EventError(
                f"field '{name}' must be at most {limit} characters", index=index, field=name
            )
    _check_interrupt_ids(payload, index)
    body_hash = hashlib.sha256(canonical_json(_without_time(payload)).encode()).hexdigest()
    run_id = payload.get("runId") if kind in ("RUN_STARTED", "RUN_FINISHED") else ""
    return Checked(
        type=log_type(kind),
        payload=payload,
        event_id=own_id or derived_event_id(kind, payload, body_hash),
        body_hash=body_hash,
        run_id=run_id or "",
        timestamp=timestamp,
        derived_id=own_id is None,
    )


def derived_event_id(kind: str, payload: dict[str, Any], body_hash: str) -> str | None:
    """`agui:<TYPE>:<key>:<digest>`, or None for events that name nothing stable (deltas,
    snapshots, steps, RUN_ERROR: each is applied as often as it is sent)."""
    for name in _ID_KEYS.get(kind, ()):
        key = payload.get(name)
        if isinstance(key, str) and key:
            if len(key) > _KEY_CHARS:
                key = "#" + hashlib.sha256(key.encode()).hexdigest()[:32]
            return f"{ID_PREFIX}{kind}:{key}:{body_hash[:_DIGEST_CHARS]}"
    return None


def _without_time(payload: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in payload.items() if key != "timestamp"}


def _validation_error(
    kind: str, problem: ValidationError, index: int, payload: dict[str, Any]
) -> EventError:
    # A union reports each member's error: the deepest is the one that got furthest.
    errors = problem.errors(include_url=False)
    first = max(errors, key=lambda error: len(error.get("loc", ())))
    path = _field_path(list(first.get("loc", ())), payload)
    message = first.get("msg", "is not valid")
    if path:
        return EventError(f"AG-UI {kind} event: field '{path}': {message}", index=index, field=path)
    return EventError(f"AG-UI {kind} event: {message}", index=index)


def _field_path(location: list[Any], payload: dict[str, Any]) -> str:
    """pydantic's error location as the field's path in the event as sent: the tags it
    adds for a tagged union (the event's type, a message's role, a part's type) are
    dropped, and names are the wire's camelCase."""
    path = ""
    here: Any = payload
    for position, part in enumerate(location):
        last = position == len(location) - 1
        if isinstance(part, int):
            path += f"[{part}]"
            here = here[part] if isinstance(here, list) and 0 <= part < len(here) else None
            continue
        name = str(part)
        if not isinstance(here, dict):
            continue  # a union member's label (`str`, `list[…]`), not a field
        if name not in here and _wire_name(name) not in here:
            tags = (here.get("type"), here.get("role"), here.get("op"))
            if not last and (name in tags or "[" in name or "-" in name):
                continue  # a union's tag, not a field
        wire = name if name in here else _wire_name(name)
        path += ("." if path else "") + wire
        here = here.get(wire)
    return path


def _wire_name(name: str) -> str:
    """pydantic reports a field by its alias (camelCase) when it was missing or wrong; a
    snake_case name is turned back into the wire's camelCase."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _check_thinking(payload: dict[str, Any], index: int) -> None:
    if payload["type"] == "THINKING_TEXT_MESSAGE_CONTENT" and not isinstance(
        payload.get("delta"), str
    ):
        raise EventError(
            "AG-UI THINKING_TEXT_MESSAGE_CONTENT event: field 'delta' must be a string",
            index=index,
            field="delta",
        )
    title = payload.get("title")
    if title is not None and not isinstance(title, str):
        raise EventError("field 'title' must be a string", index=index, field="title")


def _timestamp(value: Any, index: int) -> datetime | None:
    """Epoch milliseconds (what AG-UI sends) as a UTC time."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise EventError(
            "field 'timestamp' must be an integer: milliseconds since 1970 (AG-UI's time)",
            index=index,
            field="timestamp",
        )
    try:
        moment = _EPOCH + timedelta(milliseconds=value)
    except OverflowError:
        moment = None
    if moment is None or moment.year > 9998:  # room for any time zone, as ingest keeps
        raise EventError(
            "field 'timestamp' must be milliseconds since 1970 within the years 1 to 9998",
            index=index,
            field="timestamp",
        )
    return moment


def epoch_ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)


# -- what of an event is tool text (T3: masked in exports and the admin) ------------------

#: The fields that hold no tool text (ids, names, time); every other may (arguments,
#: results, snapshots, state, RAW's framework event).
_PLAIN_FIELDS = frozenset(
    {"type", "timestamp", "threadId", "runId", "parentRunId", "messageId", "toolCallId",
     "toolCallName", "parentMessageId", "role", "stepName", "entityId", "subtype",
     "subagentRunId", "parentToolCallId", "event_id", "protocolVersion"}
)  # fmt: skip
#: Events whose `delta` is the answer's or the reasoning's text (shown as a native
#: `agent.message.delta` is).
_TEXT_DELTAS = frozenset(
    {"TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CHUNK", "REASONING_MESSAGE_CONTENT",
     "REASONING_MESSAGE_CHUNK", "THINKING_TEXT_MESSAGE_CONTENT"}
)  # fmt: skip


def holds_no_tool_text(agui_type: str, field: str) -> bool:
    return field in _PLAIN_FIELDS or (field == "delta" and agui_type in _TEXT_DELTAS)


# -- the agent's state, as of any event (the admin shows it) ------------------------------


def state_after(snapshot: Any, deltas: list[Any]) -> tuple[Any, str]:
    """The state a STATE_SNAPSHOT gave, with the JSON Patches of the STATE_DELTAs after
    it applied in order (AG-UI's own rule); and why it stops being known, or ""."""
    state = snapshot
    for number, patch in enumerate(deltas, start=1):
        try:
            state = jsonpatch.apply_patch(state, patch, in_place=False)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError) as e:
            return state, f"STATE_DELTA {number} after the snapshot does not apply: {e}"
    return state, ""


# -- SSE: the text an agent streams ----------------------------------------------------


def parse_sse(text: str) -> list[Any]:
    """Each `data:` of an SSE stream, decoded as JSON (strictly, as a request body is),
    in order; comments, `event:`, `id:` and `retry:` lines are SSE's own. A bad `data:`
    is an EventError naming its index among the stream's events."""
    events: list[Any] = []
    for index, data in enumerate(sse_data(text)):
        try:
            events.append(
                decode_json(data, f"SSE event {index}", max_depth=settings.CHATUI_MAX_JSON_DEPTH)
            )
        except EventError as problem:
            raise EventError(problem.message, index=index, status=problem.status) from None
    if not events:
        raise EventError("the SSE stream holds no events (no 'data:' lines)")
    return events


def sse_data(text: str) -> list[str]:
    """The `data` of each SSE message that has any, read by httpx-sse's decoder (the
    SSE rules: multi-line data joined, CRLF or CR line ends, comments skipped)."""
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, text=text)
    try:
        messages = list(EventSource(response).iter_sse())
    except SSEError as problem:  # pragma: no cover - the content type is set above
        raise EventError(f"not an SSE stream: {problem}") from None
    return [message.data for message in messages if message.data.strip()]


# -- the importer's `agui` format ----------------------------------------------------------


def parse(raw: bytes) -> Draft:
    """A file of AG-UI events, one JSON object per line (JSONL) or the SSE text itself.
    Each keeps its events as sent, stamped with an `event_id` from the file's digest and
    its place in it, so importing the same file twice is all duplicates; validation is
    ingest's own (its errors name the line or SSE event)."""
    text = decode(raw)
    if _looks_like_sse(text):
        items = []
        for number, data in enumerate(sse_data(text)):
            where = f"SSE event {number}"
            value = decode_json_file(data, where=where)
            if not isinstance(value, dict):
                raise TranscriptError("each event must be a JSON object", where=where)
            check_json(value, where=where)
            items.append((where, value))
    else:
        items = [(f"line {number}", value) for number, value in jsonl_lines(text)]
    if not items:
        raise TranscriptError("the file holds no events")
    limit = settings.CHATUI_IMPORT_MAX_EVENTS
    if len(items) > limit:
        raise TranscriptError(
            f"the file makes more than {limit} events (CHATUI_IMPORT_MAX_EVENTS); split it"
        )
    draft = Draft(digest=hashlib.sha256(raw).hexdigest())
    prefix = f"import:{draft.digest[:DIGEST_CHARS]}"
    for number, (where, item) in enumerate(items, start=1):
        if not is_agui(item):
            kind = item.get("type")
            shown = kind[:60] if isinstance(kind, str) else type(kind).__name__
            raise TranscriptError(f"not an AG-UI event (type '{shown}')", where=where)
        draft.events.append({**item, "event_id": f"{prefix}:{number}"})
        draft.origins.append(where)
    return draft


def _looks_like_sse(text: str) -> bool:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first.startswith(("data:", "event:", "id:", ":", "retry:"))


# -- translation: the projector's side --------------------------------------------------
#
# `translate` turns one logged AG-UI event into a list of operations `(name, fields)`:
# native event types the projector already applies (`agent.status`, `agent.tool.started`,
# `agent.tool.completed`, `agent.tool.approval_requested`, `agent.reasoning.delta`)
# and the few AG-UI needs beyond them (`agui.*`), each documented where it is applied
# (chatui.ingest.projection, "AG-UI"). It reads the payload only: stored payloads were
# validated when they came in, and it still never trusts a shape it did not check.

Op = tuple[str, dict[str, Any]]


def translate(agui_type: str, event: dict[str, Any]) -> list[Op]:
    handler = _TRANSLATORS.get(agui_type)
    return handler(event) if handler is not None else []


def _text(event: dict[str, Any], name: str) -> str:
    value = event.get(name)
    return value if isinstance(value, str) else ""


def _run_started(event: dict[str, Any]) -> list[Op]:
    ops: list[Op] = [("agent.status", {"status": "running"})]
    run_input = event.get("input")
    if isinstance(run_input, dict) and isinstance(run_input.get("messages"), list):
        # The run's input names the user's message before anything of the run shows.
        ops.append(("agui.reconcile", {"messages": snapshot_messages(run_input["messages"])}))
    return ops


def _check_interrupt_ids(payload: dict[str, Any], index: int | None) -> None:
    """A RUN_FINISHED interrupt's `toolCallId` keys an approval row, as a tool call's id
    does: longer than a column holds is refused by name, as the event's own ids are."""
    outcome = payload.get("outcome")
    if not isinstance(outcome, dict) or not isinstance(outcome.get("interrupts"), list):
        return
    for number, interrupt in enumerate(outcome["interrupts"]):
        value = interrupt.get("toolCallId") if isinstance(interrupt, dict) else None
        if isinstance(value, str) and len(value) > MAX_ID_CHARS:
            name = f"outcome.interrupts[{number}].toolCallId"
            raise EventError(
                f"field '{name}' must be at most {MAX_ID_CHARS} characters",
                index=index,
                field=name,
            )


def _run_finished(event: dict[str, Any]) -> list[Op]:
    ops: list[Op] = []
    usage = token_usage(event.get("usage"))
    if usage:
        ops.append(("agui.usage", usage))
    outcome = event.get("outcome") if isinstance(event.get("outcome"), dict) else {}
    if outcome.get("type") == "interrupt":
        interrupts = [_interrupt(i) for i in outcome.get("interrupts") or [] if isinstance(i, dict)]
        waiting = []
        for interrupt in interrupts:
            if interrupt["reason"] == "tool_call" and interrupt["tool_call_id"]:
                ops.append(("agui.interrupt", interrupt))
            else:
                waiting.append(interrupt["message"] or interrupt["reason"])
        if waiting:  # one line says why the agent stopped, however many asked
            ops.append(("agui.stopped", {"reason": "; ".join(dict.fromkeys(waiting))}))
    elif outcome.get("type") == "cancelled":
        ops.append(("agui.stopped", {"reason": "cancelled"}))
    ops.append(("agent.status", {"status": "completed"}))
    return ops


def _interrupt(interrupt: dict[str, Any]) -> dict[str, Any]:
    fields = {
        "id": _text(interrupt, "id"),
        "reason": _text(interrupt, "reason"),
        "message": _text(interrupt, "message"),
        "tool_call_id": _text(interrupt, "toolCallId"),
    }
    expires = interrupt.get("expiresAt")
    if isinstance(expires, str):
        fields["expires_at"] = expires
    return fields


def _run_error(event: dict[str, Any]) -> list[Op]:
    message = _text(event, "message") or "The run failed."
    code = _text(event, "code")
    ops: list[Op] = []
    usage = token_usage(event.get("usage"))
    if usage:
        ops.append(("agui.usage", usage))
    text = f"{message} ({code})" if code else message
    # The exception ended the calls it interrupted (G6), not only the run.
    ops.append(("agui.run_error", {"error": text}))
    ops.append(("agent.status", {"status": "failed", "error_message": text}))
    return ops


def token_usage(usage: Any) -> dict[str, Any] | None:
    """S4: AG-UI's per-model `usage` entries summed: tokens in, out and in total."""
    if not isinstance(usage, list):
        return None
    totals = {"input_tokens": 0, "output_tokens": 0, "tokens": 0}
    models = []
    seen = False
    for entry in usage:
        if not isinstance(entry, dict):
            continue
        counts = {
            key: value
            for key in ("inputTokens", "outputTokens", "totalTokens")
            if isinstance(value := entry.get(key), int) and not isinstance(value, bool)
        }
        if not counts:
            continue
        seen = True
        totals["input_tokens"] += counts.get("inputTokens", 0)
        totals["output_tokens"] += counts.get("outputTokens", 0)
        totals["tokens"] += counts.get(
            "totalTokens", counts.get("inputTokens", 0) + counts.get("outputTokens", 0)
        )
        if isinstance(entry.get("model"), str) and entry["model"] not in models:
            models.append(entry["model"])
    if not seen:
        return None
    return {**totals, "model": ", ".join(models)}


def _step_started(event: dict[str, Any]) -> list[Op]:
    return [("agui.step", {"name": _text(event, "stepName"), "phase": "start"})]


def _step_finished(event: dict[str, Any]) -> list[Op]:
    return [("agui.step", {"name": _text(event, "stepName"), "phase": "end"})]


def _text_start(event: dict[str, Any]) -> list[Op]:
    return [("agui.text", {"message_id": _text(event, "messageId"), "role": _role(event)})]


def _role(event: dict[str, Any]) -> str:
    return _text(event, "role") or "assistant"


def _text_content(event: dict[str, Any]) -> list[Op]:
    return [
        ("agui.text", {"message_id": _text(event, "messageId"), "delta": _text(event, "delta")})
    ]


def _text_end(event: dict[str, Any]) -> list[Op]:
    return [("agui.text_end", {"message_id": _text(event, "messageId")})]


def _text_chunk(event: dict[str, Any]) -> list[Op]:
    fields: dict[str, Any] = {"message_id": _text(event, "messageId"), "chunk": True}
    if event.get("role") is not None:
        fields["role"] = _role(event)
    if _text(event, "delta"):
        fields["delta"] = _text(event, "delta")
    return [("agui.text", fields)]


def _tool_start(event: dict[str, Any]) -> list[Op]:
    started = {
        "tool_call_id": _text(event, "toolCallId"),
        "tool_name": _text(event, "toolCallName") or "tool",
    }
    return [("agent.tool.started", started), ("agui.call", _call_context(event))]


def _call_context(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_call_id": _text(event, "toolCallId"),
        "parent_message_id": _text(event, "parentMessageId"),
        "subagent_run_id": _text(event, "subagentRunId"),
    }


def _tool_args(event: dict[str, Any]) -> list[Op]:
    return [
        ("agui.args", {"tool_call_id": _text(event, "toolCallId"), "delta": _text(event, "delta")})
    ]


def _tool_end(event: dict[str, Any]) -> list[Op]:
    return [("agui.args_end", {"tool_call_id": _text(event, "toolCallId")})]


def _tool_chunk(event: dict[str, Any]) -> list[Op]:
    """A start (when it names a new call) and its args at once; the args are read as
    JSON as soon as they parse, since chunks have no end."""
    fields = {
        "tool_call_id": _text(event, "toolCallId"),
        "tool_name": _text(event, "toolCallName"),
        "delta": _text(event, "delta"),
        "parent_message_id": _text(event, "parentMessageId"),
        "subagent_run_id": _text(event, "subagentRunId"),
    }
    return [("agui.call_chunk", fields)]


def _tool_result(event: dict[str, Any]) -> list[Op]:
    completed: dict[str, Any] = {
        "tool_call_id": _text(event, "toolCallId"),
        "result": result_value(event.get("content")),
    }
    return [("agui.result", {**completed, "result_message_id": _text(event, "messageId")})]


def result_value(content: Any) -> Any:
    """A tool message's `content` as chatui's result: JSON text is read as JSON (an
    object or an array: MCP's `CallToolResult`, a `{"text", "details"}` result, a
    record list), else the text; a list of content parts is its text parts joined,
    or the parts themselves when any is not text."""
    if isinstance(content, list):
        if all(isinstance(part, dict) and part.get("type") == "text" for part in content):
            return "".join(_text(part, "text") for part in content)
        return content
    if not isinstance(content, str):
        return "" if content is None else content
    stripped = content.strip()
    if stripped[:1] in ("{", "["):
        try:
            decoded = decode_json(stripped, "result", max_depth=settings.CHATUI_MAX_JSON_DEPTH)
        except EventError:
            return content
        if isinstance(decoded, dict | list) and unstorable(decoded) is None:
            return decoded
    return content


def _reasoning_start(event: dict[str, Any]) -> list[Op]:
    return [("agui.reasoning", {"message_id": _text(event, "messageId"), "delta": ""})]


def _reasoning_content(event: dict[str, Any]) -> list[Op]:
    return [
        (
            "agui.reasoning",
            {"message_id": _text(event, "messageId"), "delta": _text(event, "delta")},
        )
    ]


def _reasoning_chunk(event: dict[str, Any]) -> list[Op]:
    return [
        (
            "agui.reasoning",
            {
                "message_id": _text(event, "messageId"),
                "delta": _text(event, "delta"),
                "chunk": True,
            },
        )
    ]


def _reasoning_end(event: dict[str, Any]) -> list[Op]:
    return [("agui.reasoning_end", {"message_id": _text(event, "messageId")})]


def _thinking_start(event: dict[str, Any]) -> list[Op]:
    return [("agui.reasoning", {"message_id": "", "delta": ""})]


def _thinking_content(event: dict[str, Any]) -> list[Op]:
    return [("agui.reasoning", {"message_id": "", "delta": _text(event, "delta")})]


def _thinking_end(event: dict[str, Any]) -> list[Op]:
    return [("agui.reasoning_end", {"message_id": ""})]


def _encrypted_value(event: dict[str, Any]) -> list[Op]:
    """Opaque, except where a framework states a tool result's outcome in it (Pydantic
    AI: `{"pydantic_ai": {"outcome": "retried", "retry": {…}}}` on the result's message):
    that outcome is applied to the entry."""
    entity = _text(event, "entityId")
    outcome = framework_outcome(_text(event, "encryptedValue"))
    if outcome is not None:
        return [("agui.outcome", {"entity_id": entity, **outcome})]
    if _text(event, "subtype") == "message":
        return [("agui.encrypted_reasoning", {"message_id": entity})]
    return []


def framework_outcome(value: str) -> dict[str, Any] | None:
    """Pydantic AI's outcome marker, as `{outcome, attempt?, max_attempts?}`."""
    if not value.startswith("{") or PYDANTIC_AI not in value:
        return None
    try:
        decoded = json.loads(value)
    except ValueError:
        return None
    marker = decoded.get(PYDANTIC_AI) if isinstance(decoded, dict) else None
    if not isinstance(marker, dict) or not isinstance(marker.get("outcome"), str):
        return None
    outcome: dict[str, Any] = {"outcome": marker["outcome"]}
    retry = marker.get("retry") if isinstance(marker.get("retry"), dict) else {}
    attempt, retries = retry.get("attempt"), retry.get("max_retries")
    if _small_count(attempt):
        outcome["attempt"] = attempt
    if _small_count(retries):
        outcome["max_attempts"] = retries + 1
    return outcome


def _small_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1000


def _messages_snapshot(event: dict[str, Any]) -> list[Op]:
    messages = event.get("messages")
    if not isinstance(messages, list):
        return []
    return [("agui.reconcile", {"messages": snapshot_messages(messages)})]


def _state_snapshot(event: dict[str, Any]) -> list[Op]:
    """Kept (the admin shows it); the messages a framework keeps in its state (LangGraph
    does) reconcile like a MESSAGES_SNAPSHOT."""
    snapshot = event.get("snapshot")
    if isinstance(snapshot, dict) and isinstance(snapshot.get("messages"), list):
        return [("agui.reconcile", {"messages": snapshot_messages(snapshot["messages"])})]
    return []


def _raw(event: dict[str, Any]) -> list[Op]:
    """LangGraph's `on_tool_error`, passed through as RAW: the failed call's error, when
    the event names the call."""
    inner = event.get("event")
    if not isinstance(inner, dict) or inner.get("event") != "on_tool_error":
        return []
    data = inner.get("data") if isinstance(inner.get("data"), dict) else {}
    call_id = _raw_tool_call_id(data)
    if not call_id:
        return []
    error = data.get("error")
    text = error if isinstance(error, str) else ""
    if not text and isinstance(error, dict) and isinstance(error.get("message"), str):
        text = error["message"]
    # LangGraph serialises the exception as {} : the error's text comes with the snapshot.
    return [("agui.tool_error", {"tool_call_id": call_id, "error": text.strip() or TOOL_FAILED})]


#: An error known to have happened, whose text is not known (yet): a snapshot's replaces it.
TOOL_FAILED = "tool failed"


def _raw_tool_call_id(data: dict[str, Any]) -> str:
    if isinstance(data.get("tool_call_id"), str):
        return data["tool_call_id"]
    tool_input = data.get("input")
    if isinstance(tool_input, dict):
        for key in ("tool_call_id", "id"):
            if isinstance(tool_input.get(key), str):
                return tool_input[key]
    call = data.get("tool_call")
    if isinstance(call, dict) and isinstance(call.get("id"), str):
        return call["id"]
    return ""


def _subagent_started(event: dict[str, Any]) -> list[Op]:
    return [
        (
            "agui.subagent",
            {
                "subagent_run_id": _text(event, "subagentRunId"),
                "parent_tool_call_id": _text(event, "parentToolCallId"),
            },
        )
    ]


_TRANSLATORS = {
    "RUN_STARTED": _run_started,
    "RUN_FINISHED": _run_finished,
    "RUN_ERROR": _run_error,
    "STEP_STARTED": _step_started,
    "STEP_FINISHED": _step_finished,
    "TEXT_MESSAGE_START": _text_start,
    "TEXT_MESSAGE_CONTENT": _text_content,
    "TEXT_MESSAGE_END": _text_end,
    "TEXT_MESSAGE_CHUNK": _text_chunk,
    "TOOL_CALL_START": _tool_start,
    "TOOL_CALL_ARGS": _tool_args,
    "TOOL_CALL_END": _tool_end,
    "TOOL_CALL_CHUNK": _tool_chunk,
    "TOOL_CALL_RESULT": _tool_result,
    "REASONING_START": _reasoning_start,
    "REASONING_MESSAGE_START": _reasoning_start,
    "REASONING_MESSAGE_CONTENT": _reasoning_content,
    "REASONING_MESSAGE_CHUNK": _reasoning_chunk,
    "REASONING_MESSAGE_END": _reasoning_end,
    "REASONING_END": _reasoning_end,
    "REASONING_ENCRYPTED_VALUE": _encrypted_value,
    "THINKING_START": _thinking_start,
    "THINKING_TEXT_MESSAGE_START": _thinking_start,
    "THINKING_TEXT_MESSAGE_CONTENT": _thinking_content,
    "THINKING_TEXT_MESSAGE_END": _thinking_end,
    "THINKING_END": _thinking_end,
    "MESSAGES_SNAPSHOT": _messages_snapshot,
    "STATE_SNAPSHOT": _state_snapshot,
    "RAW": _raw,
    "SUBAGENT_STARTED": _subagent_started,
    # STATE_DELTA, ACTIVITY_*, CUSTOM, SUBAGENT_FINISHED/ERROR: kept in the log, shown
    # in the admin; nothing of them is a message.
}


# -- snapshots: AG-UI's messages (and LangChain's, as LangGraph keeps them in its state) --

_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def snapshot_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """Messages as plain data the projector reconciles: `{role, id, content}` plus, for
    an assistant, `tool_calls` [{id, name, args | args_summary}], and for a tool message,
    `tool_call_id`, `result` and `error` (None: it succeeded)."""
    plain = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if not isinstance(role, str):
            role = _LANGCHAIN_ROLES.get(message.get("type"), "")
        entry: dict[str, Any] = {"role": role, "id": _key(message, "id")}
        if role == "user":
            entry["content"] = _content_text(message.get("content"))
        elif role == "assistant":
            entry["content"] = _content_text(message.get("content"))
            entry["tool_calls"] = _snapshot_calls(message)
        elif role == "tool":
            call_id = _key(message, "toolCallId") or _key(message, "tool_call_id")
            if not call_id:
                continue
            entry["tool_call_id"] = call_id
            entry["result"] = result_value(message.get("content"))
            entry["error"] = _tool_error(message)
        else:
            continue
        plain.append(entry)
    return plain


def _tool_error(message: dict[str, Any]) -> str | None:
    """A tool message's error text, or None when it succeeded. ag-ui-langgraph sets
    `error` to the bare word "error" (its status) and keeps the text in `content`; a
    LangChain message in a state says `status: "error"`."""
    error = message.get("error")
    failed = (isinstance(error, str) and error.strip()) or message.get("status") == "error"
    if not failed:
        return None
    text = _content_text(message.get("content")).strip()
    if isinstance(error, str) and error.strip() and (" " in error.strip() or not text):
        return error
    return text or (error if isinstance(error, str) and error.strip() else TOOL_FAILED)


def _key(item: dict[str, Any], name: str) -> str:
    """An id a snapshot names, if chatui can key a row by it (else "": none)."""
    value = _text(item, name)
    return value if value.strip() and len(value) <= MAX_ID_CHARS else ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            _text(part, "text")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _snapshot_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("toolCalls") or message.get("tool_calls") or []
    plain = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict) or not _key(call, "id"):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        name = _text(function, "name") or _text(call, "name") or "tool"
        entry: dict[str, Any] = {"id": call["id"], "name": name[:MAX_TOOL_NAME_CHARS]}
        arguments = function.get("arguments", call.get("args"))
        entry.update(parsed_args(arguments))
        plain.append(entry)
    return plain


def parsed_args(arguments: Any) -> dict[str, Any]:
    """`{"args": {...}}` when the arguments are (or parse as) a JSON object, else
    `{"args_summary": text}`, else nothing."""
    if isinstance(arguments, dict):
        return {"args": arguments} if unstorable(arguments) is None else {}
    if not isinstance(arguments, str) or not arguments.strip():
        return {}
    try:
        decoded = decode_json(arguments, "arguments", max_depth=settings.CHATUI_MAX_JSON_DEPTH)
    except EventError:
        decoded = None
    if isinstance(decoded, dict) and unstorable(decoded) is None:
        return {"args": decoded}
    return {"args_summary": arguments}
