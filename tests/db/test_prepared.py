"""Hot queries compiled once (chatui.db.prepared, docs/PERFORMANCE.md#p2): the same rows, as the
same objects, as the ORM gives — without compiling the query again."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.db.models.functions import Substr
from django.db.models.sql.compiler import SQLCompiler
from django.test.utils import CaptureQueriesContext

from chatui.db.prepared import InSizes, Prepared, PreparedDelete, PreparedInsert
from chatui.ingest.projection import APPEND_TEXT, MESSAGES_BY_ID, SAVE_CHANGED
from chatui.ingest.service import SAVE_CONVERSATION
from chatui.models import Conversation, Event, Message

MESSAGES = Prepared(
    lambda conversation, role: Message.objects.filter(
        conversation_id=conversation, role=role
    ).order_by("position"),
    conversation=Conversation._meta.pk,
    role=Message._meta.get_field("role"),
)


@pytest.fixture
def talk(feed, conversation):
    feed(
        {"type": "user.message", "content": "one"},
        {"type": "agent.message.delta", "message_id": "a1", "delta": "Hel"},
        {"type": "agent.message.delta", "message_id": "a1", "delta": "lo"},
        {"type": "user.message", "content": "two"},
    )
    return conversation


def fields_of(message: Message) -> dict:
    return {f.attname: getattr(message, f.attname) for f in Message._meta.concrete_fields}


def test_p2_prepared_rows_equal_the_orms(talk):
    orm = list(Message.objects.filter(conversation=talk, role="user").order_by("position"))
    prepared = MESSAGES.all(conversation=talk.pk, role="user")
    assert [fields_of(m) for m in prepared] == [fields_of(m) for m in orm]
    assert len(prepared) == 2
    assert all(m._state.adding is False and m._state.db == "default" for m in prepared)


def test_p2_new_values_run_without_compiling_the_query_again(talk, other_user, monkeypatch):
    MESSAGES.all(conversation=talk.pk, role="user")  # compiled here, if not before
    compiled = []
    as_sql = SQLCompiler.as_sql
    monkeypatch.setattr(
        SQLCompiler, "as_sql", lambda self, *a, **k: compiled.append(1) or as_sql(self, *a, **k)
    )
    theirs = Conversation.objects.create(owner=other_user)
    with CaptureQueriesContext(connection) as queries:
        mine = MESSAGES.all(conversation=talk.pk, role="user")
        none = MESSAGES.all(conversation=theirs.pk, role="user")
        assistant = MESSAGES.all(conversation=str(talk.pk), role="assistant")  # a str id too
    assert [len(mine), len(none), len(assistant)] == [2, 0, 1]
    assert len(queries) == 3 and compiled == []
    assert list(MESSAGES._compiled) == ["default"]


def test_p2_annotations_and_deferred_fields_come_back_as_the_orm_gives_them(talk):
    heads = Prepared(
        lambda message_id: (
            Message.objects.filter(message_id=message_id)
            .defer("content")
            .annotate(head=Substr("content", 1, 3))
        ),
        message_id=Message._meta.get_field("message_id"),
    )
    message = heads.one(message_id="a1")
    assert message.head == "Hel"
    assert "content" in message.get_deferred_fields()
    assert message.content == "Hello"  # loaded on access, as a deferred field is


def test_p2_values_lists_and_select_related_are_prepared_too(talk, user):
    pairs = Prepared(
        lambda pk: (
            Message.objects.filter(conversation_id=pk)
            .order_by("position")
            .values_list("role", "content")
        ),
        pk=Conversation._meta.pk,
    )
    flat = Prepared(
        lambda pk: Message.objects.filter(conversation_id=pk).values_list("role", flat=True),
        pk=Conversation._meta.pk,
    )
    owned = Prepared(
        lambda pk: Conversation.objects.filter(pk=pk).select_related("owner"),
        pk=Conversation._meta.pk,
    )
    assert pairs.all(pk=talk.pk) == [("user", "one"), ("assistant", "Hello"), ("user", "two")]
    assert sorted(flat.all(pk=talk.pk)) == ["assistant", "user", "user"]
    with CaptureQueriesContext(connection) as queries:
        conversation = owned.one(pk=talk.pk)
        assert conversation.owner.username == user.username
    assert len(queries) == 1


def test_p2_a_missing_row_is_none(db):
    missing = "7d1f1f9e-0000-4000-8000-000000000000"
    lookup = Prepared(lambda pk: Conversation.objects.filter(pk=pk), pk=Conversation._meta.pk)
    assert lookup.one(pk=missing) is None


def test_a_value_that_is_not_one_parameter_is_refused_by_name(db):
    """`icontains` wraps the value (%…%): it cannot be swapped in the parameters."""
    search = Prepared(
        lambda text: Conversation.objects.filter(title__icontains=text),
        text=Conversation._meta.get_field("title"),
    )
    with pytest.raises(ValueError, match="'text'"):
        search.all(text="x")


def test_p2_a_prepared_insert_stores_what_bulk_create_stores(conversation):
    """The event log's INSERT, written once: the same columns, converted the same way
    (JSON with its key order and non-ASCII text, aware timestamps, NULLs)."""
    when = conversation.created_at
    payload = {"z": 1, "a": ["é", {"n": None}], "content": "ünïcode 🚀"}

    def event(seq: int) -> Event:
        return Event(
            conversation=conversation,
            seq=seq,
            event_id=None,
            body_hash="h" * 64,
            type="user.message",
            payload=payload,
            timestamp=when,
            received_at=when,
        )

    Event.objects.bulk_create([event(1)])
    PreparedInsert(Event).run([event(2), event(3)])
    stored = {e.seq: e for e in Event.objects.filter(conversation=conversation)}
    skip = {"id", "seq"}

    def as_dict(e):
        return {
            f.attname: getattr(e, f.attname)
            for f in Event._meta.concrete_fields
            if f.attname not in skip
        }

    assert as_dict(stored[2]) == as_dict(stored[1]) == as_dict(stored[3])
    assert list(stored[2].payload) == ["z", "a", "content"]


def test_p5_a_prepared_update_appends_text_in_sql(talk):
    """The streaming append: `content || text` and the seq, without reading the row."""
    message = Message.objects.get(message_id="a1")
    with CaptureQueriesContext(connection) as queries:
        changed = APPEND_TEXT.run(pk=message.pk, text=", wörld 🚀", seq=99)
        missing = APPEND_TEXT.run(pk=message.pk + 1000, text="x", seq=1)
    assert (changed, missing) == (1, 0)
    assert len(queries) == 2 and all(q["sql"].startswith("UPDATE") for q in queries)
    message.refresh_from_db()
    assert (message.content, message.updated_seq) == ("Hello, wörld 🚀", 99)


def test_p2_a_prepared_save_writes_what_save_update_fields_writes(conversation):
    """The conversation row after each ingest: its fields, and `updated_at` (auto_now)
    moved on, as `save(update_fields=…)` would."""
    before = conversation.updated_at
    conversation.title, conversation.status, conversation.last_seq = "Renamed ✓", "running", 7
    assert SAVE_CONVERSATION.run(conversation) == 1
    stored = Conversation.objects.get(pk=conversation.pk)
    assert (stored.title, stored.status, stored.last_seq) == ("Renamed ✓", "running", 7)
    assert stored.updated_at == conversation.updated_at > before
    Conversation.objects.filter(pk=conversation.pk).delete()
    assert SAVE_CONVERSATION.run(conversation) == 0


# -- a message row made into an instance without Model.__init__ (chatui.models._loaded)


@pytest.mark.parametrize("model", [Message, Conversation])
def test_loaded_row_equals_what_model_init_makes(talk, model):
    from django.db import models

    names = [f.attname for f in model._meta.concrete_fields]
    rows = model.objects.values_list(*names)
    assert rows
    for row in rows:
        fast = model.from_db("default", names, row)
        usual = models.Model.from_db.__func__(model, "default", names, row)
        assert {
            k: v for k, v in vars(fast).items() if k not in ("_state", "stored_tool_status")
        } == {k: v for k, v in vars(usual).items() if k != "_state"}
        assert (fast._state.adding, fast._state.db) == (usual._state.adding, usual._state.db)
    message = Message.objects.filter(conversation=talk).first()
    assert message.conversation == talk  # a foreign key's object still loads


def test_loaded_message_saves_and_refreshes(talk):
    message = Message.objects.filter(conversation=talk, role="assistant").get()
    message.content = "changed"
    message.save(update_fields=["content"])  # an UPDATE: the row is known to exist
    message.refresh_from_db()
    assert message.content == "changed"
    assert Message.objects.filter(conversation=talk).count() == 3


def test_deferred_columns_load_the_usual_way(talk):
    message = Message.objects.filter(conversation=talk).only("pk").first()
    assert message.get_deferred_fields() >= {"content", "metadata"}
    assert message.content == "one"  # loaded on access, as Django does


def test_init_signal_listeners_are_still_called(talk):
    from django.db.models.signals import post_init

    seen: list[int] = []

    def listener(sender, instance, **kwargs):
        seen.append(instance.pk)

    post_init.connect(listener, sender=Message)
    try:
        loaded = list(Message.objects.filter(conversation=talk))
    finally:
        post_init.disconnect(listener, sender=Message)
    assert seen == [m.pk for m in loaded]


# -- IN lists of any length, prepared per size (issue 12) -----------------------------


@pytest.fixture
def many(feed, conversation):
    feed(
        *[{"type": "user.message", "message_id": f"u{n:02}", "content": f"m{n}"} for n in range(40)]
    )
    return conversation


@pytest.mark.parametrize("count", [2, 8, 9, 33, 40])
def test_p2_a_lookup_of_many_values_finds_what_the_orms_in_finds(many, count):
    ids = {f"u{n:02}" for n in range(count)} | {"missing"}
    orm = Message.objects.filter(conversation=many, message_id__in=ids)
    found = MESSAGES_BY_ID[False].matching(many.pk, ids)
    assert sorted(fields_of(m)["id"] for m in found) == sorted(m.pk for m in orm)
    assert len(found) == count


def test_p2_lists_of_new_lengths_run_a_shape_compiled_for_their_size(many, monkeypatch):
    """An IN list is padded to the next size (8, 32, …): lengths 2…8 share one
    statement, so a batch's lookups stop compiling SQL once each size has run."""
    lookup = MESSAGES_BY_ID[False]
    lookup.matching(many.pk, {"u00", "u01"})  # the size-8 shape, compiled here if not before
    compiled = []
    as_sql = SQLCompiler.as_sql
    monkeypatch.setattr(
        SQLCompiler, "as_sql", lambda self, *a, **k: compiled.append(1) or as_sql(self, *a, **k)
    )
    with CaptureQueriesContext(connection) as queries:
        for count in range(2, 9):
            assert len(lookup.matching(many.pk, {f"u{n:02}" for n in range(count)})) == count
    assert compiled == []
    in_lists = [re.search(r" IN \(([^)]*)\)", q["sql"]).group(1) for q in queries]
    assert [len(values.split(", ")) for values in in_lists] == [8] * 7


