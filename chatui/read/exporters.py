"""Transcript exports (docs/events.md#exports). Read-only: plain queries, never a write.

Why it is long: three formats (messages, events, OTLP) that must agree on masking, and
OTLP's mapping of runs, tools, approvals and notes onto spans, read in one place.

- `messages`: the canonical seed-000 JSON, `{"conversation": {...}, "messages": [...]}`.
- `events`:   the raw event log as JSONL, one event per line in seq order, each
  as a runtime would post it (`event_to_input`); `import_transcript --format
  chatui` turns it back into the same messages.
- `otlp`:     OpenTelemetry GenAI spans as OTLP/JSON (`resourceSpans` →
  `scopeSpans` → `spans`), so a transcript opens in trace tools:

  * one `invoke_agent` span per run (INTERNAL), from the run's earliest to its
    latest event; status OK when the run completed, ERROR with the run's
    `error_message` when it failed, UNSET while it runs. Each run is its own
    trace; `gen_ai.conversation.id` ties a conversation's traces together.
  * one `execute_tool {name}` span per tool entry (INTERNAL), a child of its
    run's span, or of its parent tool's span for a nested tool
    (`parent_tool_call_id`). It runs from the tool's `agent.tool.started` to its
    `agent.tool.completed`; without a start, from `completed − duration_ms`
    (or the entry's creation); unfinished, to the run's end with status
    UNSET. Status OK, or ERROR with the tool's error text (`error.type` `_OTHER`).
  * ids are derived, not random: trace id = sha256("trace", conversation, run)[:16
    bytes], span ids = sha256("run"|"tool", conversation, run[, tool call id])[:8
    bytes], so exporting twice gives the same file.
  * attributes: `gen_ai.operation.name`, `gen_ai.conversation.id`,
    `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.call.arguments` (the
    args as JSON), `gen_ai.tool.call.result` (the result text), `error.type`;
    token usage as `gen_ai.usage.total_tokens` on the run span (the sum of the
    run's `agent.step.completed` `tokens`: chatui's event contract carries one
    count, not OTel's input/output split); and `chatui.*` for what has no
    convention (run id and status, tool status, args summary, duration).
  * auditors' notes (docs/sharing.md#notes): `gen_ai.evaluation.result` span events of the
    tool's or the run's span (label, text, author, seq).
  * tool approval (docs/events.md#approvals): the request and the decision are span events of the
    tool's span, `chatui.tool.approval_requested` (reason) and `chatui.tool.approval`
    (decision, decided_by, note), at the times the server recorded them.
    A stored number that ingest would not accept today (a row from before the
    limits of chatui.ingest.events) is left out, never a failed export.
  Times are unix nanoseconds as decimal strings, ids lowercase hex (OTLP/JSON).

Why it is long: three export formats, each a contract of its own read by other tools (the
OTLP mapping alone is half), and the events export's proof
(docs/auditing.md#verifying-an-export) must be written beside the lines it proves; split,
the formats would share their masking across modules.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import IO, Any

from django.db.models import Max, Min
from django.utils.dateparse import parse_datetime

from chatui.ingest.chain import event_content
from chatui.ingest.dialects import agui
from chatui.ingest.values import MAX_DURATION_MS, MAX_TOKENS, contract_number
from chatui.models import Checkpoint, Conversation, Event, Message, Note, Role, Run, ToolStatus
from chatui.secrets import MASKED_ROLES, mask_text, mask_value, masked_fields

from .outcomes import outcome_of
from .selectors import messages_of
from .serializers import conversation_to_dict, event_to_input, message_to_dict
from .verify import erased_in

#: format -> (content type, file name suffix)
EXPORT_FORMATS: dict[str, tuple[str, str]] = {
    "messages": ("application/json", "messages.json"),
    "events": ("application/x-ndjson", "events.jsonl"),
    "otlp": ("application/json", "otlp.json"),
}

UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SPAN_KIND_INTERNAL = 1
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2
SCOPE = {"name": "chatui.read.exporters", "version": "1"}
RESOURCE_ATTRIBUTES = {"service.name": "chatui"}


# -- messages and events --------------------------------------------------------


#: T3: the fields of a logged event that carry tool text (args, results, errors,
#: details, progress), in chatui's vocabulary and AgentSpine's extras, and the record and
#: reasoning a session file's `session.record` keeps (docs/events.md#sessions).
TOOL_TEXT_FIELDS = frozenset(
    {
        "record",
        "text",
        "args",
        "args_summary",
        "result",
        "error",
        "details",
        "output",
        "partial",
        "result_preview",
        "tool_results_preview",
        "tool_calls",
    }
)


#: T3: the events whose `message` is shown as a tool's progress or a status line.
MESSAGE_TEXT_EVENTS = frozenset({"agent.tool.progress", "agent.status"})


def masked_message(data: dict[str, Any]) -> dict[str, Any]:
    """T3: a canonical message with secrets masked as the page shows it (the same
    `secrets.masked_fields` as the presenters: tool text and status lines)."""
    if data.get("role") not in MASKED_ROLES:
        return data
    content, metadata = masked_fields(data["role"], data.get("content", ""), data.get("metadata"))
    masked = {**data, "content": content}
    if "metadata" in data:
        masked["metadata"] = metadata
    return masked


def masked_event(data: dict[str, Any]) -> dict[str, Any]:
    """T3: an exported event with the secrets in its tool text, its progress or status
    line, its reasoning and a failed run's `error_message` masked."""
    kind = data.get("type")
    if kind in agui.TYPES:
        return {
            key: value if agui.holds_no_tool_text(kind, key) else mask_value(value)
            for key, value in data.items()
        }
    masked = {
        key: mask_value(value) if key in TOOL_TEXT_FIELDS else value for key, value in data.items()
    }
    for key in ("message", "error_message"):
        if key == "message" and data.get("type") not in MESSAGE_TEXT_EVENTS:
            continue
        if isinstance(data.get(key), str):
            masked[key] = mask_text(data[key])
    # Reasoning quotes what the model read (a key in a file, say): masked, as AG-UI's
    # reasoning events and a session's reasoning record are.
    if kind == "agent.reasoning.delta" and isinstance(data.get("delta"), str):
        masked["delta"] = mask_text(data["delta"])
    return masked


