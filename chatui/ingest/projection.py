"""Project events onto Message and Run rows (docs/events.md#event-types, #canonical-messages,
[000]).

`Projector.apply` is called by `chatui.ingest.service` only, inside the ingest
transaction, once per appended event and in seq order. It must be
deterministic: `reproject` replays the same events and must produce the same
messages, so every id, position and timestamp comes from the events themselves.

Why it is long: one handler per event type on one `Projector`, sharing its caches of
the rows a batch touches; the AgentSpine handlers are the second dialect of the same
state machine and must see the same state.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connections, models, transaction
from django.db.models import F, Min, QuerySet, Value
from django.db.models.functions import Concat, Substr

from chatui.db.internals import loaded_values
from chatui.db.prepared import (
    InSizes,
    Prepared,
    PreparedDelete,
    PreparedInsert,
    PreparedLookup,
    PreparedSave,
    PreparedUpdate,
    cursor_for,
)
from chatui.ingest.dialects.agentspine import AGENTSPINE
from chatui.ingest.dialects.agui import LOG_READ_BACK as AGUI_LOG_READ_BACK
from chatui.ingest.dialects.agui import LOG_TYPES as AGUI_LOG_TYPES
from chatui.models import (
    Conversation,
    ConversationStatus,
    Event,
    Message,
    Note,
    Role,
    Run,
    SecretReveal,
    StatusType,
    ToolStatus,
    position_for,
)

from . import attachments, search_index
from .agui_projection import AguiProjection
from .events import DEFAULT_APPROVAL_TIMEOUT_S
from .otel_projection import OTEL_TYPES, OtelHandlers
from .tombstones import TOMBSTONE_KEY, is_tombstone
from .values import (
    MAX_TOKENS,
    USAGE_COUNTS,
    details_failure,
    is_tool_execution_result,
    result_text,
)

logger = logging.getLogger(__name__)

# A denied call never runs: what a runtime sends for it afterwards changes nothing.
FINISHED = (
    ToolStatus.SUCCESS,
    ToolStatus.ERROR,
    ToolStatus.SKIPPED,
    ToolStatus.DENIED,
    ToolStatus.CANCELLED,
)
OPEN = (ToolStatus.QUEUED, ToolStatus.RUNNING)
# The live output tail kept on a running tool; the event log keeps every chunk.
OUTPUT_TAIL_CHARS = 8000
TITLE_CHARS = 80
AGENTSPINE_STOPPED = re.compile(r"\(agent stopped: (?P<reason>[^)]+)\)")
AGENTSPINE_STOP_STATUSES = ("cancelled", "loop_detected")
#: W5: the line a run stopped by a person ends with.
STOPPED_BY_YOU = "Stopped by you"


@dataclass
class ChangeSet:
    """What one ingest call changed, for the live push (filled in seq order)."""

    changed: dict[int, int] = field(default_factory=dict)  # message pk -> seq
    created: set[int] = field(default_factory=set)  # message pks new in this call
    removed: list[int] = field(default_factory=list)  # message pks
    conversation_changed: bool = False
    # The whole projection was rebuilt: viewers get one fresh transcript instead of
    # piecemeal updates. (A run's end is piecemeal: its ephemeral statuses are
    # `removed`, which is all S3 changes, since statuses never split a batch.)
    full_refresh: bool = False
    # Messages whose only change in this call was streamed text appended to a bubble
    # the page already shows: pk -> [(seq, text)] (docs/PERFORMANCE.md#p5: a delta frame carries
    # the new text, not the whole message).
    appended: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    # The conversation's `rebuilds` as the ingest transaction read it (under its row
    # lock): what a live frame may take from frames before it is stamped with it
    # (chatui.live.tail_cache). None: not from an ingest (a replay's), so not known.
    rebuilds: int | None = None
    # Changed messages as this ingest wrote them, by pk: handed only to its own
    # on-commit frame, which then need not read them back (chatui.ingest.service
    # `_announced`, chatui.live.tail_cache). Rows given here equal what reading them gives.
    written: dict[int, Message] = field(default_factory=dict, compare=False, repr=False)

    def remove(self, message_pk: int) -> None:
        self.changed.pop(message_pk, None)
        self.created.discard(message_pk)
        self.appended.pop(message_pk, None)
        self.removed.append(message_pk)


# Events that change no searchable text: indexing on them would re-index a streaming
# answer at every token (quadratic) or a running tool at every progress line.
# An AG-UI call's streamed arguments are indexed once, when TOOL_CALL_END reads them.
#: AG-UI's tool result: its `messageId` names the result's message, never a row of ours.
AGUI_RESULT = "agui.TOOL_CALL_RESULT"
UNSEARCHED_EVENTS = ("agent.message.delta", "agent.tool.progress", "agui.TOOL_CALL_ARGS")
# How much of a streaming message a batch of deltas reads: enough to know whether the
# page shows it yet (`_shows_streaming`), not the whole text (docs/PERFORMANCE.md#p5).
STREAM_HEAD_CHARS = 64

#: G14, W4: set on a failed attempt that a later attempt of the same call retried
#: (chatui.read.outcomes reads it): not a call or a failure of its own.
RETRIED_KEY = "retried"
#: How many of a run's latest failures of the same tool an attempt looks through for the
#: attempt it retries.
RETRY_LOOKBACK = 20


#: W6 (docs/rendering.md#w6): the stop reasons of a run that simply finished; a
#: continuation that stops for one of them adds no line (other reasons, `max_turns`,
#: `steps_limit`, …, still show).
NORMAL_STOP_REASONS = frozenset(
    {"end_turn", "stop", "stop_sequence", "completed", "complete", "done", "finished", "success"}
)


def is_normal_end(should_continue: Any, stop_reason: Any) -> bool:
    return (
        should_continue is False
        and isinstance(stop_reason, str)
        and stop_reason.strip().lower() in NORMAL_STOP_REASONS
    )


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


#: The conversation's list-row counts (issue 12), kept by `Projector._count_tools` and
#: written by the caller's save of the conversation row.
ROW_COUNT_FIELDS = [
    "tool_count",
    "failed_tool_count",
    "denied_tool_count",
    "expired_tool_count",
    "cancelled_tool_count",
]
#: W4: the outcomes counted in a column of their own beside failures, by the column.
APART_COUNTS = ("denied_tool_count", "expired_tool_count", "cancelled_tool_count")


def _apart(status: str | None, metadata: dict[str, Any]) -> str | None:
    """The column a tool in `status` counts in beside `tool_count` and failures (W4, as
    chatui.read.outcomes.outcome_of decides): an expired request is stored `denied`
    with `approval.decision` "expired". Denied and cancelled are final statuses, so
    the current metadata tells a stored `denied` row's column too."""
    if status == ToolStatus.DENIED:
        approval = metadata.get("approval")
        if isinstance(approval, dict) and approval.get("decision") == "expired":
            return "expired_tool_count"
        return "denied_tool_count"
    if status == ToolStatus.CANCELLED:
        return "cancelled_tool_count"
    return None


# Message columns a projection may change after creating the row.
MUTABLE_FIELDS = [
    "content", "timestamp", "metadata", "tool_call_id", "tool_name", "tool_status",
    "parent_tool_call_id", "status_type", "is_final", "updated_seq",
]  # fmt: skip


