"""Read-side queries. Views, the API, consumers and the admin read through these.

Why it is long: the transcript's windowed reads — a page's window, a tool batch's
walk back to what starts it (`batch_slice`, `batch_before`), and a live frame's read
of the newest messages (`Tail`) that those walks start from — share their walking
helpers and must agree with each other on where a batch starts (docs/rendering.md#long-transcripts),
so they stay in one module.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, takewhile
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, F, IntegerField, Max, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce, Substr
from django.db.models.signals import post_delete
from django.dispatch import receiver

from chatui.access import can_view, may_write
from chatui.db.lru import BoundedLRU
from chatui.db.prepared import InSizes, Prepared
from chatui.ingest.visibility import is_assistant_shown, shows_reasoning
from chatui.models import (
    Conversation,
    ConversationStatus,
    Event,
    Message,
    Role,
    Run,
    ToolStatus,
)

from .outcomes import RETRIED_Q
from .windows import BATCH_WINDOW, PENDING, BatchHead, MessageWindow


def conversations_for(user: AbstractBaseUser) -> QuerySet[Conversation]:
    return Conversation.objects.filter(owner=user).order_by("-updated_at")


#: Read for every event a runtime posts: compiled once (chatui.db.prepared).
CONVERSATION: Prepared[Conversation] = Prepared(
    lambda pk: Conversation.objects.filter(pk=pk), pk=Conversation._meta.pk
)


def conversation_for_writer(
    user: AbstractBaseUser, conversation_id, *, checked_by_ingest: bool = False
) -> Conversation | None:
    """The conversation if `user` may post to it: its owner, or `chatui.ingest_any`.

    `checked_by_ingest` (the events POST): the caller hands the conversation only to
    `ingest` with `check_writer=user`, and ingest checks the same rule (`may_write`) on
    the row it locks. For an owner this process has seen post to it before, the row is
    not read here: a conversation of only its key and owner is given — one read of the
    row per event, not two (docs/PERFORMANCE.md#p2)."""
    if checked_by_ingest and _owners.get(conversation_id) == user.pk:
        return Conversation.with_columns("default", id=conversation_id, owner_id=user.pk)
    conversation = CONVERSATION.one(pk=conversation_id)
    if conversation is None:
        return None
    if may_write(user, conversation):
        if conversation.owner_id == user.pk:
            _owners.remember(conversation.pk, conversation.owner_id)
        return conversation
    return None


class _Owners:
    """Conversation key -> its owner's, for the conversations this process saw their
    owners post to (`lru.BoundedLRU`). A conversation's owner never changes; a deleted
    one is forgotten (`forget`) and, deleted by another process, refused by `ingest`'s
    check. Only keys given as UUIDs are kept (a URL's key is one)."""

    def __init__(self, size: int = 10_000) -> None:
        self._owners: BoundedLRU[uuid.UUID, Any] = BoundedLRU(size)

    def get(self, conversation_pk: Any) -> Any:
        """Its owner's key, or None: not known."""
        return self._owners.get(conversation_pk) if isinstance(conversation_pk, uuid.UUID) else None

    def remember(self, conversation_pk: Any, owner_pk: Any) -> None:
        if isinstance(conversation_pk, uuid.UUID):
            self._owners.put(conversation_pk, owner_pk)

    def forget(self, conversation_pk: Any) -> None:
        self._owners.discard(conversation_pk)


_owners = _Owners()


@receiver(
    post_delete, sender=Conversation, dispatch_uid="chatui.read.selectors.conversation_deleted"
)
def _forget_owner(sender: type[Conversation], instance: Conversation, **kwargs: Any) -> None:
    _owners.forget(instance.pk)


def conversation_for_viewer(user: AbstractBaseUser, conversation_id) -> Conversation | None:
    conversation = Conversation.objects.filter(pk=conversation_id).select_related("owner").first()
    if conversation is None or not can_view(user, conversation):
        return None
    return conversation


def messages_of(conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.filter(conversation=conversation).order_by("position")


def conversation_by_pk(conversation_id) -> Conversation | None:
    return Conversation.objects.filter(pk=conversation_id).first()


def messages_by_pk(
    pks: Iterable[int], tail: Tail | None = None, read: dict[int, Message] | None = None
) -> list[Message]:
    """The messages with these pks, in position order: those `tail` holds, or `read`
    (rows the caller read for them: chatui.live.tail_cache), without a query."""
    pks = list(pks)
    known = {message.pk: message for message in tail.messages} if tail is not None else {}
    if read:
        known = {**read, **known}
    found = [known[pk] for pk in pks if pk in known]
    missing = [pk for pk in pks if pk not in known]
    if missing and not (tail is not None and tail.complete):  # else they are gone
        found += read_by_pk(missing)
    return sorted(found, key=lambda message: message.position)


#: Messages by primary key, one shape per IN-list size (chatui.db.prepared): a live frame
#: reads the rows its ChangeSet names (chatui.live.tail_cache), usually one or two.
_BY_PK = InSizes(
    lambda names: Prepared(
        lambda **pks: Message.objects.filter(pk__in=[pks[name] for name in names]).order_by(),
        **dict.fromkeys(names, Message._meta.pk),
    )
)


def read_by_pk(pks: Iterable[int]) -> list[Message]:
    """The messages with these pks that exist, in no order."""
    return [row for shape, named in _BY_PK.chunks(set(pks)) for row in shape.all(**named)]


#: How many of a conversation's latest messages a live frame reads first: a frame
#: usually changes the newest messages, and this many usually hold their tool batch
#: back to what starts it and the run's latest thinking lines, so the walks below
#: need no query of their own (docs/PERFORMANCE.md#p1, #p2). A longer walk goes on by query.
FRAME_TAIL = 16


@dataclass(frozen=True)
class Tail:
    """A conversation's latest messages in position order: every message from the
    first one on, and, when `complete`, all of the conversation's messages."""

    messages: list[Message]
    complete: bool

    def holds(self, position: int) -> bool:
        """Does it hold every message at `position` and after?"""
        return self.complete or position >= self.messages[0].position

    def before(self, position: int) -> list[Message]:
        """The messages it holds before `position`, newest first."""
        return [m for m in reversed(self.messages) if m.position < position]


def latest_messages(conversation_id, limit: int | None = None) -> Tail:
    """The conversation's latest `limit` (FRAME_TAIL) messages, read in one query."""
    limit = limit or FRAME_TAIL
    rows = _latest(limit).all(conversation=conversation_id)
    return Tail(rows[::-1], complete=len(rows) < limit)


# The reads of every live frame, compiled once per LIMIT (chatui.db.prepared): building and
# compiling them with the ORM costs about 0.3 ms each, more than running them
# (docs/PERFORMANCE.md#p1).


@lru_cache(maxsize=32)  # one shape per LIMIT: FRAME_TAIL, and a few in tests
def _latest(limit: int) -> Prepared[Message]:
    return Prepared(
        lambda conversation: Message.objects.filter(conversation_id=conversation).order_by(
            "-position"
        )[:limit],
        conversation=Conversation._meta.pk,
    )


@lru_cache(maxsize=32)  # one shape per chunk size: _FIRST_CHUNK doubled up to _MAX_CHUNK
def _older(limit: int) -> Prepared[Message]:
    """A conversation's `limit` latest messages before a position, newest first."""
    return Prepared(
        lambda conversation, below: Message.objects.filter(
            conversation_id=conversation, position__lt=below
        ).order_by("-position")[:limit],
        conversation=Conversation._meta.pk,
        below=Message._meta.get_field("position"),
    )


@lru_cache(maxsize=32)  # one shape per LIMIT: a frame's new lines in one run, plus one
def _spinners_below(limit: int) -> Prepared[Message]:
    """A run's latest `thinking` lines before a position, newest first (their pks)."""
    return Prepared(
        lambda conversation, run_id, below: (
            Message.objects.filter(
                conversation_id=conversation,
                role=Role.STATUS,
                status_type="thinking",
                run_id=run_id,
                position__lt=below,
            )
            .order_by("-position")
            .only("pk")[:limit]
        ),
        conversation=Conversation._meta.pk,
        run_id=Message._meta.get_field("run_id"),
        below=Message._meta.get_field("position"),
    )


def messages_changed_since(conversation: Conversation, after: int) -> QuerySet[Message]:
    return Message.objects.filter(conversation=conversation, updated_seq__gt=after)


def run_steps(message: Message, tail: Tail | None = None) -> list[Message]:
    """The assistant messages of `message`'s run, in order (just `message` outside a run)."""
    if not message.run_id:
        return [message]
    if tail is not None and tail.complete:
        return [m for m in tail.messages if _is_step_of(m, message.run_id)]
    return _RUN_STEPS.all(conversation=message.conversation_id, run_id=message.run_id)


#: Every assistant frame's read (S1's meta line sums the run's steps): compiled once.
_RUN_STEPS: Prepared[Message] = Prepared(
    lambda conversation, run_id: Message.objects.filter(
        conversation_id=conversation, role=Role.ASSISTANT, run_id=run_id
    ).order_by("position"),
    conversation=Conversation._meta.pk,
    run_id=Message._meta.get_field("run_id"),
)


def _is_step_of(message: Message, run_id: str) -> bool:
    return message.role == Role.ASSISTANT and message.run_id == run_id


def spinners_before(message: Message, limit: int = 1, tail: Tail | None = None) -> list[Message]:
    """The latest `thinking` lines of `message`'s run before it (docs/rendering.md#one-status-line:
    one status line): those `tail` holds, and when they are fewer than `limit`, the rest by
    query."""
    found: list[Message] = []
    below = message.position
    if tail is not None and tail.holds(message.position):
        found = [m for m in tail.before(message.position) if _is_spinner_of(m, message.run_id)]
        found = found[:limit]
        if len(found) == limit or tail.complete:
            return found
        below = tail.messages[0].position
    # Each frame removes the lines before its run's new work, so only the latest
    # can still be on a page.
    rows = _spinners_below(limit - len(found)).all(
        conversation=message.conversation_id, run_id=message.run_id, below=below
    )
    return found + rows


def _is_spinner_of(message: Message, run_id: str) -> bool:
    return (
        message.role == Role.STATUS
        and message.status_type == "thinking"
        and message.run_id == run_id
    )


def run_ended_since(conversation: Conversation, after: int) -> bool:
    """Did a run end (complete, fail or be stopped) after `after` (S3: the page then gets a
    full swap)?"""
    return Event.objects.filter(
        conversation=conversation,
        seq__gt=after,
        type="agent.status",
        payload__status__in=list(ConversationStatus.ended()),
    ).exists()


def events_after(conversation: Conversation, after: int, limit: int = 1000) -> QuerySet[Event]:
    return Event.objects.filter(conversation=conversation, seq__gt=after).order_by("seq")[:limit]


TRANSCRIPT_WINDOW = 200


def breaks_batch(message: Message) -> bool:
    """What ends a tool batch (G1): a user message, *shown* assistant text or a reasoning
    block (R6). Status lines do not: the presenter shows them right after the batch."""
    if message.role == "user":
        return True
    return message.role == "assistant" and (is_assistant_shown(message) or shows_reasoning(message))


_LOOKBACK = 50
#: A live frame's walk back past its tail starts smaller: it usually ends within a batch.
_FIRST_CHUNK = 16
_MAX_CHUNK = 800


def transcript_window(
    conversation: Conversation,
    *,
    before_position: int | None = None,
    around: int | None = None,
    limit: int = TRANSCRIPT_WINDOW,
) -> tuple[list[Message], bool]:
    """The latest `limit` messages (before `before_position`), widened back to the start
    of the tool batch they open with, so a batch is never cut in two. Returns the
    messages in order and whether earlier ones exist. Cost does not grow with history
    (P3): it reads a bounded window through the (conversation, position) index.

    With `around` (a message's position, e.g. a search hit's), the window holds that
    message: the latest window when it is among the latest `limit`, else about
    `limit / 2` messages either side of it, also widened forward to the end of the
    batch it stops in. `has_later` tells whether newer messages lie beyond it.
    """
    query = messages_of(conversation)
    if around is not None and _among_latest(query, around, limit):
        around = None
    if around is not None:
        later = _widen_forward(query, list(query.filter(position__gte=around)[: limit // 2]))
        window = list(query.filter(position__lt=around).order_by("-position")[: limit // 2])
        window = window[::-1] + later
    else:
        if before_position is not None:
            query = query.filter(position__lt=before_position)
        window = list(query.order_by("-position")[:limit])[::-1]
    window = _widen_back(query, window)
    return window, bool(window) and query.filter(position__lt=first_position(window)).exists()


def first_position(window: list[Message]) -> int:
    """Where the window starts: "load earlier" fetches what lies before it."""
    head = getattr(window, "batch_head", None)
    if head is not None:
        return head.start_position
    return window[0].position if window else 0


def has_later(conversation: Conversation, window: list[Message]) -> bool:
    """Are there messages after `window`'s last one (a window that is not the latest)?"""
    return bool(window) and (
        messages_of(conversation).filter(position__gt=window[-1].position).exists()
    )


def message_in(conversation: Conversation, message_pk: int) -> Message | None:
    return messages_of(conversation).filter(pk=message_pk).first()


def _among_latest(query: QuerySet[Message], position: int, limit: int) -> bool:
    """Is the message at `position` one of the latest `limit`? (One indexed probe.)"""
    return not query.filter(position__gt=position).order_by("position")[limit - 1 :].exists()


def _widen_back(query: QuerySet[Message], window: list[Message]) -> MessageWindow:
    """Back through the batch the window opens in, up to the message before it.

    A giant batch (docs/rendering.md#long-transcripts, P3) shows only its latest BATCH_WINDOW
    entries, so it is loaded back only as far as those need; the part before is counted in one query
    and described by the result's `batch_head` (the window then opens inside it)."""
    if not window or breaks_batch(window[0]):
        return MessageWindow(window)
    span = query.filter(position__lt=window[0].position)
    breaker = _previous_breaker(span)
    if breaker is not None:
        span = span.filter(position__gt=breaker.position)
    needed = BATCH_WINDOW - sum(map(_is_root, takewhile(lambda m: not breaks_batch(m), window)))
    widened: list[Message] = []
    for earlier in _chunks(span.order_by("-position")) if needed > 0 else ():
        widened.append(earlier)
        needed -= _is_root(earlier)
        if needed == 0:
            break
    first = widened[-1] if widened else window[0]
    head = _batch_head(span.filter(position__lt=first.position))
    result = MessageWindow(widened[::-1] + window)
    if head is not None:
        result.batch_head = head
    elif breaker is not None:
        result.insert(0, breaker)
    return result


def _is_root(message: Message) -> bool:
    """A top-level tool entry (nested tools name their parent)."""
    return message.role == Role.TOOL and not message.parent_tool_call_id


def _previous_breaker(span: QuerySet[Message]) -> Message | None:
    """The latest message of `span` that ends a batch. Only users and assistants with
    text or reasoning can (`breaks_batch`): the walk reads those, not the tool calls between."""
    speaks = ~Q(content="") | Q(metadata__has_key="reasoning")
    candidates = span.filter(Q(role=Role.USER) | (Q(role=Role.ASSISTANT) & speaks))
    return next(filter(breaks_batch, _chunks(candidates.order_by("-position"))), None)


def _batch_head(tools_before: QuerySet[Message]) -> BatchHead | None:
    """Counts of a batch's part that is not loaded: the summary's, from the columns
    (as `presenters._Outcomes.of_messages` counts loaded ones)."""
    tools = tools_before.filter(role=Role.TOOL).order_by()
    start = tools.filter(parent_tool_call_id="").order_by("position").values("pk", "position")
    start = start.first()
    if start is None:
        return None
    pending = Q(tool_status__in=[*PENDING, ""])
    counts = tools.aggregate(
        roots=Count("pk", filter=Q(parent_tool_call_id="")),
        failed=Count("pk", filter=Q(tool_status=ToolStatus.ERROR)),
        retried=Count("pk", filter=Q(tool_status=ToolStatus.ERROR) & RETRIED_Q),  # W4
        skipped=Count("pk", filter=Q(tool_status=ToolStatus.SKIPPED)),
        pending=Count("pk", filter=pending),
        ended=Count("pk", filter=pending & Q(metadata__no_result_recorded=True)),
        updated_seq=Max("updated_seq"),
    )
    return BatchHead(
        start_pk=start["pk"],
        start_position=start["position"],
        roots=counts["roots"],
        failed=counts["failed"] - counts["retried"],
        skipped=counts["skipped"],
        running=counts["pending"] - counts["ended"],
        updated_seq=counts["updated_seq"] or 0,
    )


def _widen_forward(query: QuerySet[Message], window: list[Message]) -> list[Message]:
    """On to the end of the batch the window stops in (up to the next breaker)."""
    if not window:
        return window
    rest = takewhile(
        lambda m: not breaks_batch(m), _chunks(query.filter(position__gt=window[-1].position))
    )
    return window + list(rest)


def batch_slice(message: Message, tail: Tail | None = None) -> MessageWindow:
    """The messages of the tool batch holding `message` (and its ancestors' batch).

    Of a giant batch only what its latest BATCH_WINDOW entries need is loaded; the
    part before is counted (`batch_head`), as on the page (docs/rendering.md#long-transcripts). What
    `tail` holds is not read again: a batch near the end of the conversation costs no query
    (nor a query built and left unused: building one costs about as much as a row)."""
    start = batch_start(message)
    # From the batch's start through `message`, then on to the next breaker.
    rest: list[Message] = []
    ended = False
    for later in _rows_from(message.conversation_id, start.position, tail):
        if later.position > message.position and breaks_batch(later):
            ended = True
            break
        rest.append(later)
    needed = BATCH_WINDOW - sum(map(_is_root, rest))
    before: list[Message] = []
    for previous in (
        _rows_before(message.conversation_id, start.position, tail) if needed > 0 else ()
    ):
        if breaks_batch(previous):
            window = MessageWindow(before[::-1] + rest)
            window.batch_ended = ended
            return window
        before.append(previous)
        needed -= _is_root(previous)
        if needed == 0:
            break
    window = MessageWindow(before[::-1] + rest)
    window.batch_ended = ended
    if needed <= 0:  # stopped inside the batch: count the part not loaded
        span = _siblings(message.conversation_id).filter(position__lt=window[0].position)
        breaker = _previous_breaker(span)
        if breaker is not None:
            span = span.filter(position__gt=breaker.position)
        window.batch_head = _batch_head(span)
    return window


def _siblings(conversation_id) -> QuerySet[Message]:
    # By id: `message.conversation` would cost a query per live frame.
    return Message.objects.filter(conversation_id=conversation_id).order_by("position")


def batch_start(message: Message) -> Message:
    """`message`, or the earliest of its ancestors (a nested entry shows in theirs)."""
    start = message
    seen = {message.tool_call_id}
    while start.parent_tool_call_id and start.parent_tool_call_id not in seen:
        parent = (
            _siblings(message.conversation_id)
            .filter(role="tool", tool_call_id=start.parent_tool_call_id)
            .first()
        )
        if parent is None:
            break
        seen.add(parent.tool_call_id)
        start = parent if parent.position < start.position else start
    return start


def _rows_from(conversation_id, position: int, tail: Tail | None) -> Iterable[Message]:
    """The messages at `position` and after, in order: those before `tail` by query,
    then `tail`'s (not read twice)."""
    if tail is not None and tail.holds(position):
        return (m for m in tail.messages if m.position >= position)
    later = _siblings(conversation_id).filter(position__gte=position)
    if tail is None:
        return _chunks(later)
    return chain(_chunks(later.filter(position__lt=tail.messages[0].position)), tail.messages)


def _rows_before(conversation_id, position: int, tail: Tail | None) -> Iterator[Message]:
    """The messages before `position`, newest first: those `tail` holds, then, only if
    the walk goes on past them, the others by query."""
    if tail is not None and tail.holds(position):
        yield from tail.before(position)
        if tail.complete:
            return
        position = tail.messages[0].position
    # By position, not OFFSET: each chunk is one index seek, and its query is compiled
    # once per size (a live frame's walk back through a tool batch, docs/PERFORMANCE.md tool steps).
    size = _FIRST_CHUNK
    while True:
        chunk = _older(size).all(conversation=conversation_id, below=position)
        yield from chunk
        if len(chunk) < size:
            return
        position = chunk[-1].position
        size = min(2 * size, _MAX_CHUNK)


def batch_before(conversation: Conversation, start_pk: int, before: int) -> MessageWindow:
    """The tool batch that starts at tool message `start_pk`, before position `before`
    ("show N earlier calls"): its latest BATCH_WINDOW entries loaded, the part before
    them counted (`batch_head`). Empty when `start_pk` opens no batch here."""
    start = messages_of(conversation).filter(pk=start_pk, role=Role.TOOL).first()
    if start is None or start.position >= before:
        return MessageWindow()
    span = messages_of(conversation).filter(position__gte=start.position, position__lt=before)
    loaded: list[Message] = []
    roots = 0
    for message in _chunks(span.order_by("-position")):
        if breaks_batch(message):
            break  # not one batch from `start_pk` on: show the part after the break
        loaded.append(message)
        roots += _is_root(message)
        if roots == BATCH_WINDOW:
            break
    window = MessageWindow(loaded[::-1])
    if loaded and roots == BATCH_WINDOW:
        window.batch_head = _batch_head(span.filter(position__lt=loaded[-1].position))
    return window


def _chunks(query: QuerySet[Message]) -> Iterator[Message]:
    """`query`'s rows, read _LOOKBACK at first (a walk usually stops early), then in
    chunks twice as large each time (a long walk costs few queries)."""
    offset, size = 0, _LOOKBACK
    while True:
        chunk = list(query[offset : offset + size])
        yield from chunk
        if len(chunk) < size:
            return
        offset += size
        size = min(2 * size, _MAX_CHUNK)


# -- the conversation list and the rail ---------------------------------------------------

#: Characters of the last message read for its preview: more than the row shows, so a
#: secret is masked whole before the preview is clipped (chatui.read.listing).
PREVIEW_SOURCE_CHARS = 2000
#: Status lines a preview skips: shown only while their run goes (S3).


def message_count(condition: Q) -> Coalesce:
    """The number of a conversation's messages matching `condition`, as a subquery
    (correlated, so filters or joins elsewhere in the query cannot inflate it)."""
    matching = (
        Message.objects.filter(condition, conversation=OuterRef("pk"))
        .order_by()
        .values("conversation")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(matching, output_field=IntegerField()), 0)


def _latest_text(role: str) -> Subquery:
    """W6 (docs/rendering.md#w6): the start of the conversation's latest non-empty
    message of `role` — by the (conversation, role, …) index, so a giant batch of tool
    rows after it is never walked."""
    latest = Message.objects.filter(conversation=OuterRef("pk"), role=role).exclude(content="")
    latest = latest.order_by("-position").annotate(start=Substr("content", 1, PREVIEW_SOURCE_CHARS))
    return Subquery(latest.values("start")[:1])


def with_row_data(conversations: QuerySet[Conversation]) -> QuerySet[Conversation]:
    """What a list row shows, in the same query as the rows (no query per row): tool
    calls and failed ones (the conversation's own columns, kept by the projection: no
    count over its messages), and one bounded subquery per value for the last shown
    message (role, tool, its text's start) and the latest run's status."""
    latest_run = Run.objects.filter(conversation=OuterRef("pk")).order_by("-started_seq")
    return with_outcome_counts(conversations).annotate(
        answer_text=_latest_text(Role.ASSISTANT),
        asked_text=_latest_text(Role.USER),
        run_status=Subquery(latest_run.values("status")[:1]),
    )


def with_outcome_counts(conversations: QuerySet[Conversation]) -> QuerySet[Conversation]:
    """W4 (docs/rendering.md#w4): a conversation's tool calls by final outcome, as
    `outcomes.row_counts` reads them: its own columns, kept by the projection (no count
    over its messages)."""
    return conversations.annotate(
        n_tools=F("tool_count"),
        n_failed=F("failed_tool_count"),
        n_denied=F("denied_tool_count"),
        n_expired=F("expired_tool_count"),
        n_cancelled=F("cancelled_tool_count"),
    )


def with_run_status(conversations: QuerySet[Conversation]) -> QuerySet[Conversation]:
    """The latest run's status and the outcome counts (W4): what a compact (rail) row
    shows. No preview: reading the last message of 30 conversations would make each
    conversation page pay for the reader's history."""
    latest_run = Run.objects.filter(conversation=OuterRef("pk")).order_by("-started_seq")
    return with_outcome_counts(conversations).annotate(
        run_status=Subquery(latest_run.values("status")[:1])
    )


def conversation_rows(
    user: AbstractBaseUser, limit: int, *, compact: bool = False
) -> list[Conversation]:
    """The reader's latest conversations, newest first, with their row data. Compact
    rows (the rail) skip the counts and the preview: counting every message of 30
    conversations would make each conversation page pay for the reader's history."""
    conversations = conversations_for(user)
    annotated = with_run_status(conversations) if compact else with_row_data(conversations)
    return list(annotated[:limit])


#: A live row update's read, for every ingest that creates a message: its subqueries
#: compiled once (chatui.db.prepared).
_ROW: Prepared[Conversation] = Prepared(
    lambda pk: with_row_data(Conversation.objects.filter(pk=pk)), pk=Conversation._meta.pk
)


def conversation_row(conversation_id) -> Conversation | None:
    """One conversation with its row data (a live row update)."""
    return _ROW.one(pk=conversation_id)


# -- W2 the run strip ---------------------------------------------------------------------


#: The tool statuses a run strip's database read counts rather than reads (W2).
_COUNTED = (ToolStatus.SUCCESS, ToolStatus.SKIPPED, ToolStatus.CANCELLED)
_RUN_FIELDS = {"conversation": Conversation._meta.pk, "run": Message._meta.get_field("run_id")}
_RUN_COUNTS = Prepared(
    lambda conversation, run: (
        Message.objects.filter(
            conversation_id=conversation, run_id=run, role=Role.TOOL, tool_status__in=_COUNTED
        )
        .order_by()
        .values("tool_status")
        .annotate(n=Count("pk"), retried=Count("pk", filter=RETRIED_Q))
        .values_list("tool_status", "n", "retried")
    ),
    **_RUN_FIELDS,
)
_RUN_OTHER_TOOLS = Prepared(
    lambda conversation, run: (
        Message.objects.filter(conversation_id=conversation, run_id=run, role=Role.TOOL)
        .exclude(tool_status__in=_COUNTED)
        .order_by("position")
    ),
    **_RUN_FIELDS,
)


def going_run_id(conversation_id) -> str | None:
    """The run that goes now: the newest one still running (None when none does). A run
    that has just started may have no message yet, so the newest message's run is the
    one before it (docs/rendering.md#w2)."""
    return (
        Run.objects.filter(conversation_id=conversation_id, status="running")
        .order_by("-started_seq")
        .values_list("run_id", flat=True)
        .first()
    )


def going_run_messages(
    conversation_id, tail: Tail | None = None, run_id: str | None = None
) -> tuple[list[Message], dict[str, int] | None]:
    """What a run strip shows of the run of the newest message that names one
    (docs/rendering.md#w2): `(messages, None)`, all its messages in position order, when
    `tail` (a live frame's latest messages) holds the whole run — the frame reads nothing
    more; else `(rows, status_counts)`: its tool calls that ended as a success, skipped or
    cancelled counted by the database (not retried, W4), and only its other tool rows
    (pending, failed, denied: few) and its newest message read. So a frame of a long run
    costs two indexed queries, compiled once (chatui.db.prepared), not a read of the
    whole run (docs/PERFORMANCE.md#p1). `run_id`, when the caller knows the going run
    (`going_run_id`), else the run of the newest message that names one."""
    messages = tail.messages if tail is not None else []
    if run_id is None:
        run_id = next((m.run_id for m in reversed(messages) if m.run_id), None)
    if run_id is None and not (tail is not None and tail.complete):
        run_id = (
            Message.objects.filter(conversation_id=conversation_id)
            .exclude(run_id="")
            .order_by("-position")
            .values_list("run_id", flat=True)
            .first()
        )
    if run_id is None:
        return [], None
    if tail is not None and (tail.complete or messages[0].run_id != run_id):
        return [m for m in messages if m.run_id == run_id], None
    names = {"conversation": conversation_id, "run": run_id}
    status_counts = {status: n - retried for status, n, retried in _RUN_COUNTS.all(**names)}
    rows = _RUN_OTHER_TOOLS.all(**names)
    newest = [m for m in messages if m.run_id == run_id][-1:] if messages else []
    if not newest:
        run = Message.objects.filter(conversation_id=conversation_id, run_id=run_id)
        newest = list(run.defer("content").order_by("-position")[:1])
    if newest and (not rows or newest[0].pk != rows[-1].pk):
        rows += newest
    return rows, status_counts
