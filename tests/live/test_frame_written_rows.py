"""docs/PERFORMANCE.md#p2 (issue 12): the frame after an ingest reads back no row that ingest wrote.

An ingest's on-commit frame gets the messages its projection wrote, as written
(`ChangeSet.written`), instead of reading them by pk. The rule these tests hold it to:
each such row equals the row read back, column for column and type for type, and the
frame built from them is byte for byte the frame that reads them. Rows whose text was
appended in SQL are still read; an ingest inside a caller's transaction, or rolled
back, hands on nothing.

The ingests here commit for real (a transactional test): their on-commit frames run
as in production, not deferred by a test's wrapping transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils.safestring import SafeString
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatui.ingest import projection
from chatui.ingest.projection import ChangeSet
from chatui.ingest.service import events_ingested, ingest
from chatui.live import batch_cache, broadcast, frames, tail_cache
from chatui.models import Conversation, Message
from tests.support.frame_script import Script
from tests.support.html import untimed

pytestmark = pytest.mark.django_db(transaction=True)

#: `selectors.read_by_pk`'s shape: messages read by primary key.
BY_PK = 'WHERE "chatui_message"."id" IN ('


@dataclass
class Seen:
    """One on-commit frame: built from the written rows, and by reading them."""

    changes: ChangeSet
    live: str
    read: str
    sql: list[str]  # what the live frame ran
    read_sql: list[str]  # what the reading one ran


def _put(key: tuple, tail, batch) -> None:
    for cache, value in ((tail_cache.TAILS, tail), (batch_cache.BATCHES, batch)):
        cache.discard(key)
        if value is not None:
            cache.put(key, value)


def columns(message: Message) -> dict[str, str]:
    """Every column's value, its type and (for JSON) its key order showing."""
    return {
        field.attname: repr(getattr(message, field.attname))
        for field in Message._meta.concrete_fields
    }


class Recorder(list):
    """The on-commit frames seen; with `compare`, each also built by reading the rows
    (from the same kept tail and batch) and its written rows checked against the rows
    as stored; without, only the live frame runs (to count what it reads)."""

    compare = True
    __qualname__ = "Recorder"  # send_robust names a failing receiver by it

    def __init__(self) -> None:
        super().__init__()
        # What failed in a receiver: send_robust logs it and goes on, so tests look here.
        self.errors: list[BaseException] = []

    def __call__(self, sender, **kwargs) -> None:
        try:
            self.record(**kwargs)
        except Exception as error:  # reported by the test, not swallowed
            self.errors.append(error)

    def record(self, conversation, conversation_id, first_seq, last_seq, changes, **_) -> None:
        if changes.full_refresh:
            return
        if self.compare:
            stored = {m.pk: m for m in Message.objects.filter(pk__in=list(changes.written))}
            for pk, row in changes.written.items():
                assert columns(row) == columns(stored[pk])
        key = batch_cache.key_of(conversation_id)
        before = tail_cache.TAILS.get(key), batch_cache.BATCHES.get(key)
        with CaptureQueriesContext(connection) as live_sql:
            live = frames.change_frame(conversation, first_seq, last_seq, changes).html
        read, read_sql = "", []
        if self.compare:
            after = tail_cache.TAILS.get(key), batch_cache.BATCHES.get(key)
            _put(key, *before)
            reading = replace(changes, written={})
            with CaptureQueriesContext(connection) as captured:
                read = untimed(frames.change_frame(conversation, first_seq, last_seq, reading).html)
            read_sql = [q["sql"] for q in captured.captured_queries]
            _put(key, *after)  # later frames go on from what the live one kept
        sql = [q["sql"] for q in live_sql.captured_queries]
        self.append(Seen(changes, untimed(live), read, sql, read_sql))


@pytest.fixture
def seen(monkeypatch):
    """The on-commit frames of the ingests that follow (`Recorder`), rendered by the
    recorder alone: the broadcaster renders none (with Redis it would render each one
    first, and the recorder's second frame of the same seqs would find the kept tail
    already past them and read it)."""
    monkeypatch.setattr(broadcast, "may_have_members", lambda group: False)
    recorder = Recorder()
    events_ingested.connect(recorder, weak=False, dispatch_uid="test_frame_written_rows")
    yield recorder
    events_ingested.disconnect(dispatch_uid="test_frame_written_rows")
    assert recorder.errors == []


