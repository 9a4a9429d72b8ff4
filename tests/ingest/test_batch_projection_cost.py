"""docs/PERFORMANCE.md#p2, issue 12: what projecting a batch of events costs. A batch reads by
indexes what it looks for (never the conversation's whole event log), runs statements
compiled once (no ORM compiling per batch), and a run's end costs the same number of
queries however long the conversation is. What it stores is the same as before:
tests/ingest/test_batch_projection_equivalence.py."""

from __future__ import annotations

import pytest
from django.db import connection, models
from django.db.models.sql import compiler
from django.test.utils import CaptureQueriesContext

from chatui.ingest import projection
from chatui.ingest.service import ingest
from chatui.models import Message, Run, SecretReveal
from tests.support.runs import run_events

#: What reading a conversation's rows one by one looks like in SQLite's plan: by the
#: conversation alone, or all its messages of one role (its tools, say).
WALKS = ("(conversation_id=?)", "(conversation_id=? AND role=?)", "SCAN ")


def reads_walking_the_conversation(queries: CaptureQueriesContext) -> list[str]:
    """The SELECTs on events, messages and runs that SQLite answers by walking the
    conversation's rows rather than seeking what they name."""
    walks = []
    with connection.cursor() as cursor:
        for query in queries.captured_queries:
            sql = query["sql"]
            tables = ('"chatui_event"', '"chatui_message"', '"chatui_run"')
            if not sql.startswith("SELECT") or not any(table in sql for table in tables):
                continue
            if sql.endswith("LIMIT 1"):
                continue  # the newest row, in the index's order: one row read
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            plan = " | ".join(row[-1] for row in cursor.fetchall())
            if any(walk in plan for walk in WALKS):
                walks.append(f"{plan}\n  {sql[:300]}")
    return walks


@pytest.mark.sqlite_only(reason="reads SQLite's EXPLAIN QUERY PLAN")
def test_p2_a_batch_reads_what_it_names_by_index_not_by_walking_the_conversation(
    conversation,
):
    """A batch looks its messages, tools, runs and early progress up by IN lists.
    SQLite, without statistics, answered the tools' by walking every tool of the
    conversation, the early progress' by walking its whole event log (1–3 ms a batch,
    growing), and the runs' in (conversation, started_seq) order."""
    for n in range(15):
        ingest(conversation, run_events(f"old{n}"))
    with CaptureQueriesContext(connection) as queries:
        ingest(conversation, run_events("new", steps=4) + run_events("next", end=False))
    sql = [q["sql"] for q in queries.captured_queries]
    assert any("MIN(" in s and " IN (" in s for s in sql)  # the early progress
    assert any('"tool_call_id" IN (' in s and "chatui_message" in s for s in sql)
    assert reads_walking_the_conversation(queries) == []


def test_p2_a_batch_compiles_no_sql_once_its_statements_have_run(conversation, monkeypatch):
    """Every statement a P2 batch's projection runs is compiled once (chatui.db.prepared):
    the ORM compiled some 30 per batch, costing more than running them."""
    # Warm: a batch like the one measured, so each IN-list size has run once.
    runs = [run_events(f"r{n}") for n in range(5)]
    ingest(conversation, runs[0][:10])
    ingest(conversation, runs[0][10:] + runs[1] + runs[2][:10])
    compiled: list[str] = []
    for kind in (
        compiler.SQLCompiler,
        compiler.SQLInsertCompiler,
        compiler.SQLUpdateCompiler,
        compiler.SQLDeleteCompiler,
    ):
        as_sql = kind.as_sql
        monkeypatch.setattr(
            kind,
            "as_sql",
            lambda self, *a, _as_sql=as_sql, **k: (
                compiled.append(type(self).__name__) or _as_sql(self, *a, **k)
            ),
        )
    projector_compiled: list[str] = []
    apply_all = projection.Projector.apply_all

    def counted(self, events):
        before = len(compiled)
        apply_all(self, events)
        projector_compiled.extend(compiled[before:])

    monkeypatch.setattr(projection.Projector, "apply_all", counted)
    ingest(conversation, runs[2][10:] + runs[3] + runs[4][:10])
    assert projector_compiled == []


def test_p2_a_runs_end_costs_the_same_queries_in_a_long_conversation(conversation, user):
    from chatui.models import Conversation

    def ending_queries(target) -> int:
        ingest(target, run_events("last", end=False))
        with CaptureQueriesContext(connection) as queries:
            ingest(target, {"type": "agent.status", "run_id": "last", "status": "completed"})
        return len(queries)

    short = Conversation.objects.create(owner=user)
    ingest(short, run_events("only"))
    for n in range(12):
        ingest(conversation, run_events(f"old{n}"))
    assert ending_queries(conversation) == ending_queries(short)


def test_s3_a_run_end_deletes_its_status_lines_in_sql_and_unlinks_their_reveals(conversation, user):
    """S3's delete skips the ORM's collector, so it follows the relation to messages
    itself: a reveal of a removed line stays, pointing nowhere (SET_NULL)."""
    ingest(conversation, run_events("r1", end=False))
    thinking = Message.objects.filter(conversation=conversation, status_type="thinking")
    assert thinking.count() == 3
    reveal = SecretReveal.objects.create(
        user=user, message=thinking[0], conversation=conversation, message_key="k"
    )
    kept = Message.objects.filter(conversation=conversation).exclude(role="status").count()
    ingest(conversation, {"type": "agent.status", "run_id": "r1", "status": "completed"})
    assert not thinking.exists()
    assert Message.objects.filter(conversation=conversation).count() == kept
    reveal.refresh_from_db()
    assert reveal.message_id is None
    assert Run.objects.get(conversation=conversation, run_id="r1").status == "completed"


def test_s3_the_sql_delete_follows_every_relation_to_messages():
    """A new foreign key to Message must be followed by `Projector._remove_rows` too."""
    relations = {
        (relation.related_model, relation.field.name): relation.on_delete
        for relation in Message._meta.related_objects
    }
    assert relations == projection.MESSAGE_RELATIONS
    assert set(relations.values()) == {models.SET_NULL}
