"""Time travel and replay (docs/rendering.md#time-travel): any past moment is a projection of a
prefix of the log, rendered by the same projector, presenters and partials as the live page.

How a prefix is projected without touching the real projection: the events ≤ seq are
applied by `Projector` (the very one ingest runs) to a scratch conversation, and the
transcript window is read back. Nothing reaches the real tables.

Where: in a private in-memory SQLite database with the real one's schema (this thread's
"default" connection is swapped for it meanwhile, so the projector, its raw search SQL
and the selectors all go there) — beside PostgreSQL too, with the schema SQLite gets
from the migrations. Only with nothing to be kept (CHATUI_MOMENT_CACHE_MB = 0) does a
PostgreSQL moment project in the real database, in a transaction always rolled back.

Why not a projector over an in-memory store: the projector reads back what it wrote
(lookups, S3 reconciliation, queued-call claims, AgentSpine state) through the ORM,
and grows with every event type; an in-memory twin of those queries would be a second
projector to keep in step, and a moment that differs from the live page in any rule
is worse than useless to an auditor. Why not a rolled-back transaction in the real
SQLite database (the first version): IMMEDIATE transactions take SQLite's one write
lock at BEGIN, so every writer of every conversation waits for the projection.

Why SQLite beside PostgreSQL gives PostgreSQL's moment: the projector is the same
Python, and what it stores comes back the same from both — JSON is kept as the text
written on both (`OrderedJSONField`: `json`, not `jsonb`), times to the microsecond,
no text ordering is read. The one query that answers differently is LIKE (the
projector's `startswith`), case-blind for ASCII on SQLite only: a scratch database
beside PostgreSQL matches case (`_configure`). tests/read/test_time_travel_kept_states.py
compares, on PostgreSQL, moments from scratch databases with moments projected in
PostgreSQL's own tables, byte for byte. A scratch database has an alias of its own
(SCRATCH_ALIAS): chatui.db.prepared keeps compiled statements per alias.

Why a moment is cheap (issue 28): a prefix is not projected from the start each time.
A scratch database holds one conversation's projection and nothing else, so its whole
state after event N is the database itself: `sqlite3.Connection.serialize()` gives it
as bytes, `deserialize()` gives it back in ~10 ms. The process keeps (`Kept`, one per
process, shared by every thread: daphne runs each request on a thread of its own, so
what a thread kept for itself was never seen again):

- checkpoints taken while projecting forward: at every multiple of CHECKPOINT_EVERY
  events, zlib-compressed (~11×: ~1.4 MB near the end of a 50,000-event conversation);
- the scratch databases of the latest moments asked, as they are (a step forward of
  the player applies only the events since; no copy at all), each with its trail: it
  stays in a transaction with a savepoint every TRAIL_STEP events over the TRAIL_SPAN
  before the seq asked and at every seq asked since, so a step back that lands on one
  is `ROLLBACK TO` (no image restored, nothing projected; below the trail, the
  checkpoint before it is restored). A trail spans at most TRAIL_MAX events, and ends
  (commits) where a checkpoint is to be taken (an image holds committed pages only).

A moment restores the nearest kept state at or before its seq and projects forward
from there. All of it fits in CHATUI_MOMENT_CACHE_MB (a held database counts its
pages, and an estimate of its trail's journal), so memory stays flat however far
people travel: when it is full, a held database goes first (it is at most
CHECKPOINT_EVERY events past a compressed checkpoint), least recently used first, then
compressed checkpoints, least recently used first; at most HELD_PER_CONVERSATION
databases are held per conversation. The key is (database, conversation,
`Conversation.rebuilds`): a re-projection (which bumps `rebuilds`, in any process) is
never served a state of the rows it replaced, and a deleted conversation's states are
dropped. Kept in the process, not in a table: a checkpoint is a SQLite file image, and
one every CHECKPOINT_EVERY events of every conversation ever opened would outgrow the
conversations themselves; a process builds the ones people ask for, once (the first
moment of a conversation in a process pays for its prefix, and for compressing the
checkpoints on the way). A dropped database is freed at once (`_close_database`), and
glibc is kept from holding on to freed images (`_map_big_blocks`): without both, RSS
grew 5–14 MB a step.

What the scratch database holds besides the projection: of the log, only the events
the projector reads back (`projection.LOG_READ_BACK`: progress logged before its tool,
an AgentSpine message's start and end); the projector is handed every event, but
copying the others (most of them) would cost as much as projecting them and double
every checkpoint. Its search table keeps nothing (a moment never searches).

At most CHATUI_MOMENT_WORKERS moments are projected at once in a process (a projection
holds the GIL): another waits up to CHATUI_MOMENT_WAIT_SECONDS, then gets 503 with
Retry-After, so other people's pages are not starved by a few auditors.

Why it is long: a moment, the scratch databases it is projected in, the states kept
between moments and the bound on how many are projected at once are one mechanism;
apart, each would need the others' invariants (what a kept state holds, when it may be
reused, who may touch a held database) restated.
"""