# -- the property -------------------------------------------------------------------------


class ApprovalScript(Script):
    """test_frame_tail_kept's runs, with tools that ask a person first
    (docs/events.md#approvals)."""

    def _ask(self, at: dict, index: int) -> list[dict]:
        call = f"q{self.n}"
        self.calls.append(call)
        asked = {**at, "type": "agent.tool.approval_requested", "tool_call_id": call}
        return [{**asked, "tool_name": "rm", "args": {"path": "/tmp/x", "n": 1.0}}]

    def _decide(self, at: dict, index: int) -> list[dict]:
        call = self._call(index)
        if call is None:
            return self._ask(at, index)
        decision = ["approved", "denied"][index % 2]
        return [{**at, "type": "tool.approval", "tool_call_id": call, "decision": decision}]


KINDS = st.sampled_from(
    ["start", "start", "ok", "ok", "error", "progress", "progress", "thinking", "thinking"]
    + ["delta"] * 4
    + ["step", "hidden", "user", "end", "burst", "ask", "decide"]
)
INGESTS = st.lists(
    st.lists(st.tuples(KINDS, st.integers(0, 30)), min_size=1, max_size=3),
    min_size=1,
    max_size=30,
)


@given(ingests=INGESTS)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_p2_the_frame_from_the_written_rows_equals_the_frame_reading_them(user, seen, ingests):
    conversation = Conversation.objects.create(owner=user, title="written")
    script = ApprovalScript()
    ingest(conversation, [{"type": "user.message", "run_id": "r0", "content": "Go"}])
    ingest(conversation, [{"type": "agent.status", "run_id": "r0", "status": "running"}])
    seen.clear()
    for group in ingests:
        events = [event for kind, index in group for event in script.events(kind, index)]
        ingest(conversation, events)
    assert seen.errors == []
    for frame in seen:
        assert frame.live == frame.read, frame.changes
    if any(frame.changes.changed and not frame.changes.appended for frame in seen):
        assert any(frame.changes.written for frame in seen)  # the rule was exercised


@pytest.mark.parametrize(
    "event",
    [
        {"type": "user.message", "content": "Hi <b>there</b>\n\n- *list*"},
        {"type": "agent.status", "status": "thinking", "message": "Reading"},
        {"type": "agent.step.completed", "message_id": "s", "content": "Done **now**."},
        {"type": "agent.step.completed", "content": "", "tool_calls": [{"id": "q", "name": "x"}]},
        {
            "type": "agent.tool.started",
            "tool_call_id": "n",
            "tool_name": "rd",
            "args": {"b": 1, "a": 2.0},
        },
        {"type": "agent.tool.progress", "tool_call_id": "c0", "output": "line\n", "progress": 0.5},
        {
            "type": "agent.tool.completed",
            "tool_call_id": "c0",
            "result": {"z": [1, 2.5], "a": None},
        },
        {"type": "agent.tool.completed", "tool_call_id": "c0", "error": "boom"},
        {"type": "agent.tool.approval_requested", "tool_call_id": "p", "tool_name": "rm"},
        {"type": "agent.message.delta", "message_id": "d", "delta": "Streaming"},
    ],
    ids=lambda event: event["type"],
)
def test_p2_each_kind_of_event_frames_from_its_written_rows_as_when_read(user, seen, event):
    conversation = Conversation.objects.create(owner=user, title="kinds")
    running(conversation)
    seen.clear()
    ingest(
        conversation, [{**event, "run_id": "r", "timestamp": "2026-11-02T12:00:00.123456+02:00"}]
    )
    assert seen.errors == []
    (frame,) = seen
    assert frame.changes.written, "the ingest handed on the rows it wrote"
    assert frame.live == frame.read


# -- what the frame reads -----------------------------------------------------------------


def running(conversation: Conversation, tools: int = 3) -> None:
    ingest(conversation, [{"type": "user.message", "run_id": "r", "content": "Go"}])
    ingest(conversation, [{"type": "agent.status", "run_id": "r", "status": "running"}])
    for n in range(tools):
        ingest(conversation, [tool("started", f"c{n}", tool_name="read")])
    ingest(conversation, [tool("completed", "c1", result="ok")])