def export_messages(conversation: Conversation, *, reveal: bool = False) -> dict[str, Any]:
    """The canonical messages of seed 000, with the conversation; tool secrets
    masked unless `reveal` (the exporting user holds chatui.view_secrets)."""
    shown = message_to_dict if reveal else lambda message: masked_message(message_to_dict(message))
    return {
        "conversation": conversation_to_dict(conversation),
        "messages": [shown(message) for message in messages_of(conversation)],
        # docs/sharing.md#notes: the auditors' notes, each with its target.
        "notes": [note_to_dict(note) for note in _notes_of(conversation)],
    }


def note_to_dict(note: Note) -> dict[str, Any]:
    return {
        "seq": note.seq,
        "target": {note.target_kind: note.target_id},
        "text": note.text,
        "label": note.label or None,
        "refers_to": note.refers_to,
        "author": note.author,
        "at": note.at.isoformat(),
    }


def _notes_of(conversation: Conversation) -> list[Note]:
    return list(Note.objects.filter(conversation=conversation).order_by("seq"))


def export_events(conversation: Conversation, *, reveal: bool = False) -> Iterator[dict[str, Any]]:
    """The event log in seq order, each event as a runtime would post it; tool
    secrets masked unless `reveal` (the log itself keeps what was sent)."""
    for _, data in _exported_events(conversation, reveal=reveal):
        yield data