from __future__ import annotations

import ctypes
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.executor import MigrationExecutor
from django.db.models.signals import post_delete

from chatui.db.lru import BoundedLRU
from chatui.db.sqlite.base import DatabaseWrapper as ScratchWrapper
from chatui.ingest.projection import LOG_READ_BACK, ROW_COUNT_FIELDS, Projector
from chatui.models import Conversation, ConversationStatus, Event, Message

from . import presenters, selectors
from .run_strip import present_run_strip, run_of

#: Checkpoints: every this many events along the whole prefix.
CHECKPOINT_EVERY = 1000
#: A held database's trail (`Held.trail`): a savepoint every TRAIL_STEP events over the
#: last TRAIL_SPAN events before the seq asked, and at every seq asked since...
TRAIL_STEP = 10
TRAIL_SPAN = 100
#: ...over at most this many events (then it starts again where the database stands).
TRAIL_MAX = 500
#: What a trail costs in memory, an estimate per event it spans (SQLite's journal of
#: the pages changed since each savepoint, which it does not report: measured 15 KB
#: an event with a savepoint every 10 events, at 40,000 events of bench/p_time_travel.py).
TRAIL_BYTES_PER_EVENT = 16 * 1024
#: Databases held per conversation (the latest moments asked: two people at two places).
HELD_PER_CONVERSATION = 2
#: Conversations whose messages' live ids are kept (`Kept.real_ids`; ~100 bytes a message).
REAL_IDS_KEPT = 16


@dataclass(frozen=True)
class Moment:
    """The transcript as it stood after event `seq` (0: before the first event)."""

    seq: int
    last_seq: int  # the conversation's, now
    timestamp: datetime | None  # event `seq`'s; None before the first event
    status: str  # the conversation's status then
    messages: list[Message]
    has_earlier: bool
    # The seq of the kept state it was projected forward from (0: from the start).
    projected_from: int = 0


@dataclass(frozen=True)
class Steps:
    """W10 (docs/rendering.md#w10): the moments one event either side of the one shown,
    as the addresses the time travel page's previous / next buttons (and ←/→) open;
    None at either end of the log."""

    previous: str | None
    next: str | None


def steps(conversation: Conversation, at: Moment) -> Steps:
    here = conversation.get_absolute_url()
    return Steps(
        previous=f"{here}?at={at.seq - 1}" if at.seq > 0 else None,
        next=f"{here}?at={at.seq + 1}" if at.seq < at.last_seq else None,
    )


