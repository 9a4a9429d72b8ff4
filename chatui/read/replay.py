"""Time travel and replay (SPEC §14): any past moment is a projection of a prefix of
the log, rendered by the same projector, presenters and partials as the live page.

How a prefix is projected without touching the real projection: the events ≤ seq are
copied to a scratch conversation, `Projector` (the very one ingest runs) applies them
there, and the transcript window is read back. Nothing reaches the real tables.

Where: on SQLite, in a private in-memory database with the real one's schema (this
thread's "default" connection is swapped for it meanwhile, so the projector, its raw
search SQL and the selectors all go there); on PostgreSQL, in the real database, in a
transaction that is always rolled back.

Why not a projector over an in-memory store: the projector reads back what it wrote
(lookups, S3 reconciliation, queued-call claims, AgentSpine state) through the ORM,
and grows with every event type; an in-memory twin of those queries would be a second
projector to keep in step, and a moment that differs from the live page in any rule
is worse than useless to an auditor. Why not a rolled-back transaction in the real
SQLite database (the first version): IMMEDIATE transactions take SQLite's one write
lock at BEGIN, so every writer of every conversation waits for the projection.
Measured on a loaded 2-core machine: a 2000-event moment held it ~8 s, and an ingest
beside a loop of such moments waited up to 10 s (5–20 ms alone); with the in-memory
copy, at most 0.16–0.4 s, which is CPU contention, not a lock. On PostgreSQL a
rolled-back transaction locks only the new scratch rows, so a writer of the live
conversation never waits for it.

Each thread keeps its last few scratch projections (committed in the in-memory
database only): a player walking forward pays for the events since its last step,
as ingest did live, not for the whole prefix again (measured: ~30 ms a step at 45,
500 or 2000 events; a cold moment costs ~2.5–3 ms an event). Going back starts
afresh. On PostgreSQL every moment projects its whole prefix; the player asks for
one moment at a time and skips frames it cannot keep up with.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from chatui.ingest.projection import Projector
from chatui.models import Conversation, ConversationStatus, Event, Message

from . import presenters, selectors


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
    events = Event.objects.filter(conversation=conversation)
    timestamp = events.filter(seq=seq).values_list("timestamp", flat=True).first()
    messages: list[Message] = []
    has_earlier, status = False, ConversationStatus.IDLE
    if seq and connections[DEFAULT_DB_ALIAS].vendor == "sqlite":
        messages, has_earlier, status = _held_projection(conversation, seq)
    elif seq:
        prefix = list(events.filter(seq__lte=seq).order_by("seq"))
        with transaction.atomic():
            scratch = _new_scratch(conversation)
            _project(scratch, prefix, empty=True)
            messages, has_earlier, status = _window(scratch)
            # Undo it all. (An error half-way rolls back too: it leaves the block.)
            transaction.set_rollback(True)
    _use_real_ids(conversation, messages)
    return Moment(
        seq=seq,
        last_seq=conversation.last_seq,
        timestamp=timestamp,
        status=status,
        messages=messages,
        has_earlier=has_earlier,
    )


def _new_scratch(conversation: Conversation) -> Conversation:
    return Conversation.objects.create(owner_id=conversation.owner_id, title=conversation.title)


def _project(scratch: Conversation, events: list[Event], *, empty: bool) -> None:
    """Copy `events` to `scratch` and project them as ingest does (one batch)."""
    copies = [
        Event.row(
            scratch, event.seq, event, timestamp=event.timestamp, received_at=event.received_at
        )
        for event in events
    ]
    Event.objects.bulk_create(copies)
    projector = Projector(scratch, empty=empty)
    projector.apply_all(copies)
    if copies:
        scratch.last_seq = copies[-1].seq
    scratch.save(update_fields=["last_seq", "status", "title", "updated_at"])


def _window(scratch: Conversation) -> tuple[list[Message], bool, str]:
    messages, has_earlier = selectors.transcript_window(scratch)
    return messages, has_earlier, scratch.status


# -- SQLite: a private in-memory database that keeps its projections --------------------

#: Projections kept per thread (the player walks forward: each step applies only the
#: events since the last one, as ingest did live).
HELD_PROJECTIONS = 4


def _held_projection(conversation: Conversation, seq: int) -> tuple[list[Message], bool, str]:
    """The projection of events ≤ seq in this thread's scratch database: the one held
    for this conversation carried forward, or (to go back) a new one from the start."""
    held = _held()
    key = (connections[DEFAULT_DB_ALIAS].settings_dict["NAME"], conversation.pk)
    scratch_pk, held_seq = held.pop(key, (None, 0))
    if held_seq > seq:
        held_seq = 0  # back in time: start again (the old one is dropped below)
    events = Event.objects.filter(conversation=conversation, seq__gt=held_seq, seq__lte=seq)
    events = list(events.order_by("seq"))
    with _scratch_database():
        if scratch_pk is not None and not held_seq:
            _drop(scratch_pk)
            scratch_pk = None
        try:
            with transaction.atomic():
                if scratch_pk is None:
                    scratch = _new_scratch(conversation)
                else:
                    scratch = Conversation.objects.get(pk=scratch_pk)
                _project(scratch, events, empty=not held_seq)
        except BaseException:
            if scratch_pk is not None:
                _drop(scratch_pk)  # no longer held: do not keep its rows either
            raise
        held[key] = (scratch.pk, seq)
        while len(held) > HELD_PROJECTIONS:
            _drop(held.pop(next(iter(held)))[0])
        return _window(scratch)


def _drop(scratch_pk) -> None:
    """Delete a scratch conversation and its rows (in the scratch database)."""
    Conversation.objects.filter(pk=scratch_pk).delete()


def _held() -> dict:
    """This thread's {(database, conversation pk): (scratch conversation pk, seq)},
    least recently used first."""
    if not hasattr(_scratch, "held"):
        _scratch.held = {}
    return _scratch.held


_scratch = threading.local()


@contextmanager
def _scratch_database() -> Iterator[None]:
    """While the block runs, this thread's default connection is a private in-memory
    SQLite database with the real one's schema."""
    real = connections[DEFAULT_DB_ALIAS]
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
    virtual = [item for _kind, item, sql in schema if sql.upper().startswith("CREATE VIRTUAL")]
    with scratch.cursor() as cursor:
        # Only the projection lives here: the owner row and the like need not exist.
        cursor.execute("PRAGMA foreign_keys = OFF")
        for _kind, item, sql in schema:
            if not any(item.startswith(table + "_") for table in virtual):  # FTS5 makes those
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
    reckoned from the moment, not from now. `read_only`: a past moment offers no
    action (no composer, Stop or decision buttons: they would act on the present)."""
    return {
        "conversation": conversation,
        "items": presenters.present_transcript(at.messages, now=at.timestamp),
        "has_earlier": at.has_earlier,
        "first_position": at.messages[0].position if at.messages else 0,
        "last_seq": at.seq,
        "moment": at,
        "read_only": True,
    }


def timeline(conversation: Conversation) -> list[dict[str, int]]:
    """Every event's seq and recorded time (ms since the epoch), for the player."""
    rows = Event.objects.filter(conversation=conversation).order_by("seq")
    return [
        {"seq": seq, "t": int(stamp.timestamp() * 1000)}
        for seq, stamp in rows.values_list("seq", "timestamp")
    ]