def test_p2_a_list_longer_than_the_largest_size_runs_in_chunks(many):
    sizes = InSizes(lambda names: names)
    chunks = list(sizes.chunks(range(1001)))
    assert [len(named) for _shape, named in chunks] == [500, 500, 8]
    last = chunks[-1][1]
    assert list(last.values()) == [1000] * 8  # one value, repeated to the size


def test_p2_a_prepared_delete_deletes_only_the_rows_its_values_select(many):
    doomed = list(Message.objects.filter(conversation=many, message_id__in=["u01", "u02"]))
    delete = PreparedDelete(
        lambda a, b: Message.objects.filter(pk__in=[a, b]),
        a=Message._meta.pk,
        b=Message._meta.pk,
    )
    assert delete.run(a=doomed[0].pk, b=doomed[1].pk) == 2
    assert delete.run(a=doomed[0].pk, b=doomed[0].pk) == 0
    assert Message.objects.filter(conversation=many).count() == 38


def test_p2_insert_returning_stores_and_numbers_what_bulk_create_would(conversation):
    """New messages: one INSERT … RETURNING per chunk (70 rows of 15 columns need two
    under SQLite's 999 parameters), each object given its own row's key."""

    def message(n: int) -> Message:
        return Message(
            conversation=conversation,
            message_id=f"x{n}",
            role="user",
            content=f"text {n} ✓",
            timestamp=conversation.created_at,
            metadata={"z": n, "a": None},
            position=n,
        )

    orm = [message(n) for n in range(1, 3)]
    Message.objects.bulk_create(orm)
    mine = [message(n) for n in range(3, 73)]
    with CaptureQueriesContext(connection) as queries:
        PreparedInsert(Message).run_returning(mine)
    assert len(queries) == (2 if connection.vendor == "sqlite" else 1)
    stored = {m.pk: m for m in Message.objects.filter(conversation=conversation)}
    assert all(stored[m.pk].message_id == m.message_id for m in mine)
    assert all(m._state.adding is False and m._state.db == "default" for m in mine)
    skip = {"id", "message_id", "content", "position", "metadata"}

    def as_dict(m: Message) -> dict:
        return {k: v for k, v in fields_of(m).items() if k not in skip}

    assert as_dict(stored[mine[0].pk]) == as_dict(stored[orm[0].pk])
    assert list(stored[mine[0].pk].metadata) == ["z", "a"]