class Busy(Exception):
    """As many moments as the process allows are being projected (`moment_slot`)."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"time travel is busy; retry after {retry_after} s")
        self.retry_after = retry_after


def moment(conversation: Conversation, seq: int) -> Moment:
    """Project the events ≤ `seq` (0 ≤ seq ≤ conversation.last_seq) without writing.
    Raises `Busy` when the process is projecting as many moments as it may."""
    events = Event.objects.filter(conversation=conversation)
    timestamp = events.filter(seq=seq).values_list("timestamp", flat=True).first()
    messages: list[Message] = []
    has_earlier, status, start = False, ConversationStatus.IDLE, 0
    if seq:
        with moment_slot():
            if connections[DEFAULT_DB_ALIAS].vendor == "sqlite" or kept.budget > 0:
                messages, has_earlier, status, start = _kept_projection(conversation, seq)
            else:  # PostgreSQL with nothing to be kept: in its own rows, rolled back
                messages, has_earlier, status = _rolled_back_projection(conversation, seq)
    _use_real_ids(conversation, messages)
    return Moment(
        seq=seq,
        last_seq=conversation.last_seq,
        timestamp=timestamp,
        status=status,
        messages=messages,
        has_earlier=has_earlier,
        projected_from=start,
    )


# -- how many at once ------------------------------------------------------------------

_slots_lock = threading.Lock()
_slots: tuple[int, threading.BoundedSemaphore] | None = None


@contextmanager
def moment_slot() -> Iterator[None]:
    """One of the process's CHATUI_MOMENT_WORKERS slots for projecting a moment, for
    the block; waits up to CHATUI_MOMENT_WAIT_SECONDS for one, else raises `Busy`.
    Projecting is Python holding the GIL: unbounded, four auditors' cold moments made
    everyone else's pages 3× slower (issue 28)."""
    global _slots
    size = settings.CHATUI_MOMENT_WORKERS
    with _slots_lock:
        if _slots is None or _slots[0] != size:  # made on first use (and when tests change it)
            _slots = (size, threading.BoundedSemaphore(size))
        semaphore = _slots[1]
    wait = settings.CHATUI_MOMENT_WAIT_SECONDS
    got = semaphore.acquire(timeout=wait) if wait > 0 else semaphore.acquire(blocking=False)
    if not got:
        raise Busy(retry_after=max(1, round(wait)))
    try:
        yield
    finally:
        semaphore.release()


# -- PostgreSQL: a rolled-back transaction in the real database ------------------------


def _rolled_back_projection(
    conversation: Conversation, seq: int
) -> tuple[list[Message], bool, str]:
    prefix = list(Event.objects.filter(conversation=conversation, seq__lte=seq).order_by("seq"))
    with transaction.atomic():
        scratch = _new_scratch(conversation)
        _project(scratch, prefix, empty=True)
        found = _window(scratch)
        # Undo it all. (An error half-way rolls back too: it leaves the block.)
        transaction.set_rollback(True)
    return found


def _new_scratch(conversation: Conversation) -> Conversation:
    return Conversation.objects.create(owner_id=conversation.owner_id, title=conversation.title)


def _project(scratch: Conversation, events: list[Event], *, empty: bool) -> None:
    """Apply `events` to `scratch` as ingest does (one batch). Of the log, only what the
    projector reads back is copied there (`LOG_READ_BACK`)."""
    copies = [
        Event.row(
            scratch, event.seq, event, timestamp=event.timestamp, received_at=event.received_at
        )
        for event in events
    ]
    Event.objects.bulk_create([copy for copy in copies if copy.type in LOG_READ_BACK])
    projector = Projector(scratch, empty=empty)
    projector.apply_all(copies)
    if copies:
        scratch.last_seq = copies[-1].seq
    scratch.save(update_fields=["last_seq", "status", "title", "updated_at", *ROW_COUNT_FIELDS])


def _window(scratch: Conversation) -> tuple[list[Message], bool, str]:
    messages, has_earlier = selectors.transcript_window(scratch)
    return messages, has_earlier, scratch.status


# -- SQLite: private in-memory databases, and the states the process keeps --------------

Key = tuple[str, Any, int]  # (real database, conversation pk, its rebuilds)


