"""Time travel and replay (SPEC §14): any past moment is a projection of a prefix of
the log, rendered by the same projector, presenters and partials as the live page.

How a prefix is projected without touching the real projection: the events ≤ seq are
copied to a scratch conversation, `Projector` (the very one ingest runs) applies them
there, the transcript window is read back, and the transaction is rolled back.

Where: on SQLite, in a private in-memory database with the real one's schema (this
thread's "default" connection is swapped for it meanwhile, so the projector, its
raw search SQL and the selectors all go there); on PostgreSQL, in the real database,
in a transaction that is always rolled back.

Why not a projector over an in-memory store: the projector reads back what it wrote
(lookups, S3 reconciliation, queued-call claims, AgentSpine state) through the ORM,
and grows with every event type; an in-memory twin of those queries would be a second
projector to keep in step, and a moment that differs from the live page in any rule
is worse than useless to an auditor. Why not simply roll back in the real SQLite
database: IMMEDIATE transactions take SQLite's one write lock at BEGIN, so every
writer of every conversation would wait for the projection — measured (load ~8 on 2
cores): 2000 events held it ~8 s, and an ingest beside a player looping over such
moments waited up to 10 s. The in-memory copy takes no lock the app's writers need
and is faster (no journal). On PostgreSQL a rolled-back transaction only locks the
new scratch rows, so a writer of the live conversation never waits for it.

The cost still grows with the prefix (the projector's work per event); the player
asks for one moment at a time and skips frames it cannot keep up with.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from . import presenters, selectors
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
        with _scratch_database(), transaction.atomic():
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


_scratch = threading.local()


@contextmanager
def _scratch_database() -> Iterator[None]:
    """On SQLite, this thread's default connection is a private in-memory database
    with the real one's schema while the block runs; elsewhere nothing changes."""
    real = connections[DEFAULT_DB_ALIAS]
    if real.vendor != "sqlite":
        yield
        return
    scratch = _scratch_for(real)
    connections[DEFAULT_DB_ALIAS] = scratch
    try:
        yield
    finally:
        connections[DEFAULT_DB_ALIAS] = real


def _scratch_for(real: BaseDatabaseWrapper) -> BaseDatabaseWrapper:
    """This thread's in-memory copy of `real`'s schema (made once per thread and
    database: the schema changes only with a migration, which restarts the server)."""
    name = real.settings_dict["NAME"]
    cached = getattr(_scratch, "databases", {}).get(name)
    if cached is not None:
        return cached
    with real.cursor() as cursor:
        cursor.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
            "AND name NOT LIKE 'sqlite_%' ORDER BY type != 'table', rowid"
        )
        schema = cursor.fetchall()
    options = {k: v for k, v in real.settings_dict["OPTIONS"].items() if k != "init_command"}
    scratch = real.__class__({**real.settings_dict, "NAME": ":memory:", "OPTIONS": options})
    virtual = [name for kind, name, sql in schema if sql.upper().startswith("CREATE VIRTUAL")]
    with scratch.cursor() as cursor:
        # Rows here are never committed; the owner row and the like need not exist.
        cursor.execute("PRAGMA foreign_keys = OFF")
        for _kind, name, sql in schema:
            if not any(name.startswith(table + "_") for table in virtual):  # FTS5 makes those
                cursor.execute(sql)
    _scratch.databases = {**getattr(_scratch, "databases", {}), name: scratch}
    return scratch


def _use_real_ids(conversation: Conversation, messages: list[Message]) -> None:
    """DOM ids are built from primary keys: give each message the id its live row has,
    so a moment's DOM is the one the live page showed (and replay frames keep a
    reader's open batches). A message the log later removed (S3's ephemeral statuses)
    is numbered after the newest real message, so ids never clash."""
    real = dict(
        Message.objects.filter(
            conversation=conversation, message_id__in=[m.message_id for m in messages]
        ).values_list("message_id", "pk")
    )
    newest = Message.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    for message in messages:
        message.pk = real.get(message.message_id, newest + message.pk)
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
