"""Time travel and replay (SPEC §14): any past moment is a projection of a prefix of
the log, rendered by the same projector, presenters and partials as the live page.

How a prefix is projected without touching the real projection: inside one database
transaction that is always rolled back, the events ≤ seq are copied to a scratch
conversation and `Projector` (the very one ingest runs) applies them there; the
transcript window is read back, and the transaction is undone. Nothing it wrote
outlives the call: not a Message, Run, Event or search row.

Why a rolled-back transaction rather than a projector over an in-memory store: the
projector reads the rows it wrote (batch lookups, S3 reconciliation, queued-call
claims, AgentSpine run and message state) through the ORM, and grows with every
event type. An in-memory twin of those queries would be a second projector to keep
in step, and a moment that differs from the live page in any rule is worse than
useless to an auditor. The scratch conversation (rather than re-projecting the real
one in place) keeps the real conversation's rows unlocked: on PostgreSQL a writer of
the live conversation never waits for a time-travel request.

The cost, measured (bench notes in the helper's report): on SQLite a write
transaction, even one rolled back, holds the database's single write lock, so
ingest waits for the projection of the prefix — about 10 ms for the 45-event
showcase, growing linearly (~0.2–0.3 ms per event). A request therefore takes the
same turn as ingest's writers (`ingest._turn`), so the app's own writers queue
fairly behind it instead of in SQLite's busy handler, and replay fetches one moment
at a time. On PostgreSQL only the new scratch rows are locked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from . import presenters, selectors
from .ingest import _turn
from .models import Conversation, ConversationStatus, Event, Message
from .projection import Projector


@dataclass(frozen=True)
class Moment:
    """The transcript as it stood after event `seq` (0: before the first event)."""

    seq: int
    last_seq: int  # the conversation's, now
    timestamp: datetime | None  # event `seq`'s; None before the first event
    status: str  # the conversation's status then
    messages: list[Message]
    has_earlier: bool


def moment(conversation: Conversation, seq: int) -> Moment:
    """Project the events ≤ `seq` (0 ≤ seq ≤ conversation.last_seq) without writing."""
    events = list(Event.objects.filter(conversation=conversation, seq__lte=seq).order_by("seq"))
    messages: list[Message] = []
    has_earlier, status = False, ConversationStatus.IDLE
    if events:  # before the first event there is nothing to project
        with _turn(), transaction.atomic():
            messages, has_earlier, status = _project_scratch(conversation, events)
            # Undo it all. (An error half-way rolls back too: it leaves the block.)
            transaction.set_rollback(True)
    _use_real_ids(conversation, messages)
    return Moment(
        seq=seq,
        last_seq=conversation.last_seq,
        timestamp=events[-1].timestamp if events else None,
        status=status,
        messages=messages,
        has_earlier=has_earlier,
    )


def _project_scratch(
    conversation: Conversation, events: list[Event]
) -> tuple[list[Message], bool, str]:
    """Copy `events` to a scratch conversation and project them there, inside the
    caller's transaction (which rolls it all back); its transcript window and status."""
    scratch = Conversation.objects.create(owner_id=conversation.owner_id, title=conversation.title)
    copies = [
        Event(
            conversation=scratch,
            seq=event.seq,
            event_id=event.event_id,
            body_hash=event.body_hash,
            type=event.type,
            run_id=event.run_id,
            tool_call_id=event.tool_call_id,
            payload=event.payload,
            timestamp=event.timestamp,
            received_at=event.received_at,
        )
        for event in events
    ]
    Event.objects.bulk_create(copies)
    projector = Projector(scratch, empty=True)
    projector.prefetch(copies)
    for copy in copies:
        projector.apply(copy)
    projector.flush()
    messages, has_earlier = selectors.transcript_window(scratch)
    return messages, has_earlier, scratch.status


def _use_real_ids(conversation: Conversation, messages: list[Message]) -> None:
    """DOM ids are built from primary keys: give each message the id its live row has,
    so a moment's DOM is the one the live page showed (and replay frames keep a
    reader's open batches). A message the log later removed (S3's ephemeral statuses)
    keeps its scratch id, which is newer than every real one, so ids never clash."""
    real = dict(
        Message.objects.filter(
            conversation=conversation, message_id__in=[m.message_id for m in messages]
        ).values_list("message_id", "pk")
    )
    for message in messages:
        message.pk = real.get(message.message_id, message.pk)
        message.conversation = conversation


def transcript_context(conversation: Conversation, at: Moment) -> dict:
    """What `_transcript.html#transcript` needs, as of the moment. Pending timers are
    reckoned from the moment, not from now."""
    return {
        "conversation": conversation,
        "items": presenters.present_transcript(at.messages, now=at.timestamp),
        "has_earlier": at.has_earlier,
        "first_position": at.messages[0].position if at.messages else 0,
        "last_seq": at.seq,
        "moment": at,
    }


def timeline(conversation: Conversation) -> list[dict[str, int]]:
    """Every event's seq and recorded time (ms since the epoch), for the player."""
    rows = Event.objects.filter(conversation=conversation).order_by("seq")
    return [
        {"seq": seq, "t": int(stamp.timestamp() * 1000)}
        for seq, stamp in rows.values_list("seq", "timestamp")
    ]