@dataclass
class Held:
    """A scratch database holding one conversation's projection after event `seq`, and
    its trail: while it is open, the database is in a transaction with a savepoint at
    each seq of `trail` (the first is where the trail began), so going back to any of
    them is a `ROLLBACK TO` (`rewind`): no image restored, nothing projected."""

    database: BaseDatabaseWrapper
    scratch: Conversation
    seq: int
    trail: list[tuple[int, str]] = field(default_factory=list)  # (seq, savepoint id)
    _block: Any = None  # the transaction the trail lives in (an open `atomic`)

    @property
    def size(self) -> int:
        """Bytes of its pages (what it holds in memory), and an estimate of its trail's."""
        with self.database.cursor() as cursor:
            cursor.execute("PRAGMA page_count")
            pages = cursor.fetchone()[0]
            cursor.execute("PRAGMA page_size")
            size = pages * cursor.fetchone()[0]
        return size + self.trail_events * TRAIL_BYTES_PER_EVENT

    @property
    def trail_events(self) -> int:
        return self.seq - self.trail[0][0] if self.trail else 0

    def reach(self, seq: int) -> int | None:
        """The latest state at or before `seq` this database can be at without
        projecting: where it stands, or a seq of its trail (None: neither)."""
        if self.seq <= seq:
            return self.seq
        return max((at for at, _sid in self.trail if at <= seq), default=None)

    # Below: with this database as the default connection (`_scratch_database`).

    def mark(self) -> None:
        """A savepoint where the database stands, opening the trail if need be (and
        opening it again here when it spans TRAIL_MAX events already)."""
        if self.trail and self.trail_events > TRAIL_MAX:
            self.end_trail()
        if not self.trail:
            self._block = transaction.atomic()
            self._block.__enter__()
        elif self.trail[-1][0] == self.seq:
            return
        self.trail.append((self.seq, self.database.savepoint()))

    def rewind(self, seq: int) -> None:
        """Back to the trail's latest state at or before `seq` (`reach`)."""
        at, sid = max((entry for entry in self.trail if entry[0] <= seq), key=lambda e: e[0])
        self.database.savepoint_rollback(sid)
        del self.trail[self.trail.index((at, sid)) + 1 :]
        self.seq = at
        # The row as the database has it again (the projection changed the instance).
        self.scratch = Conversation.objects.get(pk=self.scratch.pk)

    def end_trail(self) -> None:
        """Commit: the database keeps where it stands and forgets the trail (an image
        can be taken only then: `serialize()` reads committed pages)."""
        if self._block is not None:
            self.trail.clear()
            block, self._block = self._block, None
            block.__exit__(None, None, None)

    def close(self) -> None:
        _close_database(self.database)