def test_p2_save_many_writes_each_row_as_save_would(talk):
    messages = list(Message.objects.filter(conversation=talk))
    for n, message in enumerate(messages):
        message.content, message.updated_seq = f"changed {n}", 100 + n
    with CaptureQueriesContext(connection) as queries:
        SAVE_CHANGED.run_many(messages)
    assert len(queries) == 1
    stored = {m.pk: m for m in Message.objects.filter(conversation=talk)}
    assert [(stored[m.pk].content, stored[m.pk].updated_seq) for m in messages] == [
        (f"changed {n}", 100 + n) for n in range(len(messages))
    ]


def test_p2_a_prepared_insert_converts_a_shared_value_once_and_others_each(conversation):
    """Rows sharing a value object (a batch's conversation and arrival time) convert
    it once; a row with its own value gets its own, whatever the rows around it have."""
    shared = conversation.created_at
    own = [shared, shared, shared.replace(year=2001), shared, shared.replace(year=2002)]
    rows = [
        Event(
            conversation=conversation,
            seq=n,
            body_hash="h" * 64,
            type="user.message",
            payload={"n": n} if n % 2 else {"same": True},
            timestamp=when,
            received_at=shared,
        )
        for n, when in enumerate(own, start=1)
    ]
    PreparedInsert(Event).run(rows)
    stored = Event.objects.filter(conversation=conversation).order_by("seq")
    assert [(e.timestamp, e.received_at, e.payload) for e in stored] == [
        (e.timestamp, e.received_at, e.payload) for e in rows
    ]


def test_event_row_equals_what_model_init_makes(talk):
    from chatui.ingest.events import parse_events

    (source,) = parse_events([{"type": "user.message", "content": "x", "event_id": "e1"}])
    now = talk.created_at
    fast = Event.row(talk, 9, source, timestamp=now, received_at=now)
    usual = Event(
        conversation=talk,
        seq=9,
        event_id="e1",
        body_hash=source.body_hash,
        type=source.type,
        run_id=source.run_id,
        tool_call_id=source.tool_call_id,
        payload=source.payload,
        timestamp=now,
        received_at=now,
    )
    assert {k: v for k, v in vars(fast).items() if k != "_state"} == {
        k: v for k, v in vars(usual).items() if k != "_state"
    }
    assert fast._state.adding and fast._state.db is None
    assert fast.conversation is talk  # no query: the object is cached as the keyword does
    fast.save()
    assert Event.objects.get(pk=fast.pk).payload == source.payload