def _exported_events(
    conversation: Conversation, *, reveal: bool
) -> Iterator[tuple[Event, dict[str, Any]]]:
    events = Event.objects.filter(conversation=conversation).order_by("seq")
    for event in events.iterator(chunk_size=1000):
        data = event_to_input(event)
        yield event, data if reveal else masked_event(data)


#: The key of an exported event's proof, and of a checkpoint's line
#: (docs/auditing.md#verifying-an-export):
#: `import_transcript --format chatui` drops both.
PROOF_KEY = "chatui_proof"
CHECKPOINT_KEY = "chatui_checkpoint"


def export_proven_events(
    conversation: Conversation, *, reveal: bool = False
) -> Iterator[dict[str, Any]]:
    """The events export's lines (docs/auditing.md#verifying-an-export): each event as
    `export_events` gives it, with its proof — its seq, type, ids and time as the events API
    serves them, its content and chain hashes, which of the line's keys are not its payload
    (`envelope`), and whether the line is `masked` (then its content hash cannot be
    recomputed from it) —
    then the conversation's signed checkpoints up to the last exported event, one a line.
    `chatui-verify` checks such a file offline (chatui_client.verify)."""
    last = 0
    erased = erased_in(conversation)
    for event, data in _exported_events(conversation, reveal=reveal):
        content = event_content(event)
        proof = {
            "seq": event.seq,
            "type": event.type,
            "event_id": event.event_id,
            "run_id": content["run_id"],
            "timestamp": content["timestamp"],
            "envelope": [key for key in data if key not in event.payload],
            "content_hash": event.content_hash,
            "chain_hash": event.chain_hash,
        }
        if erased.get(event.seq, (0, ""))[1] == event.content_hash:
            # A tombstone (docs/auditing.md#erasing-content): its content hash is the one
            # its `audit.erasure` event recorded, not recomputable from the line.
            proof["erased"] = True
        elif not reveal and data != event_to_input(event):
            proof["masked"] = True
        last = event.seq
        yield {**data, PROOF_KEY: proof}
    checkpoints = Checkpoint.objects.filter(conversation=conversation, size__lte=last)
    for checkpoint in checkpoints.order_by("size", "id"):
        yield {CHECKPOINT_KEY: {"size": checkpoint.size, "note": checkpoint.note}}


# -- OpenTelemetry --------------------------------------------------------------


def unix_nanos(moment: datetime) -> int:
    """Exact (no float rounding) nanoseconds since the unix epoch."""
    delta = moment - UNIX_EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def derived_id(*parts: str, size: int) -> str:
    """A deterministic id of `size` bytes, as hex (never all zeros, which OTLP forbids)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[: size * 2]
    return digest if digest.strip("0") else "0" * (size * 2 - 1) + "1"


def trace_id(conversation_id: str, run_id: str) -> str:
    return derived_id("trace", conversation_id, run_id, size=16)


def run_span_id(conversation_id: str, run_id: str) -> str:
    return derived_id("run", conversation_id, run_id, size=8)


def tool_span_id(conversation_id: str, run_id: str, tool_key: str) -> str:
    return derived_id("tool", conversation_id, run_id, tool_key, size=8)


def attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        typed = {"boolValue": value}
    elif isinstance(value, int):
        typed = {"intValue": str(value)}
    elif isinstance(value, float):
        typed = {"doubleValue": value}
    else:
        typed = {"stringValue": str(value)}
    return {"key": key, "value": typed}


def _attributes(pairs: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [attribute(key, value) for key, value in pairs if value is not None and value != ""]


def _status(code: int, message: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"code": code}
    if message:
        status["message"] = message
    return status


def export_otlp(conversation: Conversation, *, reveal: bool = False) -> dict[str, Any]:
    """The conversation's runs and tool calls as OTLP/JSON trace data."""
    conversation_id = str(conversation.pk)
    spans_by_run = _run_windows(conversation)
    tools = list(
        Message.objects.filter(conversation=conversation, role=Role.TOOL).order_by("position")
    )
    if not reveal:
        tools = [_masked_tool(tool) for tool in tools]
    for tool in tools:
        if tool.run_id not in spans_by_run:  # a tool whose events carried no run_id
            spans_by_run[tool.run_id] = (tool.timestamp, tool.timestamp)
    runs = {run.run_id: run for run in Run.objects.filter(conversation=conversation)}
    if not reveal:
        for run in runs.values():  # T3: the run span's status message is its error line
            run.error_message = mask_text(run.error_message)
    tokens = _tokens_by_run(conversation)
    started, completed = _tool_times(conversation)

    notes = _note_events(conversation)
    spans: list[dict[str, Any]] = []
    for run_id, (first, last) in spans_by_run.items():
        run_tools = [tool for tool in tools if tool.run_id == run_id]
        if not run_id and not run_tools:
            continue  # events outside any run and without tools: nothing to trace
        span = _run_span(conversation_id, run_id, first, last, runs.get(run_id), tokens)
        spans.append(_with_events(span, notes.get(("run_id", run_id), [])))
        keys = {tool.tool_call_id: _tool_key(tool) for tool in run_tools if tool.tool_call_id}
        for tool in run_tools:
            span = _tool_span(conversation_id, run_id, tool, keys, last, started, completed)
            noted = notes.get(("tool_call_id", tool.tool_call_id), []) if tool.tool_call_id else []
            spans.append(_with_events(span, noted))
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(list(RESOURCE_ATTRIBUTES.items()))},
                "scopeSpans": [{"scope": dict(SCOPE), "spans": spans}],
            }
        ]
    }