class Kept:
    """The states kept for moments, shared by the process's threads: checkpoints
    (compressed file images) and scratch databases held as they are, least recently
    used first, at most `budget` bytes in all. A held database is taken out while a
    moment uses it: one thread at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (key, seq, is_held) -> (bytes | Held, size)
        self._entries: OrderedDict[tuple[Key, int, bool], tuple[bytes | Held, int]] = OrderedDict()
        self.size = 0
        # Per real database: the empty schema's image (the state before event 1).
        self._empty: dict[str, bytes] = {}
        # Per conversation (and rebuild): message id -> its live row's pk (`_use_real_ids`).
        self._real_ids: BoundedLRU[Key, dict[str, int]] = BoundedLRU(REAL_IDS_KEPT)

    @property
    def budget(self) -> int:
        return int(settings.CHATUI_MOMENT_CACHE_MB * 1024 * 1024)

    def seqs(self, conversation_pk: Any) -> list[tuple[int, int, bool]]:
        """(rebuilds, seq, is_held) of what is kept for a conversation (tests, bench)."""
        with self._lock:
            return sorted((k[2], s, h) for k, s, h in self._entries if k[1] == conversation_pk)

    def take(self, key: Key, seq: int) -> tuple[int, bytes | Held | None]:
        """The nearest state at or before `seq`: a checkpoint's image (kept), or a held
        database that stands there or has it on its trail (taken out: give it back
        with `hold`; `Held.rewind` to go back), or (0, None) if none. At equal
        distance a held database wins (nothing to restore)."""
        with self._lock:
            best: tuple[int, bool, tuple[Key, int, bool]] | None = None
            for entry, (value, _size) in self._entries.items():
                if entry[0] != key:
                    continue
                reach = value.reach(seq) if isinstance(value, Held) else entry[1]
                if reach is None or reach > seq:
                    continue
                if best is None or (reach, entry[2]) > best[:2]:
                    best = (reach, entry[2], entry)
            if best is None:
                return 0, None
            reach, is_held, entry = best
            if is_held:
                value, size = self._entries.pop(entry)
                self.size -= size
            else:
                value = self._entries[entry][0]
                self._entries.move_to_end(entry)
            return reach, value

    def real_ids(self, key: Key) -> dict[str, int]:
        """The live pks of a conversation's messages found so far (filled by the caller;
        a re-projection makes new rows, under a new key)."""
        found = self._real_ids.get(key)
        if found is None:
            found = {}
            self._real_ids.put(key, found)
        return found

    def has_checkpoint(self, key: Key, seq: int) -> bool:
        with self._lock:
            return (key, seq, False) in self._entries

    def keep_checkpoint(self, key: Key, seq: int, image: bytes) -> None:
        self._put((key, seq, False), image, len(image))

    def hold(self, key: Key, held: Held) -> None:
        self._put((key, held.seq, True), held, held.size)

    def forget(self, conversation_pk: Any, *, except_rebuilds: int | None = None) -> None:
        """Drop a conversation's states (all, or those of other rebuilds than one)."""
        with self._lock:
            doomed = [
                entry
                for entry in self._entries
                if entry[0][1] == conversation_pk and entry[0][2] != except_rebuilds
            ]
            dropped = [self._drop(entry) for entry in doomed]
        _close(dropped)

    def clear(self) -> None:
        with self._lock:
            dropped = [self._drop(entry) for entry in list(self._entries)]
        self._real_ids.clear()
        _close(dropped)

    def empty_image(self, real: BaseDatabaseWrapper) -> bytes:
        """The image of a scratch database with `real`'s schema and nothing in it (made
        once per process and database: the schema changes only with a migration, which
        restarts the server)."""
        name = real.settings_dict["NAME"]
        image = self._empty.get(name)
        if image is None:
            image = self._empty[name] = _empty_schema_image(real)
        return image

    def _put(self, entry: tuple[Key, int, bool], value: bytes | Held, size: int) -> None:
        dropped = []
        with self._lock:
            if entry in self._entries:
                dropped.append(self._drop(entry))
            self._entries[entry] = (value, size)
            self.size += size
            if entry[2]:  # a conversation's databases held beyond HELD_PER_CONVERSATION
                held = [e for e in self._entries if e[0] == entry[0] and e[2]]
                dropped += [self._drop(e) for e in held[:-HELD_PER_CONVERSATION]]
            # The cheapest to make again goes first: a held database is at most
            # CHECKPOINT_EVERY events past a checkpoint, which may stand for the whole
            # prefix. What was just put goes last (the next step starts from it).
            for doomed in (self._held, self._checkpoints):
                for old in [other for other in doomed() if other != entry]:
                    if self.size <= self.budget:
                        break
                    dropped.append(self._drop(old))
            if self.size > self.budget:  # too big to keep even alone
                dropped.append(self._drop(entry))
        _close(dropped)

    def _held(self) -> Iterator[tuple[Key, int, bool]]:
        """Under the lock: least recently used first."""
        return (entry for entry in self._entries if entry[2])

    def _checkpoints(self) -> Iterator[tuple[Key, int, bool]]:
        return (entry for entry in self._entries if not entry[2])

    def _drop(self, entry: tuple[Key, int, bool]) -> bytes | Held:
        """Under the lock."""
        value, size = self._entries.pop(entry)
        self.size -= size
        return value


def _close(values: list[bytes | Held]) -> None:
    for value in values:
        if isinstance(value, Held):
            value.close()


kept = Kept()


def _forget_deleted(sender: type[Conversation], instance: Conversation, **kwargs: Any) -> None:
    kept.forget(instance.pk)


# A deleted conversation's moments are not kept in memory (its pk is never asked again).
post_delete.connect(_forget_deleted, sender=Conversation, dispatch_uid="chatui.replay.forget")


