"""docs/PERFORMANCE.md#p2: the projection looks up only what an event can change. Progress logged
before a tool's entry exists is looked for when the entry appears, not again when a
queued entry starts (G12)."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatui.ingest.service import ingest
from tests.support.ingest_events import progress, queued, started, tool_output


def event_log_reads(captured: CaptureQueriesContext) -> int:
    return sum(
        query["sql"].startswith("SELECT") and 'FROM "chatui_event"' in query["sql"]
        for query in captured.captured_queries
    )


def test_p2_a_queued_tool_starting_looks_up_no_early_progress(conversation):
    ingest(conversation, progress("c1", "before\n"))
    ingest(conversation, queued("c1"))  # the entry appears: early progress applied
    with CaptureQueriesContext(connection) as captured:
        ingest(conversation, started("c1"))
    assert event_log_reads(captured) == 0
    assert tool_output(conversation, "c1") == "before\n"  # applied once, not again


def test_g12_a_new_tool_starting_still_gets_its_early_progress(conversation):
    ingest(conversation, progress("c2", "early\n"))
    with CaptureQueriesContext(connection) as captured:
        ingest(conversation, started("c2"))
    assert event_log_reads(captured) >= 1
    assert tool_output(conversation, "c2") == "early\n"