def _masked_tool(tool: Message) -> Message:
    """T3: an unsaved copy of a tool message with its args, result, error and
    details masked, for the span attributes (exporters only read)."""
    masked = copy.copy(tool)
    masked.content, masked.metadata = masked_fields(tool.role, tool.content, tool.metadata)
    return masked


def _run_windows(conversation: Conversation) -> dict[str, tuple[datetime, datetime]]:
    """run_id -> (earliest, latest) event time, runs in order of their first event."""
    rows = (
        Event.objects.filter(conversation=conversation)
        .values("run_id")
        .annotate(first=Min("timestamp"), last=Max("timestamp"), first_seq=Min("seq"))
        .order_by("first_seq")
    )
    return {row["run_id"]: (row["first"], row["last"]) for row in rows}


def _tokens_by_run(conversation: Conversation) -> dict[str, int | None]:
    """run_id -> its steps' total tokens; None when a step's stored count is malformed."""
    totals: dict[str, int | None] = {}
    assistant = Message.objects.filter(conversation=conversation, role=Role.ASSISTANT)
    for run_id, metadata in assistant.values_list("run_id", "metadata"):
        given = (metadata or {}).get("tokens")
        if given is None:
            continue
        count = contract_number(given, MAX_TOKENS, integral=True)
        total = totals.get(run_id, 0)
        totals[run_id] = None if count is None or total is None else total + count
    return totals


def _tool_times(
    conversation: Conversation,
) -> tuple[dict[str, tuple[int, datetime]], dict[str, tuple[int, datetime]]]:
    """tool_call_id -> (seq, time) of its first started and first completed event.

    The first of each is the one the projection applied (later ones change nothing).
    """
    started: dict[str, tuple[int, datetime]] = {}
    completed: dict[str, tuple[int, datetime]] = {}
    rows = (
        Event.objects.filter(
            conversation=conversation, type__in=("agent.tool.started", "agent.tool.completed")
        )
        .exclude(tool_call_id="")
        .order_by("seq")
        .values_list("type", "tool_call_id", "seq", "timestamp")
    )
    for kind, call_id, seq, moment in rows:
        target = started if kind == "agent.tool.started" else completed
        target.setdefault(call_id, (seq, moment))
    return started, completed


def _tool_key(tool: Message) -> str:
    return tool.tool_call_id or tool.message_id