def _key(conversation: Conversation) -> Key:
    real = connections[DEFAULT_DB_ALIAS]
    return (real.settings_dict["NAME"], conversation.pk, conversation.rebuilds)


def _kept_projection(conversation: Conversation, seq: int) -> tuple[list[Message], bool, str, int]:
    """The window after event `seq`, projected forward from the nearest kept state; the
    state reached is held for the next step (with its trail), checkpoints are kept on
    the way."""
    real = connections[DEFAULT_DB_ALIAS]
    key = _key(conversation)
    kept.forget(conversation.pk, except_rebuilds=conversation.rebuilds)
    start, found = kept.take(key, seq)
    if isinstance(found, Held):
        held = found
    else:
        held = _restore(real, found if found is not None else kept.empty_image(real))
        if found is None:
            with _scratch_database(held.database):
                held.scratch = _new_scratch(conversation)
    try:
        if held.seq > seq:
            with _scratch_database(held.database):
                held.rewind(seq)
        for segment_end, stop in _segments(key, held.seq, seq):
            events = list(
                Event.objects.filter(
                    conversation=conversation, seq__gt=held.seq, seq__lte=segment_end
                ).order_by("seq")
            )
            with _scratch_database(held.database):
                if stop is CHECKPOINT:
                    held.end_trail()
                if events:  # (none: the seq asked is where the database stands)
                    _project_kept(held, events)
                held.seq = segment_end
                if stop is CHECKPOINT:
                    kept.keep_checkpoint(key, segment_end, _image(held.database))
                elif stop is SAVEPOINT:
                    held.mark()
        with _scratch_database(held.database):
            window = _window(held.scratch)
    except BaseException:
        held.close()  # no longer a known state: not kept
        raise
    kept.hold(key, held)
    return (*window, start)


#: What `_segments` stops for on the way: a checkpoint kept (compressed), a savepoint on
#: the held database's trail, or nothing (the seq asked, with nothing kept).
CHECKPOINT, SAVEPOINT = "checkpoint", "savepoint"


def _segments(key: Key, start: int, seq: int) -> list[tuple[int, str | None]]:
    """Where to stop on the way from `start` to `seq`, and what for: each multiple of
    CHECKPOINT_EVERY not kept yet, to keep a checkpoint there (compressed: they stay);
    then, over the last TRAIL_SPAN events, every TRAIL_STEP events counted back from
    `seq` and `seq` itself, for the trail (a step back of the player, or of the
    previous-event button, is then a rollback). Straight to `seq` when nothing may
    be kept. A stop is a batch of its own: few of them (a batch costs ~3 ms besides
    its events), and none far from `seq`."""
    if kept.budget <= 0:
        return [(seq, None)]
    stops: list[tuple[int, str | None]] = [
        (n, CHECKPOINT)
        for n in range(_next_multiple(start, CHECKPOINT_EVERY), seq, CHECKPOINT_EVERY)
        if not kept.has_checkpoint(key, n)
    ]
    # From TRAIL_SPAN events back, and past the last checkpoint kept on the way.
    lowest = max(start + 1, stops[-1][0] + 1 if stops else 0, seq - TRAIL_SPAN)
    trail = range(seq - TRAIL_STEP, lowest - 1, -TRAIL_STEP)
    stops += [(n, SAVEPOINT) for n in reversed(trail)]
    return [*stops, (seq, SAVEPOINT)]


