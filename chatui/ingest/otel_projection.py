"""The projector's handlers for OpenTelemetry's spans and log records
(docs/events.md#otlp): each is logged as received (`otel.span`, `otel.log`) and read
here, by its convention's translator, into what the native events would have done —
through the projector's own handlers, so a span's tool entry is any tool entry.

A trace is a run (`otel-<trace id>`, named by the receiver): its root span ends it.
Tool spans nest under their nearest ancestor tool span. Spans are exported as they
end, children before parents, often in an earlier export: a tool span whose ancestry
is not known yet waits (its entry says for which span, `otel_waits_for`) and is placed
when that span comes, in whatever later batch.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from chatui.ingest.dialects import claude_code_logs, openinference, otel_genai
from chatui.ingest.dialects.spans import Reading, at, failure, is_root, text, times
from chatui.models import Event, Message, Role, ToolStatus

SPAN = "otel.span"
LOG = "otel.log"
OTEL_TYPES = (SPAN, LOG)
#: A tool entry whose ancestry was not known yet: the span id it waits for.
WAITS_FOR = "otel_waits_for"
MAX_TOKENS = 10**12


def read_span(span: dict[str, Any]) -> Reading:
    attrs = span.get("attributes") or {}
    if openinference.speaks(attrs):
        return openinference.read(span)
    return otel_genai.read(span)


def read_event(event: Event) -> Reading:
    if event.type == LOG:
        return claude_code_logs.read(event.payload["record"], event.event_id or str(event.seq))
    span = event.payload["span"]
    return scoped(read_span(span), span["traceId"])


def scoped(reading: Reading, trace: str) -> Reading:
    """Call ids as the trace's: models reuse them across runs (`call_0`, or a scripted
    model's), and a conversation's tool entries are found by call id."""
    suffix = "@" + trace[:16]
    if reading.tool is not None:
        reading.tool.call_id = reading.tool.call_id[:180] + suffix
    for call in (reading.step or {}).get("tool_calls", ()):
        if "id" in call:
            call["id"] = call["id"][:180] + suffix
    return reading


def reading_ids(reading: Reading) -> tuple[set[str], set[str]]:
    """The message ids and tool call ids applying `reading` will look up."""
    message_ids = {message_id for message_id, _ in reading.users}
    call_ids = {call["id"] for call in (reading.step or {}).get("tool_calls", ()) if "id" in call}
    if reading.tool is not None:
        call_ids.add(reading.tool.call_id)
    return message_ids, call_ids


def step_message_id(event: Event) -> str:
    return "otel-step:" + (event.event_id or str(event.seq)).removeprefix("otel:")


@dataclass
class _Spans:
    #: (trace, span id) -> (its tool call id, or "" when it is no tool; its parent span id).
    known: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    #: Spans looked for in the log and not found.
    missing: set[tuple[str, str]] = field(default_factory=set)
    #: (trace, span id) -> the tool entries waiting for that span.
    waiting: dict[tuple[str, str], list[Message]] = field(default_factory=lambda: defaultdict(list))
    #: Traces whose stored waiting entries were loaded.
    loaded: set[str] = field(default_factory=set)
    readings: dict[int, Reading] = field(default_factory=dict)
    #: Runs ended by root spans in this batch: (event, status payload, when it ended).
    ends: list[tuple[Event, dict[str, Any], Any]] = field(default_factory=list)


class OtelHandlers:
    """Mixed into chatui.ingest.projection.Projector."""

    _otel_spans: _Spans | None = None
    #: The call ids of this batch's tool spans: a model call's step does not queue
    #: these (an entry written twice, queued then started, for the same card).
    _otel_batch_calls: frozenset[str] | set[str] = frozenset()

    def _otel(self) -> _Spans:
        if self._otel_spans is None:
            self._otel_spans = _Spans()
        return self._otel_spans

    def _otel_reading(self, event: Event) -> Reading:
        readings = self._otel().readings
        if event.seq not in readings:
            readings[event.seq] = read_event(event)
        return readings[event.seq]

    def _otel_prefetch(self, event: Event, message_ids: set[str], call_ids: set[str]) -> None:
        reading = self._otel_reading(event)
        if event.type == SPAN:  # the batch's spans are its nesting's first source
            span = event.payload["span"]
            call_id = reading.tool.call_id if reading.tool else ""
            key = (span["traceId"], span["spanId"])
            self._otel().known[key] = (call_id, span.get("parentSpanId") or "")
            if call_id:
                if not isinstance(self._otel_batch_calls, set):
                    self._otel_batch_calls = set()
                self._otel_batch_calls.add(call_id)
        found_messages, found_calls = reading_ids(reading)
        message_ids |= found_messages
        call_ids |= found_calls
        if reading.step is not None:
            message_ids.add(step_message_id(event))

    # -- the handlers ---------------------------------------------------------------

    def _on_otel_span(self, event: Event, payload: dict[str, Any]) -> None:
        span = payload["span"]
        reading = self._otel_reading(event)
        trace, span_id = span["traceId"], span["spanId"]
        parent = span.get("parentSpanId") or ""
        state = self._otel()
        state.known[(trace, span_id)] = (reading.tool.call_id if reading.tool else "", parent)
        self._otel_apply(event, reading, trace=trace, parent=parent, ends=times(span)[1])
        self._otel_place_waiting(event, trace, span_id)
        if is_root(span):
            self._otel_end_run(event, span)

    def _on_otel_log(self, event: Event, payload: dict[str, Any]) -> None:
        self._otel_apply(event, self._otel_reading(event), trace="", parent="", ends=0)

    def _otel_apply(
        self, event: Event, reading: Reading, *, trace: str, parent: str, ends: int
    ) -> None:
        for message_id, content in reading.users:
            self._on_user_message(event, {"message_id": message_id, "content": content})
        if reading.step is not None:
            step = dict(reading.step)
            if "tokens" in step:
                step["tokens"] = min(step["tokens"], MAX_TOKENS)
            self._on_agent_step_completed(event, {"message_id": step_message_id(event), **step})
        call = reading.tool
        if call is None:
            return
        parent_call, waits_for = self._otel_parent(trace, parent) if trace else ("", "")
        if not call.id_known:
            call.call_id = self._otel_queued_call(event.run_id, call.name) or call.call_id
        started: dict[str, Any] = {"tool_call_id": call.call_id, "tool_name": call.name}
        if isinstance(call.args, dict):
            started["args"] = call.args
        elif call.args not in (None, ""):
            started["args_summary"] = text(call.args)
        if parent_call:
            started["parent_tool_call_id"] = parent_call
        self._on_agent_tool_started(event, started)
        completed: dict[str, Any] = {"tool_call_id": call.call_id, "tool_name": call.name}
        if call.has_result:
            completed["result"] = call.result
        if call.error:
            completed["error"] = call.error
        if call.duration_ms is not None:
            completed["duration_ms"] = min(call.duration_ms, MAX_TOKENS)
        self._on_agent_tool_completed(event, completed)
        if waits_for:
            message = self._tool(call.call_id)
            if message is not None and not message.parent_tool_call_id:
                message.metadata[WAITS_FOR] = waits_for
                self._save(message, event)
                self._otel().waiting[(trace, waits_for)].append(message)

    def _otel_queued_call(self, run_id: str, name: str) -> str:
        """The earliest call of `name` the model asked for in this run that has not run yet."""
        self.flush()
        queued = (
            Message.objects.filter(
                conversation_id=self.conversation.pk,
                run_id=run_id,
                role=Role.TOOL,
                tool_status=ToolStatus.QUEUED,
                tool_name=name,
            )
            .exclude(tool_call_id="")
            .order_by("position")
            .values_list("tool_call_id", flat=True)
            .first()
        )
        return queued or ""

    def _otel_end_run(self, event: Event, span: dict[str, Any]) -> None:
        """A root span ends its trace's run: failed with its error (its banner where the
        span is), else completed. The run itself is ended with the batch's others
        (`_otel_finish`): one flush for all of them, not one each."""
        error = failure(span)
        payload = {"status": "failed", "error_message": error} if error else {}
        if error:
            self._create(
                event, f"status_{event.seq}", Role.STATUS, content=error, status_type="error"
            )
        ended = at(times(span)[1]) or event.timestamp
        self._otel().ends.append((event, payload or {"status": "completed"}, ended))

    def _otel_finish(self) -> None:
        state = self._otel_spans
        if state is None or not state.ends:
            return
        ends, state.ends = state.ends, []
        # In memory only: each run ends when its root span did.
        originals = [(event, event.timestamp) for event, _, _ in ends]
        for event, _, ended in ends:
            event.timestamp = ended
        try:
            self._end_runs([(event, payload) for event, payload, _ in ends])
        finally:
            for event, timestamp in originals:
                event.timestamp = timestamp

    # -- nesting ----------------------------------------------------------------------

    def _otel_parent(self, trace: str, parent: str) -> tuple[str, str]:
        """(the nearest ancestor tool's call id, or ""; the span the walk could not
        find, or "" when the ancestry is known)."""
        seen: set[str] = set()
        span_id = parent
        while span_id and span_id not in seen:
            seen.add(span_id)
            found = self._otel_span(trace, span_id)
            if found is None:
                return "", span_id
            call_id, span_id = found
            if call_id:
                return call_id, ""
        return "", ""

    def _otel_span(self, trace: str, span_id: str) -> tuple[str, str] | None:
        state = self._otel()
        key = (trace, span_id)
        if key in state.known:
            return state.known[key]
        if key in state.missing or self._empty:
            return None
        stored = (
            Event.objects.filter(
                conversation_id=self.conversation.pk, event_id=f"otel:{trace}:{span_id}"
            )
            .values_list("payload", flat=True)
            .first()
        )
        if not isinstance(stored, dict) or not isinstance(stored.get("span"), dict):
            state.missing.add(key)
            return None
        reading = scoped(read_span(stored["span"]), trace)
        parent = stored["span"].get("parentSpanId", "")
        found = (reading.tool.call_id if reading.tool else "", parent)
        state.known[key] = found
        return found

    def _otel_place_waiting(self, event: Event, trace: str, span_id: str) -> None:
        """Entries that waited for this span: nested under it (or its nearest tool
        ancestor), or waiting on for the next unknown span up."""
        state = self._otel()
        if trace not in state.loaded:
            state.loaded.add(trace)
            if not self._empty and event.run_id not in self._new_runs:
                self._otel_load_waiting(event.run_id, trace)
        waiting = state.waiting.pop((trace, span_id), None)
        if not waiting:
            return
        parent_call, waits_for = self._otel_parent(trace, span_id)
        for message in waiting:
            message = self._messages.get(message.message_id) or message
            if parent_call:
                message.parent_tool_call_id = parent_call
                message.metadata["parent_tool_call_id"] = parent_call
            if waits_for:
                message.metadata[WAITS_FOR] = waits_for
                state.waiting[(trace, waits_for)].append(message)
            else:
                message.metadata.pop(WAITS_FOR, None)
            self._save(message, event)

    def _otel_load_waiting(self, run_id: str, trace: str) -> None:
        self.flush()
        rows = Message.objects.filter(
            conversation_id=self.conversation.pk,
            run_id=run_id,
            role=Role.TOOL,
            parent_tool_call_id="",
        )
        state = self._otel()
        for row in rows:
            span_id = row.metadata.get(WAITS_FOR) if isinstance(row.metadata, dict) else None
            if span_id:
                message = self._messages.get(row.message_id) or row
                self._messages[row.message_id] = message
                state.waiting[(trace, span_id)].append(message)