def _run_span(
    conversation_id: str,
    run_id: str,
    first: datetime,
    last: datetime,
    run: Run | None,
    tokens: dict[str, int | None],
) -> dict[str, Any]:
    status = _status(STATUS_UNSET)
    error_type = None
    if run is not None and run.status == "completed":
        status = _status(STATUS_OK)
    elif run is not None and run.status == "failed":
        status = _status(STATUS_ERROR, run.error_message or "the run failed")
        error_type = "_OTHER"
    return {
        "traceId": trace_id(conversation_id, run_id),
        "spanId": run_span_id(conversation_id, run_id),
        "name": "invoke_agent",
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(unix_nanos(first)),
        "endTimeUnixNano": str(unix_nanos(last)),
        "attributes": _attributes(
            [
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.conversation.id", conversation_id),
                ("gen_ai.usage.total_tokens", tokens.get(run_id)),
                ("chatui.run_id", run_id),
                ("chatui.run.status", run.status if run is not None else None),
                ("error.type", error_type),
            ]
        ),
        "status": status,
    }


def _tool_span(
    conversation_id: str,
    run_id: str,
    tool: Message,
    keys: dict[str, str],
    run_end: datetime,
    started: dict[str, tuple[int, datetime]],
    completed: dict[str, tuple[int, datetime]],
) -> dict[str, Any]:
    meta = tool.metadata or {}
    call_id = tool.tool_call_id
    done = completed.get(call_id) if call_id else None
    began = started.get(call_id) if call_id else None
    if began is not None and done is not None and began[0] > done[0]:
        began = None  # a late `started` for a finished tool changed nothing
    duration = contract_number(meta.get("tool_duration_ms"), MAX_DURATION_MS)
    start = tool.timestamp
    if began is not None:
        start = began[1]
    elif done is not None and duration is not None:
        with contextlib.suppress(OverflowError):  # before the year 1: the entry's own time
            start = done[1] - timedelta(milliseconds=duration)
    end = done[1] if done is not None else run_end
    end = max(end, start)

    if tool.tool_status == ToolStatus.ERROR:
        status = _status(STATUS_ERROR, meta.get("tool_error") or tool.content)
    elif tool.tool_status == ToolStatus.SUCCESS:
        status = _status(STATUS_OK)
    else:
        status = _status(STATUS_UNSET)  # queued or still running
    parent = tool.parent_tool_call_id
    if parent and parent in keys:
        parent_span = tool_span_id(conversation_id, run_id, keys[parent])
    else:
        parent_span = run_span_id(conversation_id, run_id)
    args = meta.get("args")
    return {
        "traceId": trace_id(conversation_id, run_id),
        "spanId": tool_span_id(conversation_id, run_id, _tool_key(tool)),
        "parentSpanId": parent_span,
        "name": f"execute_tool {tool.tool_name}",
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(unix_nanos(start)),
        "endTimeUnixNano": str(unix_nanos(end)),
        "attributes": _attributes(
            [
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", tool.tool_name),
                ("gen_ai.tool.call.id", call_id),
                ("gen_ai.conversation.id", conversation_id),
                (
                    "gen_ai.tool.call.arguments",
                    json.dumps(args, ensure_ascii=False) if args is not None else None,
                ),
                (
                    "gen_ai.tool.call.result",
                    tool.content if tool.tool_status == ToolStatus.SUCCESS else None,
                ),
                ("chatui.run_id", run_id),
                ("chatui.tool.status", tool.tool_status),
                # W4 (docs/rendering.md#w4): what the call counts as everywhere ("retried": an
                # attempt a later one retried, part of its call, not a failure of it)
                ("chatui.tool.outcome", str(outcome_of(tool.tool_status, tool.metadata))),
                ("chatui.tool.args_summary", meta.get("args_summary")),
                ("chatui.tool.duration_ms", duration),
                ("chatui.tool.parent_call_id", parent),
                ("error.type", "_OTHER" if status["code"] == STATUS_ERROR else None),
            ]
        ),
        "status": status,
        **_approval_span_events(meta),
    }