class KnownRuns:
    """The runs this process has seen committed, by conversation: a run, once
    created, stays (only deleting its conversation or `reproject`, which creates it
    again from the same events, removes it), so `prefetch` need not ask again.
    Added on commit only: a rolled-back transaction's run was never created."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self._runs: dict[Any, set[str]] = {}
        self._lock = threading.Lock()

    def among(self, conversation_pk: Any, run_ids: set[str]) -> set[str]:
        """Which of `run_ids` are known to exist in the conversation."""
        with self._lock:
            return run_ids & self._runs.get(conversation_pk, set())

    def add_on_commit(self, conversation_pk: Any, run_id: str) -> None:
        transaction.on_commit(lambda: self._add(conversation_pk, run_id))

    def _add(self, conversation_pk: Any, run_id: str) -> None:
        with self._lock:
            if len(self._runs) >= self.LIMIT:
                self._runs.clear()  # a cache: forgetting costs one query per conversation
            self._runs.setdefault(conversation_pk, set()).add(run_id)


known_runs = KnownRuns()


class LatestRuns:
    """Each conversation's latest run as of a committed seq, so that the next ingest
    that needs it (AG-UI's run-less events: TOOL_CALL_ARGS, TEXT_MESSAGE_CONTENT, …)
    need not ask: valid while the conversation's `last_seq` and `rebuilds` are still
    those it was recorded at — any later write, in any process, moves `last_seq`.
    Recorded on commit only."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self._latest: dict[Any, tuple[int, int, str]] = {}
        self._lock = threading.Lock()

    def get(self, conversation: Conversation) -> str | None:
        with self._lock:
            known = self._latest.get(conversation.pk)
        if known is None or known[:2] != (conversation.last_seq, conversation.rebuilds):
            return None
        return known[2]

    def record_on_commit(self, conversation_pk: Any, seq: int, rebuilds: int, run_id: str) -> None:
        transaction.on_commit(lambda: self._record(conversation_pk, (seq, rebuilds, run_id)))

    def _record(self, conversation_pk: Any, known: tuple[int, int, str]) -> None:
        with self._lock:
            if len(self._latest) >= self.LIMIT:
                self._latest.clear()  # a cache: forgetting costs one query
            self._latest[conversation_pk] = known


latest_runs = LatestRuns()


def _messages(conversation_pk: Any) -> QuerySet[Message]:
    # Unordered: sorted by position, SQLite walks the conversation's messages instead of
    # the index on what is looked up (tests/db/test_query_plans.py).
    return Message.objects.filter(conversation_id=conversation_pk).order_by()


def _streaming_messages(conversation_pk: Any) -> QuerySet[Message]:
    return (
        _messages(conversation_pk)
        .defer("content")
        .annotate(content_head=Substr("content", 1, STREAM_HEAD_CHARS))
    )


#: What `Projector.prefetch` looks up. Messages by id: whole, or, for a call of deltas
#: only, without their text (its head instead: `_shows_streaming`).
MESSAGES_BY_ID = {
    False: PreparedLookup(_messages, "message_id"),
    True: PreparedLookup(_streaming_messages, "message_id"),
}
TOOLS_BY_CALL_ID = PreparedLookup(lambda pk: _messages(pk).filter(role=Role.TOOL), "tool_call_id")
RUNS_BY_ID = PreparedLookup(
    # Unordered: sorted, SQLite reads the conversation's runs by (conversation,
    # started_seq) instead of the (conversation, run_id) key.
    lambda pk: Run.objects.filter(conversation_id=pk).order_by().values_list("run_id", flat=True),
    "run_id",
)
SAVE_CHANGED = PreparedSave(Message, MUTABLE_FIELDS)
INSERT_MESSAGES = PreparedInsert(Message)
#: Streamed text appended in SQL: the message is not read back (docs/PERFORMANCE.md#p5).
APPEND_TEXT = PreparedUpdate(
    lambda pk, text, seq: Message.objects.filter(pk=pk),
    lambda pk, text, seq: {"content": Concat(F("content"), Value(text)), "updated_seq": seq},
    pk=Message._meta.pk,
    text=Message._meta.get_field("content"),
    seq=Message._meta.get_field("updated_seq"),
)


class AppendToStreaming:
    """`_append`'s UPDATE for a message not read first: the text goes onto the
    conversation's message of that id only if it is an unfinished assistant answer
    that `_shows_streaming` (its head, stripped of what `str.lstrip` strips, is not
    blank and starts with neither "{" nor "["), judged in SQL on the text before this
    append; its key comes back (None: no such message, nothing changed). SQLite ≥ 3.35
    and PostgreSQL return it; elsewhere it always answers None."""

    # What `str.lstrip()` strips: every character `str.isspace()` (all below U+3001).
    WHITESPACE = "".join(chr(code) for code in range(0x3001) if chr(code).isspace())

    def __init__(self) -> None:
        self._sql: dict[str, str | None] = {}

    def run(self, conversation_pk: Any, message_id: str, text: str, seq: int) -> int | None:
        connection = connections["default"]
        sql = self._sql.get(connection.alias, "")
        if sql == "":
            sql = self._sql[connection.alias] = self._write_sql(connection)
        if sql is None:
            return None
        params = [
            _MESSAGE_CONTENT.get_db_prep_save(text, connection),
            seq,
            _CONVERSATION.get_db_prep_value(conversation_pk, connection),
            message_id,
            Role.ASSISTANT.value,
            False,
            self.WHITESPACE,
        ]
        cursor = cursor_for(connection)
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        return rows[0][0] if rows else None

    @staticmethod
    def _write_sql(connection) -> str | None:
        if not connection.features.can_return_columns_from_insert:
            return None
        quote = connection.ops.quote_name
        column = {
            name: quote(Message._meta.get_field(name).column)
            for name in ("content", "updated_seq", "conversation", "message_id", "role", "is_final")
        }
        head = f"LTRIM(SUBSTR({column['content']}, 1, {STREAM_HEAD_CHARS}), %s)"
        return (
            f"UPDATE {quote(Message._meta.db_table)}"
            f" SET {column['content']} = {column['content']} || %s, {column['updated_seq']} = %s"
            f" WHERE {column['conversation']} = %s AND {column['message_id']} = %s"
            f" AND {column['role']} = %s AND {column['is_final']} = %s"
            f" AND SUBSTR({head}, 1, 1) NOT IN ('', '{{', '[')"
            f" RETURNING {quote(Message._meta.pk.column)}"
        )


_MESSAGE_CONTENT = Message._meta.get_field("content")
APPEND_TO_STREAMING = AppendToStreaming()

#: The event types the projector reads back from the log (progress logged before its
#: tool's entry: EARLY_PROGRESS, `_apply_early_progress`; an AgentSpine message still
#: open: `_open_agentspine_message`). A copy of the log holding only these projects the
#: same (chatui.read.replay keeps no other); a new read of the log adds its type here.
LOG_READ_BACK = frozenset(
    {"agent.tool.progress", "agentspine.message_start", "agentspine.message_end"}
    | AGUI_LOG_READ_BACK
)

#: Tool call id -> the seq of its first logged progress.
EARLY_PROGRESS = PreparedLookup(
    lambda pk: (
        Event.objects.filter(conversation_id=pk, type="agent.tool.progress")
        .order_by()
        .values_list("tool_call_id")
        .annotate(first=Min("seq"))
    ),
    "tool_call_id",
)

# What a run's end and a status event run, compiled once (chatui.db.prepared): a batch
# of 100 events ends one or two runs, and each of these compiled by the ORM cost
# more than running it (docs/PERFORMANCE.md#p2).
_CONVERSATION = Conversation._meta.pk
_MESSAGE_RUN = Message._meta.get_field("run_id")
_RUN_ID = Run._meta.get_field("run_id")
_RUN_STATUS = Run._meta.get_field("status")
#: The conversation's latest run: the one whose status is the conversation's.
LATEST_RUN = Prepared(
    lambda pk: (
        Run.objects.filter(conversation_id=pk)
        .order_by("-started_seq")
        .values_list("run_id", flat=True)[:1]
    ),
    pk=_CONVERSATION,
)
#: A run seen for the first time (`prefetch` found no row for it).
INSERT_RUN = PreparedInsert(Run)
SET_RUN_STATUS = PreparedUpdate(
    lambda pk, run_id, status: Run.objects.filter(conversation_id=pk, run_id=run_id),
    lambda pk, run_id, status: {"status": status},
    pk=_CONVERSATION,
    run_id=_RUN_ID,
    status=_RUN_STATUS,
)
END_RUN = PreparedUpdate(
    lambda pk, run_id, status, ended_at, error: Run.objects.filter(
        conversation_id=pk, run_id=run_id
    ),
    lambda pk, run_id, status, ended_at, error: {
        "status": status,
        "ended_at": ended_at,
        "error_message": error,
    },
    pk=_CONVERSATION,
    run_id=_RUN_ID,
    status=_RUN_STATUS,
    ended_at=Run._meta.get_field("ended_at"),
    error=Run._meta.get_field("error_message"),
)
RUN_STATUS = Prepared(
    lambda pk, run_id: Run.objects.filter(conversation_id=pk, run_id=run_id).values_list(
        "status", flat=True
    ),
    pk=_CONVERSATION,
    run_id=_RUN_ID,
)
#: T2: a run's tools still waiting when it ends.
UNANSWERED_TOOLS = Prepared(
    lambda pk, run_id: Message.objects.filter(
        conversation_id=pk, role=Role.TOOL, run_id=run_id, tool_status__in=OPEN
    ).order_by("position"),
    pk=_CONVERSATION,
    run_id=_MESSAGE_RUN,
)


def _of_run(rows: Any) -> dict[bool, Prepared[Any]]:
    """`rows(pk)` of a run and of no run (run_id ""), or of any run (for an event
    without one): by whether the event names a run. Unordered: by the
    (conversation, role, run_id, position) index, not a walk in position order."""
    return {
        True: Prepared(
            lambda pk, run_id: rows(pk).filter(run_id__in=[run_id, ""]).order_by(),
            pk=_CONVERSATION,
            run_id=_MESSAGE_RUN,
        ),
        False: Prepared(lambda pk: rows(pk).order_by(), pk=_CONVERSATION),
    }


#: Answers still streaming when their run ends (docs/rendering.md#streaming-text).
STREAMING = _of_run(
    lambda pk: Message.objects.filter(conversation_id=pk, role=Role.ASSISTANT, is_final=False)
)
#: S3: a run's ephemeral statuses, as (position, pk, role, tool_status) for `_remove`.
EPHEMERAL = _of_run(
    lambda pk: Message.objects.filter(
        conversation_id=pk, role=Role.STATUS, status_type__in=StatusType.EPHEMERAL
    ).values_list("position", "pk", "role", "tool_status")
)
#: `_remove`'s delete, in SQL: the ORM's collector would first read every doomed row
#: back to follow the one relation to messages, which sets its end to NULL
#: (tests/ingest/test_batch_projection_cost.py checks it is still the only one).
_MESSAGE_PK = Message._meta.pk
UNLINK_REVEALS = InSizes(
    lambda names: PreparedUpdate(
        lambda **pks: SecretReveal.objects.filter(message_id__in=[pks[n] for n in names]),
        lambda **pks: {"message": None},
        **dict.fromkeys(names, _MESSAGE_PK),
    )
)
DELETE_MESSAGES = InSizes(
    lambda names: PreparedDelete(
        lambda **pks: Message.objects.filter(pk__in=[pks[n] for n in names]),
        **dict.fromkeys(names, _MESSAGE_PK),
    )
)
#: What `_remove` deletes in SQL, and how each relation to messages is followed there.
MESSAGE_RELATIONS = {(SecretReveal, "message"): models.SET_NULL}


class Projector(OtelHandlers, AguiProjection):
    """Applies events to one conversation's messages. One instance per ingest call.

    Writes are deferred: messages are created and changed in memory and written with
    one bulk insert and one bulk update in `flush()`, and lookups are answered from
    what `prefetch()` loaded for the batch. That keeps a batch of N events at a
    handful of queries instead of several per event (docs/PERFORMANCE.md#p2).
    """

    FINISHED = FINISHED
    OPEN = OPEN

    def __init__(self, conversation: Conversation, *, empty: bool = False):
        self.conversation = conversation
        self.changes = ChangeSet(rebuilds=conversation.rebuilds)
        if empty:  # no messages yet (reproject): nothing to count either
            for name in ROW_COUNT_FIELDS:
                setattr(conversation, name, 0)
        # None means "known not to exist". With `empty` (reproject) every miss is final.
        self._messages: dict[str, Message | None] = {}
        self._tools: dict[str, Message | None] = {}
        self._runs: set[str] = set()
        # Runs `prefetch` found no row for: created with a plain INSERT.
        self._new_runs: set[str] = set()
        # What this call knows of runs: the latest one's id ("" none, None not loaded)
        # and the statuses it wrote or created them with.
        self._latest_run: str | None = "" if empty else None
        self._run_statuses: dict[str, str] = {}
        # A run ended in this call: ingest signs a checkpoint (docs/auditing.md#the-signing-key).
        self.ended_a_run = False
        self._empty = empty
        self._new: list[Message] = []
        self._dirty: dict[int, Message] = {}
        # Text to append in SQL (`content || ?`) at flush: pk -> (message, [(seq, text)]).
        self._appends: dict[int, tuple[Message, list[tuple[int, str]]]] = {}
        self._searchable: dict[int, Message] = {}  # by id(): new ones have no pk yet
        # The messages written whole (INSERT, or every mutable column by UPDATE), as
        # written: nothing but the projector's own later writes changes them.
        self._written: dict[int, Message] = {}
        # Tool call id -> the seq of its first logged progress (None: not loaded).
        self._early_progress: dict[str, int] | None = None
        self._unclaimed: bool | None = False if empty else None
        # [001] AgentSpine sends no run or message ids: the current AgentSpine run, and
        # its open message as (message id, role, source). Loaded lazily (None = unknown).
        self._agentspine_run: str | None = "" if empty else None
        self._agentspine_message: tuple[str, str, str] | None = None
        self._agentspine_message_known = empty
        self._agui_reset()
        # The deadlines of the approval requests this call projected, native or AG-UI
        # interrupts alike: the approval clock times them when the ingest commits.
        self.approval_deadlines: list[datetime] = []

    def prefetch(self, events: Sequence[Event]) -> None:
        """Load, in a few queries, everything the batch's events will look up."""
        message_ids, call_ids, run_ids = set(), set(), set()
        for event in events:
            payload = event.payload
            if event.type == "user.message":
                message_ids.add(payload.get("message_id") or f"msg_{event.seq}")
            elif payload.get("message_id"):
                message_ids.add(payload["message_id"])
            elif (
                event.type in AGUI_LOG_TYPES
                and event.type != AGUI_RESULT  # its message is the result's: no row of ours
                and isinstance(payload.get("messageId"), str)
            ):
                message_ids.add(payload["messageId"])
            if event.tool_call_id:
                call_ids.add(event.tool_call_id)
            if event.type in OTEL_TYPES:  # docs/events.md#otlp: read once, here
                self._otel_prefetch(event, message_ids, call_ids)
            call_ids.update(c["id"] for c in payload.get("tool_calls", ()) if c.get("id"))
            if event.run_id:
                run_ids.add(event.run_id)
        self._messages.update(dict.fromkeys(message_ids))
        self._tools.update(dict.fromkeys(call_ids))
        pk = self.conversation.pk
        if not self._empty:
            # Deltas append in SQL: a long answer is not read back at every token.
            streaming = bool(events) and all(e.type == "agent.message.delta" for e in events)
            by_id = MESSAGES_BY_ID[streaming]
            for message in by_id.matching(pk, message_ids):
                self._messages[message.message_id] = message
            tools = TOOLS_BY_CALL_ID.matching(pk, call_ids)
            for message in sorted(tools, key=lambda tool: -tool.position):
                self._tools[message.tool_call_id] = message  # the earliest one wins
            self._runs.update(known_runs.among(pk, run_ids))
            self._runs.update(RUNS_BY_ID.matching(pk, run_ids - self._runs))
        self._new_runs = run_ids - self._runs
        # Only an entry that appears — a tool's `started`, or a call its step queues — looks
        # for progress logged before it: no query for a batch that makes no entry.
        appearing = {event.tool_call_id for event in events if event.type == "agent.tool.started"}
        appearing |= {
            call["id"]
            for event in events
            if event.type == "agent.step.completed"
            for call in event.payload.get("tool_calls", [])
            if call.get("id")
        }
        # A call whose entry exists already had its early progress applied when it
        # appeared (its `started` and its step's queuing then find it: no lookup).
        appearing = {call_id for call_id in appearing if self._tools.get(call_id) is None}
        self._early_progress = dict(EARLY_PROGRESS.matching(pk, appearing))

    # -- entry point ------------------------------------------------------

    def apply_all(self, events: Sequence[Event]) -> None:
        """Apply appended `events`, in seq order, and write what they changed."""
        if len(events) == 1 and self._appended_unread(events[0]):
            return
        self.prefetch(events)
        for event in events:
            self.apply(event)
        self._otel_finish()  # the runs its root spans ended, together (docs/PERFORMANCE.md#p8)
        self.flush()
        if self._latest_run is not None and events:
            latest_runs.record_on_commit(
                self.conversation.pk, events[-1].seq, self.conversation.rebuilds, self._latest_run
            )

    def _appended_unread(self, event: Event) -> bool:
        """A lone delta to an answer the page shows streaming, of a run this process
        knows: its text appended in one UPDATE that finds the message itself, instead
        of a read and a write (most single-event requests: docs/PERFORMANCE.md#p2, #p5). Applies it
        and says True only then — the same rows and the same changes as `_append` —
        else nothing was changed and the event goes the usual way."""
        if self._empty:
            return False
        if event.type == "agent.message.delta" and "dialect" not in event.payload:
            message_id, text = event.payload["message_id"], event.payload["delta"]
        elif event.type == "agui.TEXT_MESSAGE_CONTENT" and event.payload.get("delta"):
            # docs/events.md#ag-ui: the same append (an AG-UI text of another role, or
            # one not shown streaming yet, is not found here and goes the usual way).
            message_id, text = event.payload["messageId"], event.payload["delta"]
        else:
            return False
        pk = self.conversation.pk
        if event.run_id and not known_runs.among(pk, {event.run_id}):
            return False
        message_pk = APPEND_TO_STREAMING.run(pk, message_id, text, event.seq)
        if message_pk is None:
            return False
        self.changes.changed[message_pk] = event.seq
        self.changes.appended[message_pk] = [(event.seq, text)]
        return True

    def apply(self, event: Event) -> None:
        if TOMBSTONE_KEY in event.payload and is_tombstone(event.payload):
            self._apply_erased(event)
            return
        self._apply(event)

    def _apply_erased(self, event: Event) -> None:
        """An erased event's tombstone (docs/auditing.md#erasing-content), applied as its
        type is: it keeps what places it. A handler that needed what was erased (a
        foreign dialect's text that carried structure) skips it: the transcript loses
        that part, never the erasure."""
        try:
            self._apply(event)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            logger.info("erased event %s of %s not projected", event.seq, self.conversation.pk)

    def _apply(self, event: Event) -> None:
        self._sub_position = 0
        if event.type in AGUI_LOG_TYPES:
            if not event.run_id:  # in memory only, as for AgentSpine below
                event.run_id = self.agui_run_for(event)
            self._track_run(event)
            self.apply_agui(event)
            return
        if event.payload.get("dialect") == AGENTSPINE and not event.run_id:
            # In memory only: the log keeps the event as sent, and re-projection names
            # the run the same way again.
            event.run_id = self._agentspine_run_for(event)
        self._track_run(event)
        handler = getattr(self, "_on_" + event.type.replace(".", "_"))
        handler(event, event.payload)

    def agui_run_for(self, event: Event) -> str:
        """docs/events.md#ag-ui: run-less AG-UI events belong to the conversation's latest run."""
        latest = self._load_latest_run()
        if latest:
            self._runs.add(latest)  # it has a row: `_track_run` need not look for it
        return latest

    def _load_latest_run(self) -> str:
        """The conversation's latest run ("" none): what this call knows, else what the
        process recorded at the conversation's current seq (`latest_runs`), else read."""
        if self._latest_run is None:
            latest = None if self._empty else latest_runs.get(self.conversation)
            if latest is None:
                latest = LATEST_RUN.one(pk=self.conversation.pk) or ""
            self._latest_run = latest
        return self._latest_run

    # -- messages by type -------------------------------------------------

    def _on_user_message(self, event: Event, payload: dict[str, Any]) -> None:
        message_id = payload.get("message_id") or f"msg_{event.seq}"
        if self._find(message_id) is not None:
            return  # the same message sent twice under two event ids appears once (L4)
        self._create(event, message_id, Role.USER, content=payload["content"])
        if not self.conversation.title:
            self.conversation.title = _title_from(payload["content"])
            self.changes.conversation_changed = True

    def _on_agent_message_delta(self, event: Event, payload: dict[str, Any]) -> None:
        message = self._find(payload["message_id"])
        if message is None:
            message = self._create(
                event,
                payload["message_id"],
                Role.ASSISTANT,
                content=payload["delta"],
                is_final=False,
            )
            return
        if message.role != Role.ASSISTANT or message.is_final:
            return  # a delta after step.completed is ignored (docs/events.md#tolerance tolerance)
        self._append(message, payload["delta"], event)

    def _append(self, message: Message, text: str, event: Event) -> None:
        """Streamed text: appended in SQL and sent to viewers as just `text` when the
        page already shows the message as a streaming bubble; otherwise (new, changed
        otherwise in this call, or not shown yet: blank or JSON-like) a normal save."""
        if message.pk is None or message.pk in self._dirty or not _shows_streaming(message):
            message.content += text
            self._save(message, event)
            return
        if "content" not in message.get_deferred_fields():
            message.content += text  # kept current for later events of this call
        message.updated_seq = event.seq
        self._appends.setdefault(message.pk, (message, []))[1].append((event.seq, text))

    def _on_agent_reasoning_delta(self, event: Event, payload: dict[str, Any]) -> None:
        """R6: the model's reasoning, kept beside the answer of `message_id` (created on
        the first delta, with no answer text yet), never in its text."""
        message = self._find(payload["message_id"])
        if message is None:
            message = self._create(
                event, payload["message_id"], Role.ASSISTANT, content="", is_final=False
            )
            message.metadata["reasoning"] = ""
            message.metadata["reasoning_started_at"] = event.timestamp.isoformat()
        elif message.role != Role.ASSISTANT:
            return
        meta = message.metadata
        meta["reasoning"] = meta.get("reasoning", "") + payload["delta"]
        if payload.get("encrypted") is True:
            meta["reasoning_encrypted"] = True
        self._save(message, event)

    def _on_agent_step_completed(self, event: Event, payload: dict[str, Any]) -> None:
        message = (
            self._find(payload["message_id"])
            if payload.get("message_id")
            else (self._open_assistant_message(event.run_id))
        )
        metadata: dict[str, Any] = {}
        if payload.get("tool_calls"):
            metadata["tool_calls"] = payload["tool_calls"]
        for key in ("duration_ms", "tokens"):
            if key in payload:
                metadata[key] = payload[key]
        if "usage" in payload:
            usage = {
                key: payload["usage"][key]
                for key in (*USAGE_COUNTS, "model")
                if key in payload["usage"]
            }
            metadata["usage"] = usage
            # S4: a step's tokens are its `tokens`, else its usage's in + out.
            counts = [usage[key] for key in USAGE_COUNTS if key in usage]
            if "tokens" not in metadata and counts:
                metadata["tokens"] = min(sum(counts), MAX_TOKENS)
        if message is None:
            message = self._create(
                event,
                payload.get("message_id") or f"msg_{event.seq}",
                Role.ASSISTANT,
                content=payload["content"],
                metadata=metadata,
            )
        elif message.role == Role.ASSISTANT:
            message.content = payload["content"]
            # R6: the reasoning streamed before the step stays with its answer.
            kept = {k: v for k, v in message.metadata.items() if k.startswith("reasoning")}
            message.metadata = {**kept, **metadata}
            message.is_final = True
            self._save(message, event)
        for index, call in enumerate(payload.get("tool_calls", [])):
            self._queue_tool_call(event, message.message_id, index, call)

    def _queue_tool_call(
        self, event: Event, assistant_id: str, index: int, call: dict[str, Any]
    ) -> None:
        call_id = call.get("id", "")
        if call_id and self._tool(call_id) is not None:
            return  # already started (or finished): nothing to queue
        if call_id in self._otel_batch_calls:
            return  # its tool span is in this batch: its entry comes with it, not twice
        message_id = f"tool_{call_id}" if call_id else f"tool_{assistant_id}_{index}"
        if not call_id and self._find(message_id) is not None:
            return  # the step was completed before: its id-less calls are queued already
        message = self._create(
            event,
            message_id,
            Role.TOOL,
            tool_call_id=call_id,
            tool_name=call["name"],
            tool_status=ToolStatus.QUEUED,
        )
        for key in ("args", "args_summary"):
            if key in call:
                message.metadata[key] = call[key]
        self._save(message, event)
        if call_id:  # the entry appears: what its call reported so far, in order
            self._apply_early_progress(message, event)

    def _tool_entry(
        self, event: Event, payload: dict[str, Any], status: str
    ) -> tuple[Message, bool]:
        """The entry of `payload`'s call: known, claimed from the queued ones, or else
        created with `status` (then True)."""
        call_id = payload["tool_call_id"]
        message = self._tool(call_id) or self._claim_queued(call_id, payload["tool_name"])
        if message is not None:
            return message, False
        created = self._create(
            event,
            f"tool_{call_id}",
            Role.TOOL,
            tool_call_id=call_id,
            tool_name=payload["tool_name"],
            tool_status=status,
        )
        return created, True

    def _on_agent_tool_started(self, event: Event, payload: dict[str, Any]) -> None:
        # An entry already known by its call id (queued by its step, or started before)
        # has had its progress applied, early or as it came: only a new one (or a queued
        # call claimed now, which had no id) looks for early progress.
        known = self._tool(payload["tool_call_id"]) is not None
        message, created = self._tool_entry(event, payload, ToolStatus.RUNNING)
        if not created:
            if message.tool_status in FINISHED:
                return  # a late `started` for a finished tool changes nothing
            message.tool_status = ToolStatus.RUNNING
            message.timestamp = event.timestamp
        message.tool_name = payload["tool_name"]
        message.parent_tool_call_id = payload.get("parent_tool_call_id", "")
        for key in ("args", "args_summary", "attempt", "max_attempts", "parent_tool_call_id"):
            if key in payload:
                message.metadata[key] = payload[key]
        self._save(message, event)
        if not known:
            self._apply_early_progress(message, event)
        if "attempt" in payload:
            self._mark_retried(message, event)

    def _mark_retried(self, message: Message, event: Event) -> None:
        """G14, W4 (docs/rendering.md#w4): attempt n+1 of a call (same run, tool, parent
        and args) retries its failed attempt n, which becomes part of this call: no call
        or failure of its own on any surface (chatui.read.outcomes). Rare (a numbered
        attempt above 1), so a plain query."""
        meta = message.metadata
        attempt = _whole(meta.get("attempt"))
        if attempt is None or attempt < 2:
            return
        self.flush()
        rows = Message.objects.filter(
            conversation_id=self.conversation.pk,
            role=Role.TOOL,
            run_id=message.run_id,
            tool_name=message.tool_name,
            parent_tool_call_id=message.parent_tool_call_id,
            tool_status=ToolStatus.ERROR,
            position__lt=message.position,
        ).order_by("-position")[:RETRY_LOOKBACK]
        for row in rows:
            earlier = self._held_tool(row)
            before = earlier.metadata
            if (
                before.get(RETRIED_KEY) is not True
                and _whole(before.get("attempt")) == attempt - 1
                and before.get("args") == meta.get("args")
                and before.get("args_summary") == meta.get("args_summary")
            ):
                before[RETRIED_KEY] = True
                self._save(earlier, event)
                self._count_tools(-1, -1)  # it was counted as a call and a failure
                return

    def _on_agent_tool_progress(self, event: Event, payload: dict[str, Any]) -> None:
        message = self._tool(payload["tool_call_id"])
        if message is None or message.tool_status in FINISHED:
            return  # kept in the log; applied when the tool appears
        self._apply_progress(message, payload)
        self._save(message, event)

    def _on_agent_tool_completed(self, event: Event, payload: dict[str, Any]) -> None:
        call_id = payload["tool_call_id"]
        name = payload.get("tool_name", "")
        message = self._tool(call_id) or (self._claim_queued(call_id, name) if name else None)
        if message is None:
            # [003]'s fallback: a result with no start still gets its entry.
            message = self._create(
                event,
                f"tool_{call_id}",
                Role.TOOL,
                tool_call_id=call_id,
                tool_name=name or "tool",
                tool_status=ToolStatus.RUNNING,
            )
        elif message.tool_status in FINISHED:
            return
        if name and not message.tool_name:
            message.tool_name = name
        result = payload.get("result")
        error = payload.get("error")
        meta = message.metadata
        if "result" in payload:
            meta["tool_result"] = result
        details = payload.get("details")
        if (
            details is None
            and is_tool_execution_result(result)
            and isinstance(result.get("details"), dict)
        ):
            details = result["details"]
        if details is not None:
            meta["details"] = details
        if "duration_ms" in payload:
            meta["tool_duration_ms"] = payload["duration_ms"]
        if payload.get("result_is_preview") is True:
            meta["result_is_preview"] = True
        meta.pop("no_result_recorded", None)
        self._set_outcome(message, result, error, details, skipped=payload.get("skipped") is True)
        self._save(message, event)

    @staticmethod
    def _set_outcome(
        message: Message, result: Any, error: str | None, details: Any, *, skipped: bool
    ) -> None:
        """One honest outcome, computed here so the page, the live frames, the API's
        messages and the exports all say the same (G6, G15, [001] skipped).

        Details saying a command exited non-zero or a fetch got HTTP ≥ 400 make an
        error even without `error`; its text is the result text, else "exit code 3".
        """
        text = result_text(result)
        if not error and not skipped:
            failure = details_failure(details)
            if failure:
                error = text.strip() or failure
            elif attachments.is_error_result(result):
                # docs/rendering.md#g21: MCP's `isError: true` is a failed call (G6); its
                # error text is what the result's text parts say.
                error = attachments.error_text(result) or attachments.MCP_ERROR
        if error:
            message.metadata["tool_error"] = error
            message.tool_status = ToolStatus.ERROR
            message.content = error
        else:
            message.tool_status = ToolStatus.SKIPPED if skipped else ToolStatus.SUCCESS
            message.content = text

    # -- docs/events.md#approvals tool approval ---------------------------------------------

    def _on_agent_tool_approval_requested(self, event: Event, payload: dict[str, Any]) -> None:
        """The entry waits for a person. Its deadline is reckoned from when the server
        received the request (its own clock, not the runtime's), so re-projection
        gives the same one."""
        message, created = self._tool_entry(event, payload, ToolStatus.AWAITING_APPROVAL)
        if not created and (message.tool_status in FINISHED or "approval" in message.metadata):
            return  # asked again, or after it ran: the first request stands
        message.tool_status = ToolStatus.AWAITING_APPROVAL
        message.tool_name = payload["tool_name"]
        for key in ("args", "args_summary"):
            if key in payload:
                message.metadata[key] = payload[key]
        timeout_s = payload.get("timeout_s", DEFAULT_APPROVAL_TIMEOUT_S)
        deadline = event.received_at + timedelta(seconds=timeout_s)
        message.metadata["approval"] = {
            "reason": payload.get("reason", ""),
            "timeout_s": timeout_s,
            "requested_at": event.received_at.isoformat(),
            "expires_at": deadline.isoformat(),
        }
        self.approval_deadlines.append(deadline)
        self._save(message, event)

    def _on_tool_approval(self, event: Event, payload: dict[str, Any]) -> None:
        """The first decision wins (chatui.ingest.approvals refuses a second one; this keeps
        re-projection of any log to the same rule). Approved: queued until the runtime
        starts it; denied or expired: denied, never run."""
        message = self._tool(payload["tool_call_id"])
        if message is None or message.tool_status != ToolStatus.AWAITING_APPROVAL:
            return  # kept in the log
        approval = message.metadata.setdefault("approval", {})
        if approval.get("decision"):
            return
        approval.update(
            {
                "decision": payload["decision"],
                "decided_by": payload.get("decided_by", ""),
                "decided_at": payload.get("decided_at") or event.timestamp.isoformat(),
                "note": payload.get("note", ""),
            }
        )
        approved = payload["decision"] == "approved"
        message.tool_status = ToolStatus.QUEUED if approved else ToolStatus.DENIED
        if approved and self._run_has_ended(message.run_id):
            # Approved after its run ended: nothing will run it (T2, no ticking timer).
            message.metadata["no_result_recorded"] = True
        self._save(message, event)

    def _run_has_ended(self, run_id: str) -> bool:
        if not run_id:
            return False
        status = self._run_statuses.get(run_id)
        if status is None:
            status = RUN_STATUS.one(pk=self.conversation.pk, run_id=run_id)
        return status in ConversationStatus.ended()

    def _on_agent_continuation(self, event: Event, payload: dict[str, Any]) -> None:
        if is_normal_end(payload["should_continue"], payload["stop_reason"]):
            return  # W6: every finished run ends so; the event stays in the log
        verb = "continuing" if payload["should_continue"] else "stopped"
        self._create(
            event,
            f"status_{event.seq}",
            Role.STATUS,
            content=f"Agent {verb}: {payload['stop_reason']}",
            status_type="continuation",
            metadata={
                "continuation": {
                    key: payload[key] for key in ("should_continue", "stop_reason", "resolved_by")
                }
            },
        )

    def _on_agent_status(self, event: Event, payload: dict[str, Any]) -> None:
        status = payload["status"]
        if status in ("thinking", "info"):
            default = "Thinking…" if status == "thinking" else ""
            self._create(
                event,
                f"status_{event.seq}",
                Role.STATUS,
                content=payload.get("message") or default,
                status_type=status,
            )
        elif status == "failed":
            text = payload.get("error_message") or payload.get("message") or "The run failed."
            self._create(
                event, f"status_{event.seq}", Role.STATUS, content=text, status_type="error"
            )
        elif status == "cancelled":
            self._stopped_by_user(event)
        if payload.get("dialect") == AGENTSPINE and status == "completed":
            self._agentspine_end(event, payload.get("final_text"))
        if status in ConversationStatus.ended():
            self._finish_run(event, status, payload)
            self._reconcile(event.run_id)
        elif status == "running":
            self._set_conversation_status(ConversationStatus.RUNNING, event.run_id)

    def _stopped_by_user(self, event: Event) -> None:
        """W5: a stopped run says so in a muted line that stays (a continuation, as an
        agent's own stop is; S3 keeps it), never a red banner (S2)."""
        self._create(
            event,
            f"status_{event.seq}",
            Role.STATUS,
            content=STOPPED_BY_YOU,
            status_type="continuation",
            metadata={
                "continuation": {
                    "should_continue": False,
                    "stop_reason": "cancelled",
                    "resolved_by": "user",
                }
            },
        )

    # -- [001] AgentSpine's own events --------------------------------------

    def _agentspine_run_for(self, event: Event) -> str:
        """`agent_start` names a run after its seq; later run-less AgentSpine events
        belong to the conversation's current AgentSpine run."""
        if event.type == "agent.status" and event.payload.get("status") == "running":
            self._agentspine_run = f"agentspine-{event.seq}"
            return self._agentspine_run
        if self._agentspine_run is None:
            latest = (
                Run.objects.filter(conversation=self.conversation, run_id__startswith="agentspine-")
                .order_by("-started_seq")
                .first()
            )
            self._agentspine_run = latest.run_id if latest else ""
        return self._agentspine_run

    def _agentspine_end(self, event: Event, final_text: Any) -> None:
        """`agent_end`: "(agent stopped: …)" is a continuation; a run that ended on
        tool calls gets `final_text` as its final answer."""
        if not isinstance(final_text, str) or not final_text.strip():
            return
        stopped = AGENTSPINE_STOPPED.fullmatch(final_text.strip())
        if stopped and is_normal_end(False, stopped.group("reason")):
            return  # W6: no line for a run's normal end
        if stopped:
            self._agentspine_stop(event, stopped.group("reason"))
            return
        self.flush()
        last = (
            Message.objects.filter(conversation=self.conversation, run_id=event.run_id)
            .exclude(role=Role.STATUS)
            .order_by("-position")
            .first()
        )
        if last is not None and last.role == Role.ASSISTANT:
            return
        message_id = f"{event.run_id or 'agentspine'}-final"
        earlier = self._find(message_id)
        if earlier is not None:  # a second agent_end for the run restates its answer
            earlier.content = final_text
            self._save(earlier, event)
            return
        self._create(event, message_id, Role.ASSISTANT, content=final_text)

    def _agentspine_stop(self, event: Event, reason: str) -> None:
        message_id = f"{event.run_id or 'agentspine'}-stopped"
        if self._find(message_id) is not None:
            return  # turn_end said so already
        self._create(
            event,
            message_id,
            Role.STATUS,
            content=f"Agent stopped: {reason}",
            status_type="continuation",
            metadata={
                "continuation": {
                    "should_continue": False,
                    "stop_reason": reason,
                    "resolved_by": "AgentSpine",
                }
            },
        )

    def _on_agentspine_turn(self, event: Event, payload: dict[str, Any]) -> None:
        """Kept in the log; a turn the user steered is an info line; a cancelled or
        looping one stops the agent."""
        if payload["phase"] == "end" and payload.get("status") in AGENTSPINE_STOP_STATUSES:
            self._agentspine_stop(event, payload["status"])
        if payload["phase"] == "end" and payload.get("status") == "steered":
            self._create(
                event,
                f"status_{event.seq}",
                Role.STATUS,
                content="Steered by the user",
                status_type="info",
            )

    def _open_agentspine_message(self, event: Event) -> tuple[str, str, str] | None:
        """The message a `message_start` opened and no `message_end` closed yet."""
        if not self._agentspine_message_known:
            self._agentspine_message_known = True
            logged = Event.objects.filter(conversation=self.conversation, seq__lt=event.seq)
            start = logged.filter(type="agentspine.message_start").order_by("-seq").first()
            end = logged.filter(type="agentspine.message_end").order_by("-seq").first()
            if start is not None and (end is None or end.seq < start.seq):
                self._agentspine_message = self._agentspine_message_key(event.run_id, start)
        return self._agentspine_message

    @staticmethod
    def _agentspine_message_key(run_id: str, start: Event) -> tuple[str, str, str]:
        """Named from the run, round and order (the start's seq): deterministic."""
        payload = start.payload
        round_no = payload.get("round")
        round_part = f"-r{round_no}" if isinstance(round_no, int) else ""
        return (
            f"{run_id or 'agentspine'}{round_part}-m{start.seq}",
            payload.get("role", ""),
            payload.get("source", ""),
        )

    @staticmethod
    def _agentspine_role(role: str, source: str) -> str | None:
        if role == "assistant":
            return Role.ASSISTANT
        if role == "user":
            # AgentSpine emits only the user messages it injects (steer, follow-up).
            return Role.USER
        return None  # other roles (tool results) stay in the log only

    def _on_agentspine_message_start(self, event: Event, payload: dict[str, Any]) -> None:
        self._agentspine_message_known = True
        self._agentspine_message = self._agentspine_message_key(event.run_id, event)

    def _on_agentspine_message_update(self, event: Event, payload: dict[str, Any]) -> None:
        opened = self._open_agentspine_message(event)
        if opened is None:  # an update with no start: it opens its own message
            self._on_agentspine_message_start(event, payload)
            opened = self._agentspine_message
        message_id, role, source = opened
        kind = self._agentspine_role(role or payload["role"], source)
        if kind is None:
            return
        message = self._find(message_id)
        if message is None:
            self._create(event, message_id, kind, content=payload["delta"], is_final=False)
        elif message.is_final:
            pass
        elif kind == Role.ASSISTANT:
            self._append(message, payload["delta"], event)
        else:
            message.content += payload["delta"]
            self._save(message, event)

    def _on_agentspine_message_end(self, event: Event, payload: dict[str, Any]) -> None:
        """The final content is the streamed text; the (possibly cut) preview only
        when no deltas came."""
        opened = self._open_agentspine_message(event)
        self._agentspine_message = None
        if opened is None:
            opened = self._agentspine_message_key(event.run_id, event)
        message_id, role, source = opened
        kind = self._agentspine_role(role or payload["role"], source)
        if kind is None:
            return
        preview = payload.get("text_preview") or ""
        message = self._find(message_id)
        if message is None:
            if preview.strip():
                self._create(event, message_id, kind, content=preview)
                self._title_from_user(kind, preview)
            return
        if not message.content and preview:
            message.content = preview
        message.is_final = True
        self._save(message, event)
        self._title_from_user(kind, message.content)

    def _title_from_user(self, role: str, content: str) -> None:
        if role == Role.USER and not self.conversation.title and content.strip():
            self.conversation.title = _title_from(content)
            self.changes.conversation_changed = True

    def _on_session_record(self, event: Event, payload: dict[str, Any]) -> None:
        """docs/events.md#sessions: a session file's record the page does not show, kept
        in the log only (reasoning that says nothing, or a sub-agent's, among them)."""

    def _on_audit_erasure(self, event: Event, payload: dict[str, Any]) -> None:
        """docs/auditing.md#erasing-content: the record of an erasure, in the log only
        (the erased events' tombstones change the transcript, re-projected)."""

    def _on_audit_note(self, event: Event, payload: dict[str, Any]) -> None:
        """docs/events.md#notes: an auditor's note becomes a Note row (no message: the
        transcript's texts are the agent's). Re-projection keeps the rows it already
        made: one per seq, the conflict ignored."""
        (kind, target_id), *_ = payload["target"].items()
        Note.objects.bulk_create(
            [
                Note(
                    conversation_id=self.conversation.pk,
                    seq=event.seq,
                    target_kind=kind,
                    target_id=target_id,
                    text=payload["text"],
                    label=payload.get("label", ""),
                    refers_to=payload.get("refers_to"),
                    author=payload.get("author", ""),
                    at=event.timestamp,
                )
            ],
            ignore_conflicts=True,
        )

    # -- runs ---------------------------------------------------------------

    def _track_run(self, event: Event) -> None:
        """An unseen run_id starts a run; the conversation follows its latest run."""
        run_id = event.run_id
        if not run_id or run_id in self._runs:
            return
        if run_id in self._new_runs:  # `prefetch` looked: no row (the conversation is locked)
            run = Run(
                conversation=self.conversation,
                run_id=run_id,
                started_at=event.timestamp,
                started_seq=event.seq,
            )
            INSERT_RUN.run([run])
            created = True
        else:  # a run `prefetch` did not see named (AgentSpine's, named here)
            run, created = Run.objects.get_or_create(
                conversation=self.conversation,
                run_id=run_id,
                defaults={"started_at": event.timestamp, "started_seq": event.seq},
            )
        self._runs.add(run_id)
        known_runs.add_on_commit(self.conversation.pk, run_id)
        if created:
            # Its first event is the conversation's newest: the run is its latest.
            self._latest_run = run_id
            self._run_statuses[run_id] = run.status
            self._set_status(ConversationStatus.RUNNING)

    def _finish_run(self, event: Event, status: str, payload: dict[str, Any]) -> None:
        self.ended_a_run = True
        if status == ConversationStatus.CANCELLED:
            self._cancel_open_tools(event)
        else:
            self._mark_unanswered_tools(event)
        self._end_streams(event)
        if event.run_id:
            END_RUN.run(
                pk=self.conversation.pk,
                run_id=event.run_id,
                status=status,
                ended_at=event.timestamp,
                error=payload.get("error_message", "") if status == "failed" else "",
            )
            self._run_statuses[event.run_id] = status
        if self._follows(event.run_id):
            self._set_status(status)

    def _end_runs(self, ends: list[tuple[Event, dict[str, Any]]]) -> None:
        """Runs ended together by events of a source that streams nothing and writes no
        ephemeral lines (OpenTelemetry's root spans, chatui.ingest.otel_projection): as
        `_finish_run` would end each, with their unanswered tools (T2) found in one query
        for all of them rather than three per run (docs/PERFORMANCE.md#p8)."""
        self.flush()
        self.ended_a_run = True
        by_run = {event.run_id: event for event, _ in ends}
        # A run this call started has no message it did not make: its open tools are
        # among those it holds. Only the runs of earlier calls are read.
        held = {id(m): m for m in [*self._messages.values(), *self._tools.values()] if m}
        pending = [
            message
            for message in held.values()
            if message.role == Role.TOOL
            and message.run_id in by_run
            and message.run_id in self._new_runs
            and message.tool_status in OPEN
        ]
        stored_runs = [run_id for run_id in by_run if run_id not in self._new_runs]
        if stored_runs:
            pending += Message.objects.filter(
                conversation_id=self.conversation.pk,
                role=Role.TOOL,
                run_id__in=stored_runs,
                tool_status__in=OPEN,
            )
        for row in sorted(pending, key=lambda message: message.position):
            message = self._held_tool(row)
            if message.tool_status in OPEN:
                message.metadata["no_result_recorded"] = True
                self._save(message, by_run[row.run_id])
        for event, payload in ends:
            status = payload["status"]
            END_RUN.run(
                pk=self.conversation.pk,
                run_id=event.run_id,
                status=status,
                ended_at=event.timestamp,
                error=payload.get("error_message", "") if status == "failed" else "",
            )
            self._run_statuses[event.run_id] = status
            if self._follows(event.run_id):
                self._set_status(status)

    def _mark_unanswered_tools(self, event: Event) -> None:
        """T2: a tool still waiting when its run ends never got a result: it shows
        "no result recorded", never a timer ticking for ever."""
        self.flush()
        pending = UNANSWERED_TOOLS.all(pk=self.conversation.pk, run_id=event.run_id)
        for row in pending:
            # The instance this projector already holds, so no stale copy overwrites it.
            message = self._held_tool(row)
            if message.tool_status not in OPEN:
                continue
            message.metadata["no_result_recorded"] = True
            self._save(message, event)

    def _held_tool(self, row: Message) -> Message:
        """The instance of tool `row` this projector already holds (by message id or by
        call id), else `row`, now held under both: a later event of the same call in
        this ingest then changes this instance, so no stale copy overwrites it (and the
        row counts follow the row as written)."""
        message = self._messages.get(row.message_id)
        if message is None and row.tool_call_id:
            by_call = self._tools.get(row.tool_call_id)
            if by_call is not None and by_call.message_id == row.message_id:
                message = by_call
        message = message or row
        self._messages[row.message_id] = message
        if row.tool_call_id and self._tools.get(row.tool_call_id) is None:
            self._tools[row.tool_call_id] = message
        return message

    def _cancel_open_tools(self, event: Event) -> None:
        """W5: a stopped run's queued and running tools never ran to an end: `cancelled`
        (muted, not failures), however they were left."""
        self.flush()
        for row in UNANSWERED_TOOLS.all(pk=self.conversation.pk, run_id=event.run_id):
            message = self._held_tool(row)
            if message.tool_status not in OPEN:
                continue
            message.tool_status = ToolStatus.CANCELLED
            self._save(message, event)

    def _end_streams(self, event: Event) -> None:
        """A run that ends ends its streaming answers with the text they have
        (docs/rendering.md#streaming-text: the page then shows their final Markdown, as a fresh load
        does)."""
        self.flush()
        for row in self._of_run(STREAMING, event.run_id):
            message = self._messages.get(row.message_id) or row
            self._messages[row.message_id] = message
            if not message.is_final:
                message.is_final = True
                self._save(message, event)

    def _of_run(self, shapes: dict[bool, Prepared[Any]], run_id: str) -> list[Any]:
        """A `_of_run` shape's rows: of `run_id` and of no run, or of any run."""
        if run_id:
            return shapes[True].all(pk=self.conversation.pk, run_id=run_id)
        return shapes[False].all(pk=self.conversation.pk)

    def _set_conversation_status(self, status: str, run_id: str) -> None:
        """A run (re)starts: it and the conversation get `status`, unless a newer run
        started since (then an older run's event changes neither)."""
        if not self._follows(run_id):
            return
        if run_id and self._run_statuses.get(run_id) != status:
            SET_RUN_STATUS.run(pk=self.conversation.pk, run_id=run_id, status=status)
            self._run_statuses[run_id] = status
        self._set_status(status)

    def _follows(self, run_id: str) -> bool:
        """Whether the conversation's status follows `run_id`'s events: no run named,
        or it is the latest run (or there is none)."""
        if not run_id:
            return True
        return self._load_latest_run() in ("", run_id)

    def _set_status(self, status: str) -> None:
        if self.conversation.status != status:
            self.conversation.status = status
            self.changes.conversation_changed = True

    def _reconcile(self, run_id: str) -> None:
        """S3: drop this run's ephemeral statuses; errors and continuations stay.
        (Its streamed answers were made final by `_end_streams`: the flush indexes
        them for search.)"""
        self.flush()
        self._remove_rows(self._of_run(EPHEMERAL, run_id))

    def _remove(self, doomed: QuerySet[Message]) -> None:
        """Delete `doomed`'s messages (flushed ones: call after `flush()`)."""
        self._remove_rows(list(doomed.values_list("position", "pk", "role", "tool_status")))

    def _remove_rows(self, rows: list[tuple[int, int, str, str]]) -> None:
        """Delete the flushed messages `rows` gives as (position, pk, role,
        tool_status): viewers drop them, this projector forgets them, and the row
        counts lose their tools."""
        if not rows:
            return
        # In position order (viewers' deletes in a stable order on every database), sorted
        # here: an ORDER BY would have SQLite walk the conversation (`_of_run`).
        rows = sorted(rows)
        removed = {pk for _position, pk, _role, _status in rows}
        for _position, pk, role, tool_status in rows:
            self.changes.remove(pk)
            if role == Role.TOOL:
                self._count_tools(-1, -int(tool_status == ToolStatus.ERROR))
        for shape, pks in UNLINK_REVEALS.chunks(removed):
            shape.run(**pks)  # SecretReveal.message is SET_NULL (MESSAGE_RELATIONS)
        for shape, pks in DELETE_MESSAGES.chunks(removed):
            shape.run(**pks)
        for pk in removed:
            self._written.pop(pk, None)
        for cache in (self._messages, self._tools):
            for key, message in list(cache.items()):
                if message is not None and message.pk in removed:
                    cache[key] = None

    # -- helpers ------------------------------------------------------------

    def _create(
        self,
        event: Event,
        message_id: str,
        role: str,
        *,
        content: str = "",
        metadata: dict[str, Any] | None = None,
        is_final: bool = True,
        tool_call_id: str = "",
        tool_name: str = "",
        tool_status: str = "",
        status_type: str = "",
    ) -> Message:
        message = Message.new(
            self.conversation,
            message_id=message_id,
            role=role,
            content=content,
            timestamp=event.timestamp,
            metadata=dict(metadata or {}),
            position=position_for(event.seq, self._sub_position),
            run_id=event.run_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            tool_status=tool_status,
            status_type=status_type,
            is_final=is_final,
        )
        self._sub_position += 1
        self._new.append(message)
        self._save(message, event)
        self._messages[message_id] = message
        if role == Role.TOOL and tool_call_id:
            self._tools[tool_call_id] = message
        if role == Role.TOOL and not tool_call_id:
            self._unclaimed = True
        return message

    def _save(self, message: Message, event: Event) -> None:
        """Record a change; `flush()` writes it. The choices as the plain strings a read
        gives, so the row as written is the row as read (`written_rows`)."""
        message.role = str(message.role)
        message.tool_status = str(message.tool_status)
        if message.role == Role.TOOL:
            _sync_tool_metadata(message)
        elif message.role == Role.STATUS:
            message.metadata["status_type"] = message.status_type
        message.updated_seq = event.seq
        if message.pk is not None:
            self._dirty[message.pk] = message
            self._appends.pop(message.pk, None)  # the whole row is written instead
        if event.type not in UNSEARCHED_EVENTS:
            self._searchable[id(message)] = message

    def flush(self) -> None:
        """Write what changed since the last flush: one INSERT and one UPDATE."""
        if self._new:
            INSERT_MESSAGES.run_returning(self._new)
            for message in self._new:
                self.changes.created.add(message.pk)
                self.changes.changed[message.pk] = message.updated_seq
                self._written[message.pk] = message
            self._count_written(self._new)
            self._new = []
        if self._dirty:
            _write_changed(list(self._dirty.values()))
            self._count_written(self._dirty.values())
            for message in self._dirty.values():
                self.changes.changed[message.pk] = message.updated_seq
                self.changes.appended.pop(message.pk, None)
                self._written[message.pk] = message
            self._dirty = {}
        self._flush_appends()
        # in this transaction, for what this flush wrote (docs/rendering.md#search)
        if self._searchable:
            search_index.index_messages(self._searchable.values())
            self._searchable = {}

    def written_rows(self) -> dict[int, Message]:
        """The changed messages as this call wrote them, once it has flushed, each
        equal to the row read back: by pk, for its own on-commit frame (ChangeSet.
        written). Not: text appended in SQL (never read), a row with columns never
        loaded."""
        rows: dict[int, Message] = {}
        changes = self.changes
        for pk, message in self._written.items():
            if pk not in changes.changed or pk in changes.appended:
                continue
            if _as_read(message):
                rows[pk] = message
        return rows

    def _count_written(self, messages: Iterable[Message]) -> None:
        """The row counts follow what was just written: a new tool counts, and a tool
        counts as failed while its stored status is "error" (a row's role never changes);
        denied, expired and cancelled ones each in their own column (W4)."""
        conversation = self.conversation
        for message in messages:
            if message.role != Role.TOOL:
                continue
            before = message.stored_tool_status
            self._count_tools(
                int(before is None),
                (message.tool_status == ToolStatus.ERROR) - (before == ToolStatus.ERROR),
            )
            was, now = (
                _apart(before, message.metadata),
                _apart(message.tool_status, message.metadata),
            )
            if was != now:
                for name, change in ((was, -1), (now, 1)):
                    if name is not None:
                        setattr(conversation, name, max(0, getattr(conversation, name) + change))
            message.stored_tool_status = message.tool_status

    def _count_tools(self, tools: int, failed: int) -> None:
        """In memory: the caller saves the conversation row once per ingest call.
        Never below 0: counts that drifted (messages changed outside the projection)
        would otherwise break the columns' CHECK and refuse every later event of the
        conversation; `reproject` sets them right."""
        conversation = self.conversation
        conversation.tool_count = max(0, conversation.tool_count + tools)
        conversation.failed_tool_count = max(0, conversation.failed_tool_count + failed)

    def _flush_appends(self) -> None:
        """One `UPDATE … SET content = content || ?` per streaming message."""
        for pk, (message, pieces) in self._appends.items():
            APPEND_TEXT.run(
                pk=pk, text="".join(text for _seq, text in pieces), seq=message.updated_seq
            )
            self._written.pop(pk, None)  # its text was appended in SQL: read it
            # Changed otherwise earlier in this call: viewers get it whole.
            whole = pk in self.changes.changed and pk not in self.changes.appended
            self.changes.changed[pk] = message.updated_seq
            if not whole:
                self.changes.appended.setdefault(pk, []).extend(pieces)
        self._appends = {}

    def _find(self, message_id: str) -> Message | None:
        if message_id not in self._messages:
            self._messages[message_id] = (
                None
                if self._empty
                else (
                    Message.objects.filter(
                        conversation=self.conversation, message_id=message_id
                    ).first()
                )
            )
        return self._messages[message_id]

    def _open_assistant_message(self, run_id: str) -> Message | None:
        self.flush()
        return (
            Message.objects.filter(
                conversation=self.conversation, role=Role.ASSISTANT, is_final=False, run_id=run_id
            )
            .order_by("-position")
            .first()
        )

    def _tool(self, tool_call_id: str) -> Message | None:
        if tool_call_id not in self._tools:
            self._tools[tool_call_id] = (
                None
                if self._empty
                else (
                    Message.objects.filter(
                        conversation=self.conversation, role=Role.TOOL, tool_call_id=tool_call_id
                    ).first()
                )
            )
        return self._tools[tool_call_id]

    def _claim_queued(self, tool_call_id: str, tool_name: str) -> Message | None:
        """R4's fallback: a queued call announced without an id is matched by name."""
        if self._unclaimed is None:
            self._unclaimed = Message.objects.filter(
                conversation=self.conversation,
                role=Role.TOOL,
                tool_call_id="",
                tool_status=ToolStatus.QUEUED,
            ).exists()
        if not self._unclaimed:
            return None
        self.flush()
        message = (
            Message.objects.filter(
                conversation=self.conversation,
                role=Role.TOOL,
                tool_call_id="",
                tool_name=tool_name,
                tool_status=ToolStatus.QUEUED,
            )
            .order_by("position")
            .first()
        )
        if message is not None:
            message.tool_call_id = tool_call_id
            self._tools[tool_call_id] = message
            self._messages[message.message_id] = message
        return message

    def _apply_early_progress(self, message: Message, event: Event) -> None:
        """`progress` that arrived before its tool's entry existed is applied once the
        entry appears (queued by its step, or started); later progress is applied as it
        comes (`_on_agent_tool_progress`)."""
        if self._early_progress is not None:
            # Progress logged only after this event (later in the same batch) is not early.
            first = self._early_progress.get(message.tool_call_id)
            if first is None or first > event.seq:
                return
        early = Event.objects.filter(
            conversation=self.conversation,
            type="agent.tool.progress",
            tool_call_id=message.tool_call_id,
            seq__lt=event.seq,
        ).order_by("seq")
        applied = False
        for progress in early:
            self._apply_progress(message, progress.payload)
            applied = True
        if applied:
            self._save(message, event)

    @staticmethod
    def _apply_progress(message: Message, payload: dict[str, Any]) -> None:
        meta = message.metadata
        message.tool_status = ToolStatus.RUNNING
        if "progress" in payload:
            meta["progress"] = payload["progress"]
        if payload.get("output"):
            meta["output"] = (meta.get("output", "") + payload["output"])[-OUTPUT_TAIL_CHARS:]
        if "message" in payload:
            meta["progress_message"] = payload["message"]


#: Message's text columns: a read gives them as `str` exactly.
_TEXT_COLUMNS = (
    "message_id", "role", "content", "run_id", "tool_call_id", "tool_name", "tool_status",
    "parent_tool_call_id", "status_type",
)  # fmt: skip


def _as_read(message: Message) -> bool:
    """Is the message as written what reading its row gives, type for type? Every
    column loaded; text as `str` (a field's `to_python` writes another value's
    `str()`); the timestamp in UTC (as read); booleans and JSON as Python's. Else the
    frame reads it."""
    values = loaded_values(message)
    if any(type(values.get(name)) is not str for name in _TEXT_COLUMNS):
        return False
    timestamp = values.get("timestamp")
    return (
        type(timestamp) is datetime
        and timestamp.tzinfo is UTC
        and type(values.get("is_final")) is bool
        and type(values.get("metadata")) is dict
        and _is_json(values["metadata"])
        and type(values.get("position")) is int
        and type(values.get("updated_seq")) is int
    )


_JSON_SCALARS = (str, int, float, bool, type(None))


def _is_json(value: Any) -> bool:
    """Does JSON give `value` back as it is (types, not merely equal values)? Dicts
    keyed by `str`, lists, and plain scalars: not a tuple, an enum member, a `str`
    subclass."""
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and _is_json(item) for key, item in value.items())
    if kind is list:
        return all(_is_json(item) for item in value)
    return kind in _JSON_SCALARS


def _shows_streaming(message: Message) -> bool:
    """Whether the page shows this unfinished assistant message as a bubble that text
    can be appended to: the same test as `visibility.is_assistant_shown` applies to
    streaming text (not blank, not held back as JSON-like), on the text's start."""
    if "content" in message.get_deferred_fields():
        head = getattr(message, "content_head", "")
    else:
        head = message.content[:STREAM_HEAD_CHARS]
    # Blank so far (or in its first STREAM_HEAD_CHARS, then not known): rendered whole.
    head = head.lstrip()
    return bool(head) and not head.startswith(("{", "["))


def _write_changed(messages: list[Message]) -> None:
    # A plain UPDATE written once, per row, not bulk_update's CASE WHEN per column
    # and row, compiled per call (it cost a batch of 100 more than the rest of a flush).
    if len(messages) == 1:
        SAVE_CHANGED.run(messages[0])
    else:
        SAVE_CHANGED.run_many(messages)


def _sync_tool_metadata(message: Message) -> None:
    """The indexed columns are the truth for these keys; metadata mirrors them."""
    meta = message.metadata
    meta["tool_call_id"] = message.tool_call_id
    meta["tool_name"] = message.tool_name
    meta["tool_status"] = message.tool_status


def _title_from(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"
