"""The one way in: validate, sequence, append, project — and announce on commit.

Every writer — the HTTP API, the built-in agents, importers, tests — calls
`ingest`. It is the only code that appends `Event` rows and (through the
projector) writes `Message` and `Run` rows.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import OperationalError, connection, transaction
from django.dispatch import Signal
from django.utils import timezone

from chatui.access import may_write
from chatui.db.prepared import Prepared, PreparedInsert, PreparedLookup, PreparedSave
from chatui.models import Conversation, Event, Message, Run

from . import attachments, chain, search_index
from .events import APPROVAL_EVENT_TYPES, NormalisedEvent, parse_events
from .projection import ROW_COUNT_FIELDS, ChangeSet, Projector
from .values import EventError

logger = logging.getLogger(__name__)

#: Sent after an ingest transaction commits, with `conversation` (as committed),
#: `conversation_id`, `first_seq`, `last_seq` and `changes` (a ChangeSet). The live
#: push listens to it.
events_ingested = Signal()
#: Sent after an ingest transaction that wrote approval requests or decisions
#: (APPROVAL_EVENT_TYPES, or an AG-UI interrupt for a tool call) commits, with
#: `conversation_id`, those Event `rows` and the `deadlines` of the requests projected:
#: chatui.live.approval_clock times the deadlines and wakes the long polls.
approval_events_committed = Signal()

LOCK_RETRIES = 5
# SQLite only: one writer at a time per process (see `_turn`).
_WRITER = threading.Lock()
# PostgreSQL aborts a transaction with these when it cannot order it against another
# (serialization failure, deadlock); running it again is the documented remedy.
RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})


@dataclass
class IngestResult:
    accepted: int
    duplicates: int
    last_seq: int
    changes: ChangeSet = field(default_factory=ChangeSet)

    def as_dict(self) -> dict[str, int]:
        return {"accepted": self.accepted, "duplicates": self.duplicates, "last_seq": self.last_seq}


def ingest(
    conversation: Conversation,
    body: Any,
    *,
    from_runtime: bool = False,
    check_writer: AbstractBaseUser | None = None,
) -> IngestResult:
    """Validate and apply one event, a list of events, or {"events": [...]}.

    Raises EventError (nothing applied) for bad input or a reused event_id with
    another body. Applies the batch whole or not at all. `from_runtime` (the API)
    refuses the events only chatui itself writes (a person's `tool.approval`).
    `check_writer`: refuse (404, nothing written) unless this user may post to the
    conversation, decided on its row as locked for the write — the events POST and the
    ingest socket pass their caller, whose conversation they may not have read.
    """
    try:
        events = parse_events(
            body, max_event_bytes=settings.CHATUI_MAX_EVENT_BYTES, from_runtime=from_runtime
        )
    except EventError:
        refuse_before_the_body(conversation, check_writer=check_writer)
        raise
    return ingest_normalised(conversation, events, check_writer=check_writer)


def refuse_before_the_body(
    conversation: Conversation, *, check_writer: AbstractBaseUser | None
) -> None:
    """For a body about to be refused (not JSON, too large, not valid events): the view's
    404 first if `check_writer` may not post to the conversation after all — deleted by
    another process since this one saw its owner post, say: a 404 whatever the body."""
    if check_writer is not None:
        _refuse_unless_writer(check_writer, CONVERSATION_ROW.one(pk=conversation.pk))


def ingest_normalised(
    conversation: Conversation,
    events: list[NormalisedEvent],
    *,
    check_writer: AbstractBaseUser | None = None,
) -> IngestResult:
    for attempt in range(LOCK_RETRIES):
        try:
            with _turn():
                return _ingest_once(conversation, events, check_writer)
        except OperationalError as error:
            # SQLite's busy timeout and PostgreSQL's row lock should absorb contention;
            # this is the last resort. The transaction rolled back whole: nothing applied.
            if not _is_retryable(error) or attempt == LOCK_RETRIES - 1:
                raise
            logger.warning("ingest transaction lost a race (%s); retrying (%s)", error, attempt + 1)
            time.sleep(0.05 * (2**attempt) + random.random() * 0.05)
    raise AssertionError("unreachable")


# The statements every ingest runs, compiled once (chatui.db.prepared).
EVENT_INSERT = PreparedInsert(Event)
# With the projector's row counts: still one UPDATE of the conversation row.
SAVE_CONVERSATION = PreparedSave(
    Conversation,
    ["last_seq", "chain_hash", "signed_at", "status", "title", "updated_at", *ROW_COUNT_FIELDS],
)
#: A refused body's conversation, read to answer 404 rather than 400 when its caller may
#: not post to it (`refuse_before_the_body`).
CONVERSATION_ROW: Prepared[Conversation] = Prepared(
    lambda pk: Conversation.objects.filter(pk=pk), pk=Conversation._meta.pk
)
LOCK_CONVERSATION: Prepared[Conversation] = Prepared(
    lambda pk: Conversation.objects.select_for_update().filter(pk=pk),
    pk=Conversation._meta.pk,
)
#: event_id -> body hash of the conversation's events with these ids. No ordering:
#: Event's default one joins the conversation table to sort by it.
EVENT_HASHES = PreparedLookup(
    lambda pk: (
        Event.objects.filter(conversation_id=pk).order_by().values_list("event_id", "body_hash")
    ),
    "event_id",
)


def _turn() -> AbstractContextManager:
    """On SQLite, writers of one process take turns here, in arrival order, rather
    than in SQLite's busy handler, which is unfair (bench/p2: p99 3–4 s → ~0.6 s).
    On PostgreSQL the conversation's row lock orders writers across processes, and
    writers of different conversations must not wait for each other."""
    return _WRITER if connection.vendor == "sqlite" else nullcontext()


def _is_retryable(error: OperationalError) -> bool:
    if connection.vendor == "sqlite":
        return "locked" in str(error)
    # PostgreSQL aborted the whole transaction: inside a caller's own transaction only
    # the caller can run it again.
    if connection.in_atomic_block:
        return False
    return getattr(error.__cause__, "sqlstate", None) in RETRYABLE_SQLSTATES


def _ingest_once(
    conversation: Conversation,
    events: list[NormalisedEvent],
    check_writer: AbstractBaseUser | None,
) -> IngestResult:
    received_at = timezone.now()
    # Outermost: its on-commit frame is rendered as it commits (`_announced`).
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        locked = LOCK_CONVERSATION.one(pk=conversation.pk)
        _refuse_unless_writer(check_writer, locked)
        if locked is None:
            raise Conversation.DoesNotExist(f"conversation {conversation.pk} does not exist")
        # The title is indexed at the first event (it may predate it) and when it changes.
        indexed_title = locked.title if locked.last_seq else None
        fresh, duplicates = _drop_duplicates(locked, events)
        rows = [
            Event.row(
                locked,
                locked.last_seq + offset,
                event,
                timestamp=event.timestamp or received_at,
                received_at=received_at,
            )
            for offset, event in enumerate(fresh, start=1)
        ]
        # Hashed and chained before they are written, under the row lock that orders the
        # conversation's writers (docs/auditing.md#verifying-a-log).
        chained = chain.chain(rows, locked.chain_hash)
        EVENT_INSERT.run(rows)
        # docs/rendering.md#g21: an MCP result's bytes, once, with the event that holds them
        found = [
            (row.seq, blob)
            for row, event in zip(rows, fresh, strict=True)
            for blob in event.attachments
        ]
        if found:
            attachments.store(locked.pk, found)
        projector = Projector(locked)
        projector.apply_all(rows)
        if rows:
            locked.last_seq, locked.chain_hash = rows[-1].seq, chained
            if chain.checkpoint_due(locked, received_at, run_ended=projector.ended_a_run):
                chain.sign_checkpoint(locked, received_at)
            SAVE_CONVERSATION.run(locked)
            if locked.title != indexed_title:
                search_index.index_title(locked)
            _announce_on_commit(locked, rows[0].seq, _announced(projector, outermost=outermost))
            approval_rows = [row for row in rows if row.type in APPROVAL_EVENT_TYPES]
            # An AG-UI interrupt asks for approval too, in a RUN_FINISHED row: the
            # projector's deadlines say so whatever the dialect.
            if approval_rows or projector.approval_deadlines:
                _announce_approvals_on_commit(
                    locked.pk, approval_rows, projector.approval_deadlines
                )
    conversation.last_seq, conversation.status = locked.last_seq, locked.status
    conversation.title = locked.title
    conversation.chain_hash, conversation.signed_at = locked.chain_hash, locked.signed_at
    # So a caller's later save() of its copy cannot write stale counts back.
    for name in ROW_COUNT_FIELDS:
        setattr(conversation, name, getattr(locked, name))
    return IngestResult(
        accepted=len(rows),
        duplicates=duplicates,
        last_seq=locked.last_seq,
        changes=projector.changes,
    )


def _refuse_unless_writer(user: AbstractBaseUser | None, row: Conversation | None) -> None:
    """The view's 404 for a conversation `user` may not post to, decided on `row` (the
    conversation's row as just read or locked). Raised before anything is written."""
    if user is not None and (row is None or not may_write(user, row)):
        raise EventError("conversation not found", status=404)


def _drop_duplicates(
    conversation: Conversation, events: Iterable[NormalisedEvent]
) -> tuple[list[NormalisedEvent], int]:
    """REL1: the same event_id and body again is a no-op; another body is a 409."""
    events = list(events)
    ids = {event.event_id for event in events if event.event_id}
    known = dict(EVENT_HASHES.matching(conversation.pk, ids))
    fresh, duplicates = [], 0
    for event in events:
        if event.event_id:
            prior = known.get(event.event_id)
            if prior is not None:
                if prior != event.body_hash:
                    raise EventError(
                        f"event_id '{event.event_id}' was already used with a different body",
                        index=event.index,
                        field="event_id",
                        status=409,
                    )
                duplicates += 1
                continue
            known[event.event_id] = event.body_hash
        fresh.append(event)
    return fresh, duplicates


def _announced(projector: Projector, *, outermost: bool) -> ChangeSet:
    """The changes the on-commit frame gets: with the rows as this call wrote them
    (`ChangeSet.written`), so it need not read them back (docs/PERFORMANCE.md#p2), when this is
    the outermost transaction: the frame is rendered as it commits, and its rows are
    exactly as of its last seq (a read could give a newer one's; both are what the
    kept tail promises, chatui.live.tail_cache). Inside a caller's transaction later writes
    may change them before it commits: the frame reads them, as the caller's
    `IngestResult.changes` (rendered later) always does."""
    if not outermost:
        return projector.changes
    return replace(projector.changes, written=projector.written_rows())


def _announce_on_commit(conversation: Conversation, first_seq: int, changes: ChangeSet) -> None:
    def announce() -> None:
        events_ingested.send_robust(
            sender=Conversation,
            conversation=conversation,
            conversation_id=conversation.pk,
            first_seq=first_seq,
            last_seq=conversation.last_seq,
            changes=changes,
        )

    transaction.on_commit(announce, robust=True)


def _announce_approvals_on_commit(
    conversation_id: Any, rows: list[Event], deadlines: list[datetime]
) -> None:
    def announce() -> None:
        approval_events_committed.send_robust(
            sender=Conversation, conversation_id=conversation_id, rows=rows, deadlines=deadlines
        )

    transaction.on_commit(announce, robust=True)


def reproject(conversation: Conversation) -> ChangeSet:
    """Rebuild a conversation's messages and runs from its event log."""
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        Message.objects.filter(conversation=locked).delete()
        Run.objects.filter(conversation=locked).delete()
        locked.status = "idle"
        # New rows under the same seqs: what processes keep between live frames, stamped
        # with this count, is not used again (chatui.live.tail_cache).
        locked.rebuilds += 1
        projector = Projector(locked, empty=True)
        events = list(Event.objects.filter(conversation=locked).order_by("seq"))
        projector.apply_all(events)
        projector.changes.conversation_changed = True
        projector.changes.full_refresh = True
        locked.save(update_fields=["status", "title", "updated_at", "rebuilds", *ROW_COUNT_FIELDS])
        search_index.index_title(locked)  # messages were indexed by the projector's flushes
        _announce_on_commit(locked, 1, projector.changes)
    conversation.status, conversation.rebuilds = locked.status, locked.rebuilds
    for name in ROW_COUNT_FIELDS:
        setattr(conversation, name, getattr(locked, name))
    return projector.changes