def _approval_span_events(meta: dict[str, Any]) -> dict[str, Any]:
    """docs/events.md#approvals: the request and its decision as span events on the tool's span
    ({} when the tool was never put to a person, so other spans stay as they were)."""
    approval = meta.get("approval")
    if not isinstance(approval, dict):
        return {}
    events = []
    requested = _moment(approval.get("requested_at"))
    if requested is not None:
        events.append(
            _span_event(
                "chatui.tool.approval_requested",
                requested,
                [("chatui.approval.reason", approval.get("reason") or None)],
            )
        )
    decided = _moment(approval.get("decided_at"))
    if approval.get("decision") and decided is not None:
        events.append(
            _span_event(
                "chatui.tool.approval",
                decided,
                [
                    ("chatui.approval.decision", approval.get("decision")),
                    ("chatui.approval.decided_by", approval.get("decided_by") or None),
                    ("chatui.approval.note", approval.get("note") or None),
                ],
            )
        )
    return {"events": events} if events else {}


def _note_events(conversation: Conversation) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """docs/sharing.md#notes: each auditor's note as a `gen_ai.evaluation.result` span event,
    by its target: a tool call's span, or a run's (a note on a message goes to the span
    of the message's run)."""
    runs_of_messages = dict(
        Message.objects.filter(conversation=conversation).values_list("message_id", "run_id")
    )
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for note in _notes_of(conversation):
        key = (note.target_kind, note.target_id)
        if note.target_kind == "message_id":
            key = ("run_id", runs_of_messages.get(note.target_id, ""))
        event = _span_event(
            "gen_ai.evaluation.result",
            note.at,
            [
                ("gen_ai.evaluation.name", "chatui.audit_note"),
                ("gen_ai.evaluation.score.label", note.label or None),
                ("gen_ai.evaluation.explanation", note.text),
                ("chatui.note.author", note.author or None),
                ("chatui.note.seq", note.seq),
                ("chatui.note.refers_to", note.refers_to),
                ("chatui.note.target", f"{note.target_kind}:{note.target_id}"),
            ],
        )
        found.setdefault(key, []).append(event)
    return found


def _with_events(span: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    if events:
        span["events"] = [*span.get("events", []), *events]
    return span


def _span_event(name: str, moment: datetime, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {
        "timeUnixNano": str(unix_nanos(moment)),
        "name": name,
        "attributes": _attributes(pairs),
    }


def _moment(raw: Any) -> datetime | None:
    """A stored ISO time, or None when it is missing or not one."""
    try:
        moment = parse_datetime(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    if moment is not None and moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment


# -- files ------------------------------------------------------------------------


def iter_export(conversation: Conversation, format: str, *, reveal: bool = False) -> Iterator[str]:
    """The export as text chunks (the events export streams line by line).
    T3: secrets in tool text are masked unless `reveal`."""
    if format == "messages":
        document = export_messages(conversation, reveal=reveal)
        yield json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    elif format == "events":
        for line in export_proven_events(conversation, reveal=reveal):
            yield json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
    elif format == "otlp":
        yield (
            json.dumps(export_otlp(conversation, reveal=reveal), indent=2, ensure_ascii=False)
            + "\n"
        )
    else:
        raise ValueError(
            f"unknown export format '{format}'; the formats are: {', '.join(EXPORT_FORMATS)}"
        )


def export_text(conversation: Conversation, format: str, *, reveal: bool = False) -> str:
    return "".join(iter_export(conversation, format, reveal=reveal))


def write_export(
    conversation: Conversation, format: str, stream: IO[str], *, reveal: bool = False
) -> None:
    for chunk in iter_export(conversation, format, reveal=reveal):
        stream.write(chunk)
