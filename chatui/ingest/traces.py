"""OTLP exports into conversations (docs/events.md#otlp): which conversation each span or
log record belongs to, and its event — through the one writer, `ingest_normalised`.

One conversation per (owner, id): its primary key is derived from the owner and the id
(`gen_ai.conversation.id`, `session.id`, else the trace id), so every process finds
the same one without a lookup table, and two owners sending the same id get two. A
span's event id is `otel:<trace id>:<span id>`: a re-sent span is a duplicate, whatever
export carries it. A log record's is the digest of its content.

A span or record that cannot be kept (too large, unstorable text) is rejected alone and
counted in the answer's `partial_success`; the rest of the export is kept.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from chatui.fields import EncodedJSON
from chatui.models import Conversation, Event, Run

from .dialects import claude_code_logs, otlp
from .dialects.spans import at, times
from .events import NormalisedEvent, normalise_event
from .service import ingest_normalised
from .values import EventError, canonical_json, obj

#: uuid5 namespace of the conversations traces make.
NAMESPACE = uuid.UUID("6f1c2a3e-5b7d-4e0a-9c1b-7a2f0d4e8c11")


@dataclass
class Outcome:
    accepted: int = 0
    duplicates: int = 0
    rejected: int = 0
    problems: list[str] = field(default_factory=list)
    conversations: set[Any] = field(default_factory=set)

    def reject(self, problem: str) -> None:
        self.rejected += 1
        if len(self.problems) < 5:
            self.problems.append(problem)

    @property
    def error_message(self) -> str:
        return "; ".join(self.problems)[:1000]


def conversation_pk(owner: AbstractBaseUser, key: str) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"{owner.pk}\n{key}")


def conversation_for(
    owner: AbstractBaseUser, key: str, known: dict[uuid.UUID, Conversation] | None = None
) -> Conversation | None:
    """The owner's conversation for `key`, created on first sight (untitled: its first
    user message titles it). None if that id is someone else's (never expected).
    `known`: the conversations already read by pk (`existing`), so none is read again."""
    pk = conversation_pk(owner, key)
    found = known.get(pk) if known is not None else Conversation.objects.filter(pk=pk).first()
    if found is None:
        try:
            with transaction.atomic():
                found = Conversation.objects.create(pk=pk, owner=owner)
        except IntegrityError:  # another request made it first
            found = Conversation.objects.filter(pk=pk).first()
    if found is None or found.owner_id != owner.pk:
        return None
    return found


def existing(owner: AbstractBaseUser, keys: list[str]) -> dict[uuid.UUID, Conversation]:
    """The conversations of these keys that exist, by pk: one query for an export's
    conversations rather than one each (docs/PERFORMANCE.md#p8)."""
    pks = [conversation_pk(owner, key) for key in keys]
    return {
        conversation.pk: conversation for conversation in Conversation.objects.filter(pk__in=pks)
    }


def iso(nanoseconds: int) -> str | None:
    moment = at(nanoseconds)
    return moment.isoformat() if moment else None


def span_events(request: Any) -> tuple[dict[str, list[tuple[Any, dict[str, Any]]]], Outcome]:
    """An ExportTraceServiceRequest's spans as events, by conversation key, each with
    its sort key (start time; a root span, which ends its run, after its trace's
    others)."""
    outcome = Outcome()
    batch = otlp.TraceBatch()
    items: list[tuple[dict[str, Any], dict[str, Any], dict[str, str]]] = []
    for resource_spans in request.resource_spans:
        resource = otlp.attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = otlp.scope_of(scope_spans.scope)
            for span in scope_spans.spans:
                record = otlp.span_record(span)
                if len(record["traceId"]) != 32 or len(record["spanId"]) != 16:
                    outcome.reject("a span needs a 16-byte trace id and an 8-byte span id")
                    continue
                batch.add(record)
                items.append((record, resource, scope))
    grouped: dict[str, list[tuple[Any, dict[str, Any]]]] = defaultdict(list)
    for record, resource, scope in items:
        key = batch.conversation_key(record, resource)
        start, end = times(record)
        raw = {
            "type": "otel.span",
            "event_id": f"otel:{record['traceId']}:{record['spanId']}",
            "run_id": f"otel-{record['traceId']}",
            "span": record,
            "resource": resource,
            "scope": scope,
        }
        when = iso(start)
        if when:
            raw["timestamp"] = when
        root = not record.get("parentSpanId")
        grouped[key].append(((record["traceId"], root, end if root else start), raw))
    return grouped, outcome


def log_events(request: Any) -> tuple[dict[str, list[tuple[Any, dict[str, Any]]]], Outcome]:
    """An ExportLogsServiceRequest's Claude Code events, by `session.id`. Other records
    are not a transcript's: counted as rejected, with the reason."""
    outcome = Outcome()
    grouped: dict[str, list[tuple[Any, dict[str, Any]]]] = defaultdict(list)
    for resource_logs in request.resource_logs:
        resource = otlp.attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            scope = otlp.scope_of(scope_logs.scope)
            for log in scope_logs.log_records:
                record = otlp.log_record(log)
                if not claude_code_logs.event_name(record):
                    outcome.reject("only Claude Code's events (claude_code.*) are read from logs")
                    continue
                session = claude_code_logs.session(record) or otlp.conversation_id(resource)
                if not session:
                    outcome.reject("a Claude Code event without session.id")
                    continue
                key = session if session.startswith("session.id:") else f"session.id:{session}"
                try:
                    digest = hashlib.sha256(canonical_json(record).encode()).hexdigest()[:40]
                except ValueError:
                    outcome.reject("a log record that cannot be stored")
                    continue
                raw = {"type": "otel.log", "event_id": f"otel-log:{digest}", "record": record}
                raw |= {"resource": resource, "scope": scope}
                run = claude_code_logs.run_of(record)
                if run:
                    raw["run_id"] = run
                nanoseconds = int(record["timeUnixNano"] or 0)
                when = iso(nanoseconds)
                if when:
                    raw["timestamp"] = when
                grouped[key].append(((nanoseconds,), raw))
    return grouped, outcome


def span_event(
    raw: dict[str, Any], index: int, limit: int, encoded: dict[int, str]
) -> NormalisedEvent:
    """`normalise_event(raw)` of a span's event as `span_events` makes it — the same
    hash, payload and checks — with the span encoded to JSON once rather than three
    times (docs/PERFORMANCE.md#p8): its canonical text is composed into the event's
    (whose digest is the body hash) and into the payload's, which the column stores as
    it is and the hash chain splices into its own form (`EncodedJSON`). A canonical
    object is "{" and its sorted members, so the parts compose. Resources and scopes,
    shared by an export's spans, are encoded once (`encoded`, by id). What the short
    way cannot keep (NUL, lone surrogates, over the size limit) takes the general way,
    which says why."""
    span, resource, scope = raw["span"], raw["resource"], raw["scope"]
    problem = otlp.span_object(span) or obj(resource) or obj(scope)
    if problem:
        return normalise_event(raw, index, max_event_bytes=limit)
    try:
        parts = [canonical_json(span), _encoded(resource, encoded), _encoded(scope, encoded)]
    except ValueError:
        return normalise_event(raw, index, max_event_bytes=limit)
    span_text, resource_text, scope_text = parts
    event_id, run_id = raw["event_id"], raw["run_id"]
    when = raw.get("timestamp")
    text = (
        f'{{"event_id":{canonical_json(event_id)},"resource":{resource_text},'
        f'"run_id":{canonical_json(run_id)},"scope":{scope_text},"span":{span_text}'
        + (f',"timestamp":{canonical_json(when)}' if when is not None else "")
        + ',"type":"otel.span"}'
    )
    try:
        body = text.encode()
    except UnicodeEncodeError:
        return normalise_event(raw, index, max_event_bytes=limit)
    if "\\u0000" in text or len(body) > limit:
        return normalise_event(raw, index, max_event_bytes=limit)
    payload = {"resource": resource, "scope": scope, "span": span}
    return NormalisedEvent(
        type="otel.span",
        payload=EncodedJSON(
            payload,
            f'{{"resource":{resource_text},"scope":{scope_text},"span":{span_text}}}',
            canonical=True,
        ),
        body_hash=hashlib.sha256(body).hexdigest(),
        event_id=event_id,
        run_id=run_id,
        timestamp=at(times(span)[0]),
        index=index,
    )


def _encoded(value: dict[str, Any], encoded: dict[int, str]) -> str:
    text = encoded.get(id(value))
    if text is None:
        text = encoded[id(value)] = canonical_json(value)
    return text


def ingest_export(
    owner: AbstractBaseUser,
    grouped: dict[str, list[tuple[Any, dict[str, Any]]]],
    outcome: Outcome,
) -> Outcome:
    """Each conversation's events in order, through `ingest_normalised`."""
    limit = settings.CHATUI_MAX_EVENT_BYTES
    known = existing(owner, list(grouped))
    # Resources and scopes encoded once for the export's spans (`span_event`): kept
    # by id, so the objects stay referenced by `grouped` while this runs.
    encoded: dict[int, str] = {}
    for key, entries in grouped.items():
        entries.sort(key=lambda entry: entry[0])
        events: list[NormalisedEvent] = []
        for index, (_, raw) in enumerate(entries):
            try:
                if raw["type"] == "otel.span":
                    events.append(span_event(raw, index, limit, encoded))
                else:
                    events.append(normalise_event(raw, index, max_event_bytes=limit))
            except EventError as problem:
                outcome.reject(f"{raw['event_id'][:80]}: {problem.message}")
        if not events:
            continue
        conversation = _trace_seen_in(owner, key) or conversation_for(owner, key, known)
        if conversation is None:
            for _ in events:
                outcome.reject("conversation not found")
            continue
        events = _first_of_each(events)
        try:
            result = ingest_normalised(conversation, events)
        except EventError as problem:
            if problem.status != 409:
                raise
            # A span sent again with another body (a bug of its sender): the first stays.
            events = _not_logged(conversation, events, outcome)
            result = ingest_normalised(conversation, events) if events else None
        if result is not None:
            outcome.accepted += result.accepted
            outcome.duplicates += result.duplicates
        outcome.conversations.add(conversation.pk)
    return outcome


def _trace_seen_in(owner: AbstractBaseUser, key: str) -> Conversation | None:
    """Spans that name no conversation (nor do their ancestors in their export) join
    the one their trace's earlier spans went to, if any: a framework may name it only
    on some spans, and those end — and are exported — at another time."""
    if not key.startswith("trace:"):
        return None
    run = (
        Run.objects.filter(run_id=f"otel-{key.removeprefix('trace:')}", conversation__owner=owner)
        .select_related("conversation")
        .order_by("started_seq")
        .first()
    )
    return run.conversation if run is not None else None


def _first_of_each(events: list[NormalisedEvent]) -> list[NormalisedEvent]:
    """One event per id: an export that holds a span twice keeps its first."""
    seen: set[str] = set()
    kept = []
    for event in events:
        if event.event_id not in seen:
            seen.add(event.event_id or "")
            kept.append(event)
    return kept


def _not_logged(
    conversation: Conversation, events: list[NormalisedEvent], outcome: Outcome
) -> list[NormalisedEvent]:
    ids = [event.event_id for event in events]
    logged = set(
        Event.objects.filter(conversation=conversation, event_id__in=ids).values_list(
            "event_id", flat=True
        )
    )
    kept = []
    for event in events:
        if event.event_id in logged:
            outcome.duplicates += 1
        else:
            kept.append(event)
    return kept
