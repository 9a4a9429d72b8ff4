"""O(new work), not O(conversation), on SQLite: the statements one event runs read
indexes by what they look for, not the conversation's messages in order (docs/PERFORMANCE.md#p1,
P2). SQLite keeps no statistics unless ANALYZE runs, and then prefers an index that
gives the ORDER BY over one that narrows the search: a run's steps were read by
walking every message of the conversation (bench/profile_ingest.py --statements)."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatui.ingest.service import ingest
from tests.support.runs import run_events

pytestmark = pytest.mark.sqlite_only(reason="reads SQLite's EXPLAIN QUERY PLAN")

#: What walking a conversation looks like: its messages by the (conversation, position)
#: key with nothing else narrowing the search.
WALK = "(conversation_id=?)"
#: The list row's preview (selectors.with_row_data): the newest message a row shows, read
#: newest first with LIMIT 1 — it stops at the first message that is not a status line.
LATEST_SHOWN = 'AS "last_role"'
#: A frame's first read (selectors.latest_messages): the newest FRAME_TAIL messages.
NEWEST = re.compile(
    r'WHERE "chatui_message"\."conversation_id" = \'[0-9a-f]{32}\''
    r' ORDER BY "chatui_message"\."position" DESC LIMIT \d+$'
)


def plans_walking_the_conversation(queries: CaptureQueriesContext) -> list[str]:
    walks = []
    with connection.cursor() as cursor:
        for query in queries.captured_queries:
            sql = query["sql"]
            if not sql.startswith("SELECT") or "chatui_message" not in sql:
                continue
            if LATEST_SHOWN in sql:
                continue  # a walk back from the newest message, stopping at the first shown
            if NEWEST.search(sql):
                continue  # the newest few, nothing else asked: LIMIT rows read
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            plan = " | ".join(row[-1] for row in cursor.fetchall())
            if "chatui_message" in plan and (WALK in plan or "SCAN chatui_message" in plan):
                walks.append(f"{plan}\n  {sql[sql.index(' FROM ') :][:400]}")
    return walks


def test_p2_one_event_and_its_frame_never_walk_the_conversations_messages(
    conversation, django_capture_on_commit_callbacks
):
    for n in range(30):  # a long conversation: a walk would read hundreds of rows
        ingest(conversation, run_events(f"old{n}", steps=1))
    frames_too = django_capture_on_commit_callbacks(execute=True)
    with CaptureQueriesContext(connection) as queries, frames_too:
        for event in run_events("new", steps=1, end=False):
            ingest(conversation, event)
    assert len(queries) > 50
    assert plans_walking_the_conversation(queries) == []


def test_s3_a_run_ending_reconciles_by_the_runs_index(
    conversation, django_capture_on_commit_callbacks
):
    """Its frame is the whole (windowed) transcript, by design; the projection's own
    reads (open answers, ephemeral lines, open tools) are the run's only."""
    for n in range(30):
        ingest(conversation, run_events(f"old{n}", steps=1))
    ingest(conversation, run_events("new", steps=1, end=False))
    with CaptureQueriesContext(connection) as queries:
        ingest(conversation, {"type": "agent.status", "run_id": "new", "status": "completed"})
    assert plans_walking_the_conversation(queries) == []