def _next_multiple(after: int, step: int) -> int:
    return (after // step + 1) * step


def _project_kept(held: Held, events: list[Event]) -> None:
    """Project `events` onto the held scratch conversation and commit them there."""
    database = connections[DEFAULT_DB_ALIAS]
    with transaction.atomic():
        _project(held.scratch, events, empty=held.seq == 0)
        # The projector tells the process which runs exist (`known_runs`) when its
        # transaction commits: not for a scratch conversation, whose pk comes back
        # with every state restored from one image, before or after a run's start.
        database.run_on_commit.clear()


def _image(database: BaseDatabaseWrapper) -> bytes:
    """The database's committed pages, compressed (no trail may be open: `Held.end_trail`)."""
    return zlib.compress(database.connection.serialize(), 1)


def _restore(real: BaseDatabaseWrapper, image: bytes) -> Held:
    """A new private in-memory database holding `image`."""
    _map_big_blocks()
    database = _in_memory(real)
    # Held between requests, which daphne serves on threads of their own.
    database.inc_thread_sharing()
    database.connection.deserialize(zlib.decompress(image))
    _configure(database, real)
    held = Held(database, scratch=None, seq=0)  # type: ignore[arg-type]
    with _scratch_database(database):
        held.scratch = Conversation.objects.first()
        if held.scratch is not None:
            held.seq = held.scratch.last_seq
    return held


#: The alias of a scratch database: not the real one's, whose statements chatui.db.prepared
#: keeps by alias (PostgreSQL's SQL run on SQLite would fail).
SCRATCH_ALIAS = "chatui_moment"


def _in_memory(real: BaseDatabaseWrapper) -> BaseDatabaseWrapper:
    """A new, empty, private in-memory SQLite database (connected), whatever `real` is:
    chatui's SQLite backend, with `real`'s settings but for what names a database."""
    settings_dict = {**real.settings_dict, "ENGINE": "chatui.db.sqlite", "NAME": ":memory:"}
    settings_dict["OPTIONS"] = {}  # no pool, no pragmas for a file
    database = ScratchWrapper(settings_dict, alias=SCRATCH_ALIAS)
    database.ensure_connection()
    return database


def _configure(database: BaseDatabaseWrapper, real: BaseDatabaseWrapper) -> None:
    """What a connection to a scratch database sets (after each restore: a deserialized
    image keeps its pages, not the connection's settings)."""
    with database.cursor() as cursor:
        # Only the projection lives here: the owner row and the like need not exist.
        cursor.execute("PRAGMA foreign_keys = OFF")
        # LIKE as the real database's: SQLite's ignores ASCII case, PostgreSQL's does not
        # (the projector's `startswith`: an AgentSpine run is one named "agentspine-…").
        sensitive = "ON" if real.vendor != "sqlite" else "OFF"
        cursor.execute(f"PRAGMA case_sensitive_like = {sensitive}")


#: Blocks from this size up are mapped from the system and given back when freed.
MMAP_THRESHOLD = 1024 * 1024
_mapping_fixed = False


def _map_big_blocks() -> None:
    """Keep glibc's malloc giving big blocks back when they are freed. By default it
    raises its mmap threshold to the size of each mapped block freed, so after the
    first ~15 MB image every later one came from the heap, whose holes it rarely
    returns: RSS grew ~3 MB a step back at 50,000 events with what is kept at its
    budget, and stays flat with the threshold fixed (docs/PERFORMANCE.md). Fixing it
    for the process changes nothing else measurable (a block ≥ 1 MB is rare there)."""
    global _mapping_fixed
    if _mapping_fixed:
        return
    _mapping_fixed = True
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):  # not glibc
        return
    M_MMAP_THRESHOLD = -3
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def _close_database(database: BaseDatabaseWrapper) -> None:
    """Free an in-memory database now. (Django's `close()` leaves an in-memory SQLite
    database open, lest its data be lost; the wrapper's reference cycles would keep
    its pages until the collector's next full pass: +5–14 MB RSS a step.)"""
    if database.connection is not None:
        database.connection.close()
        database.connection = None


@contextmanager
def _scratch_database(scratch: BaseDatabaseWrapper) -> Iterator[None]:
    """While the block runs, this thread's default connection is `scratch`."""
    real = connections[DEFAULT_DB_ALIAS]
    connections[DEFAULT_DB_ALIAS] = scratch
    try:
        yield
    finally:
        connections[DEFAULT_DB_ALIAS] = real