def tool(kind: str, call: str, **fields) -> dict:
    return {"type": f"agent.tool.{kind}", "run_id": "r", "tool_call_id": call, **fields}


@pytest.mark.parametrize(
    "event",
    [
        tool("started", "new", tool_name="read"),
        tool("progress", "c0", output="more\n"),
        tool("completed", "c2", result="done"),
    ],
    ids=lambda event: event["type"],
)
def test_p2_a_tool_events_frame_reads_back_no_message_it_wrote(user, seen, event):
    conversation = Conversation.objects.create(owner=user, title="reads")
    running(conversation)
    seen.clear()
    seen.compare = False
    with CaptureQueriesContext(connection) as ingest_and_frame:
        ingest(conversation, [event])
    assert seen.errors == []
    (frame,) = seen
    read_back = [q["sql"] for q in ingest_and_frame.captured_queries if BY_PK in q["sql"]]
    assert read_back == []
    assert not any("chatui_message" in sql for sql in frame.sql), frame.sql


def test_p2_the_same_frame_reading_its_rows_reads_them_by_pk(user, seen):
    """The rule above could fail: without the written rows the frame reads them."""
    conversation = Conversation.objects.create(owner=user, title="reads")
    running(conversation)
    seen.clear()
    ingest(conversation, [tool("completed", "c2", result="done")])
    assert seen.errors == []
    (frame,) = seen
    assert any(BY_PK in sql for sql in frame.read_sql)
    assert frame.live == frame.read


def test_p2_streamed_text_appended_in_sql_is_not_handed_on(user, seen):
    conversation = Conversation.objects.create(owner=user, title="stream")
    running(conversation)
    delta = {"type": "agent.message.delta", "run_id": "r", "message_id": "a"}
    ingest(conversation, [{**delta, "delta": "Hello"}])
    seen.clear()
    ingest(conversation, [{**delta, "delta": " there"}, tool("started", "late", tool_name="x")])
    assert seen.errors == []
    (frame,) = seen
    streamed = Message.objects.get(conversation=conversation, message_id="a").pk
    assert streamed in frame.changes.changed
    assert streamed not in frame.changes.written
    assert frame.live == frame.read


def test_p2_an_ingest_inside_a_callers_transaction_hands_on_no_rows(user, seen):
    conversation = Conversation.objects.create(owner=user, title="outer")
    running(conversation)
    seen.clear()
    with transaction.atomic():
        result = ingest(conversation, [tool("started", "inner", tool_name="read")])
    assert seen.errors == []
    (frame,) = seen
    assert frame.changes.changed and frame.changes.written == {}
    assert result.changes.written == {}  # nor does the caller's copy, rendered later


def test_p2_a_rolled_back_ingest_keeps_nothing(user, seen):
    conversation = Conversation.objects.create(owner=user, title="rolled back")
    running(conversation)
    key = batch_cache.key_of(conversation.pk)
    kept = tail_cache.TAILS.get(key)
    seen.clear()
    with pytest.raises(RuntimeError), transaction.atomic():
        ingest(conversation, [tool("started", "gone", tool_name="read")])
        raise RuntimeError("roll back")
    assert seen == []
    assert tail_cache.TAILS.get(key) is kept
    assert not Message.objects.filter(tool_call_id="gone").exists()


@pytest.mark.parametrize(
    "change",
    [
        {"metadata": {"args": (1, 2)}},  # JSON gives a list back
        {"metadata": {1: "a"}},  # and a str key
        {"content": SafeString("<b>")},  # a str subclass
        {"timestamp": datetime(2026, 11, 2, 12, tzinfo=timezone(timedelta(hours=2)))},
        {"is_final": 1},
    ],
    ids=["tuple", "int key", "str subclass", "not UTC", "int for bool"],
)
def test_p2_a_row_unlike_its_read_is_not_handed_on_but_read(user, change):
    """`ChangeSet.written` holds only rows equal to their read, type for type; any
    other the frame reads (projection._as_read)."""
    conversation = Conversation.objects.create(owner=user, title="types")
    running(conversation)
    message = Message.objects.filter(conversation=conversation).first()
    assert projection._as_read(message)  # a read row is
    for name, value in change.items():
        setattr(message, name, value)
    assert not projection._as_read(message)