def _empty_schema_image(real: BaseDatabaseWrapper) -> bytes:
    """An image of an in-memory database with `real`'s schema (on PostgreSQL, the one
    the migrations make on SQLite): its search table one that keeps nothing (the
    projector indexes what it writes; a moment never searches)."""
    migrated = None
    if real.vendor != "sqlite":
        real = migrated = _migrated_in_memory(real)
    try:
        with real.cursor() as cursor:
            cursor.execute(
                "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                "AND name NOT LIKE 'sqlite_%' ORDER BY type != 'table', rowid"
            )
            schema = cursor.fetchall()
    finally:
        if migrated is not None:
            _close_database(migrated)
    scratch = _in_memory(real)
    virtual = [item for _kind, item, sql in schema if sql.upper().startswith("CREATE VIRTUAL")]
    try:
        with scratch.cursor() as cursor:
            for _kind, item, sql in schema:
                if any(item.startswith(table + "_") for table in virtual):
                    continue  # FTS5 makes those
                if item == "chatui_message_search":
                    cursor.execute("CREATE TABLE chatui_message_search (document TEXT)")
                    cursor.execute(
                        "CREATE TRIGGER chatui_message_search_discard AFTER INSERT ON "
                        "chatui_message_search BEGIN DELETE FROM chatui_message_search "
                        "WHERE rowid = new.rowid; END"
                    )
                else:
                    cursor.execute(sql)
        return zlib.compress(scratch.connection.serialize(), 1)
    finally:
        _close_database(scratch)


def _migrated_in_memory(real: BaseDatabaseWrapper) -> BaseDatabaseWrapper:
    """An in-memory SQLite database migrated as a SQLite deployment's would be (once per
    process, for a PostgreSQL one: ~1 s). The migrations' own queries name the
    database by its alias, so it is this thread's under it meanwhile."""
    database = _in_memory(real)
    connections[SCRATCH_ALIAS] = database
    try:
        executor = MigrationExecutor(database)
        executor.migrate(executor.loader.graph.leaf_nodes())
    except BaseException:
        _close_database(database)
        raise
    finally:
        del connections[SCRATCH_ALIAS]
    return database


def _use_real_ids(conversation: Conversation, messages: list[Message]) -> None:
    """DOM ids are built from primary keys: give each message the id its live row has,
    so a moment's DOM is the one the live page showed (and replay frames keep a
    reader's open batches). A message the log later removed (S3's ephemeral statuses)
    is numbered after the newest real message, so ids never clash. The ids found are
    kept (`Kept.real_ids`): a step of the player asks for the same ~200 again."""
    known = kept.real_ids(_key(conversation))
    missing = [m.message_id for m in messages if m.message_id not in known]
    if missing:
        known.update(
            Message.objects.filter(conversation=conversation, message_id__in=missing).values_list(
                "message_id", "pk"
            )
        )
    newest = Message.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    for message in messages:
        message.pk = known.get(message.message_id, newest + message.pk)
        message.conversation = conversation


def transcript_context(conversation: Conversation, at: Moment) -> dict:
    """What `_transcript.html#transcript` needs, as of the moment. Pending timers are
    reckoned from the moment, not from now. `read_only`: a past moment offers no
    action (no composer, Stop or decision buttons: they would act on the present)."""
    return {
        "conversation": conversation,
        # W1: a moment in a run shows its last batch as the live page showed it then
        "items": presenters.present_transcript(
            at.messages, now=at.timestamp, run_going=at.status == "running"
        ),
        "has_earlier": at.has_earlier,
        "first_position": at.messages[0].position if at.messages else 0,
        "last_seq": at.seq,
        "moment": at,
        "read_only": True,
        # W2: the strip as it stood then (read-only: no Stop)
        "strip": present_run_strip(
            run_of(at.messages), going=at.status == "running", now=at.timestamp
        ),
    }


def timeline(conversation: Conversation) -> list[dict[str, int]]:
    """Every event's seq and recorded time (ms since the epoch), for the player."""
    rows = Event.objects.filter(conversation=conversation).order_by("seq")
    return [
        {"seq": seq, "t": int(stamp.timestamp() * 1000)}
        for seq, stamp in rows.values_list("seq", "timestamp")
    ]
