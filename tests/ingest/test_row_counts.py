"""Issue 12: a conversation's list-row counts ("12 tools · 3 failed") are columns the
projection keeps in the ingest transaction, not a COUNT over its messages per row.

The rule: `tool_count` is the number of its tool messages, `failed_tool_count` the
number of those whose tool_status is "error" — after every ingest, reproject and the
migration that fills them. A live row push then costs the same for 1 message or 1,000.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatui.ingest.events import APPROVAL_DECISIONS
from chatui.ingest.projection import ROW_COUNT_FIELDS, Projector
from chatui.ingest.service import ingest, reproject
from chatui.ingest.values import EventError
from chatui.live.broadcast import send_row
from chatui.models import Conversation, Message, ToolStatus
from chatui.read import listing, selectors
from chatui.read.outcomes import OutcomeCounts
from tests.support.fuzz_events import event as fuzz_event
from tests.support.sockets import fresh_channel_layer  # noqa: F401

RUN = "r1"


def stored_counts(conversation: Conversation) -> tuple[int, int]:
    conversation.refresh_from_db(fields=ROW_COUNT_FIELDS)
    return conversation.tool_count, conversation.failed_tool_count


def counted(conversation: Conversation) -> tuple[int, int]:
    """The counts of a fresh walk over the messages, by final outcome (W4)."""
    counts = OutcomeCounts.of_messages(Message.objects.filter(conversation=conversation))
    return counts.tools, counts.failed


def every_count(conversation: Conversation) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the five stored columns, the same five from a fresh walk by final outcome)."""
    conversation.refresh_from_db(fields=ROW_COUNT_FIELDS)
    stored = tuple(getattr(conversation, name) for name in ROW_COUNT_FIELDS)
    fresh = OutcomeCounts.of_messages(Message.objects.filter(conversation=conversation))
    walked = (fresh.tools, fresh.failed, fresh.denied, fresh.expired, fresh.cancelled)
    return stored, walked


def started(call_id: str, name: str = "ls", **extra: Any) -> dict:
    return {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": name, **extra}


def completed(call_id: str, **outcome: Any) -> dict:
    return {"type": "agent.tool.completed", "tool_call_id": call_id, **outcome}


def test_each_tool_message_counts_once_from_queued_to_done(conversation, feed):
    feed(
        {"type": "user.message", "content": "go", "run_id": RUN},
        {
            "type": "agent.step.completed",
            "content": "",
            "run_id": RUN,
            "tool_calls": [{"id": "c1", "name": "ls"}, {"id": "c2", "name": "cat"}],
        },
    )
    assert stored_counts(conversation) == (2, 0)  # queued calls are tool messages
    feed(started("c1", run_id=RUN), completed("c1", result="ok", run_id=RUN))
    feed(started("c2", "cat", run_id=RUN), started("c3", run_id=RUN))
    assert stored_counts(conversation) == (3, 0) == counted(conversation)


def test_a_tool_that_ends_in_error_counts_as_failed_once(conversation, feed):
    feed(started("c1"), started("c2"), started("c3"))
    feed(completed("c1", error="boom"))
    # G15: details saying the command exited non-zero are a failure without `error`.
    feed(completed("c2", result="no such file", details={"exit_code": 2}))
    feed(completed("c3", result="ok"), completed("c1", error="boom again"))  # late: ignored
    assert stored_counts(conversation) == (3, 2) == counted(conversation)


def test_a_tool_created_and_failed_in_one_call_counts_as_failed(conversation, feed):
    feed(completed("c1", tool_name="ls", error="boom"))  # [003]: a result with no start
    assert stored_counts(conversation) == (1, 1) == counted(conversation)


def test_w4_a_retry_that_succeeds_after_an_error_is_one_call_and_no_failure(conversation, feed):
    """G14, W4 (docs/rendering.md#w4): each attempt is its own tool message, but the
    row counts calls by final outcome, as the page does: attempt 2 retried attempt 1,
    so the call is one, and it succeeded."""
    feed(
        started("c1", "fetch", attempt=1, max_attempts=3, run_id=RUN),
        completed("c1", error="timeout", run_id=RUN),
    )
    assert stored_counts(conversation) == (1, 1)
    feed(
        started("c2", "fetch", attempt=2, max_attempts=3, run_id=RUN),
        completed("c2", result="200 OK", run_id=RUN),
    )
    assert stored_counts(conversation) == (1, 0)
    retried = Message.objects.get(conversation=conversation, tool_call_id="c1")
    assert (retried.tool_status, retried.metadata["retried"]) == (ToolStatus.ERROR, True)


def test_denied_and_skipped_tools_count_but_not_as_failed(conversation, feed):
    feed(
        {"type": "agent.tool.approval_requested", "tool_call_id": "c1", "tool_name": "rm"},
        {"type": "tool.approval", "tool_call_id": "c1", "decision": "denied"},
        started("c2"),
        completed("c2", skipped=True),
    )
    assert stored_counts(conversation) == (2, 0) == counted(conversation)


def test_removing_a_failed_tool_message_takes_it_off_both_counts(conversation, feed):
    """The projection's one way to delete messages (`_remove`, S3's reconciliation
    uses it for status lines) uncounts the tools among them, failed ones as failed."""
    feed(started("c1"), completed("c1", error="boom"), started("c2"))
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        projector = Projector(locked)
        projector._remove(Message.objects.filter(conversation=locked, tool_call_id="c1"))
        locked.save(update_fields=ROW_COUNT_FIELDS)
    assert stored_counts(conversation) == (1, 0) == counted(conversation)


def test_a_tool_whose_status_stops_being_error_stops_counting_as_failed(conversation, feed):
    """No event reopens a failed tool today (FINISHED is final), but the count follows
    the stored status either way: a write that takes it off "error" uncounts it."""
    feed(started("c1"), completed("c1", error="boom"))
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        projector = Projector(locked)
        message = Message.objects.get(conversation=locked, tool_call_id="c1")
        message.tool_status = ToolStatus.SUCCESS
        projector._save(message, locked.events.last())
        projector.flush()
        locked.save(update_fields=ROW_COUNT_FIELDS)
    assert stored_counts(conversation) == (1, 0) == counted(conversation)


def test_a_run_end_removing_its_status_lines_leaves_the_tool_counts(conversation, feed):
    feed(
        {"type": "agent.status", "status": "running", "run_id": RUN},
        {"type": "agent.status", "status": "thinking", "run_id": RUN},
        started("c1", run_id=RUN),
        completed("c1", error="boom", run_id=RUN),
        started("c2", run_id=RUN),  # never answered: "no result recorded" (T2)
    )
    feed({"type": "agent.status", "status": "completed", "run_id": RUN})
    assert not Message.objects.filter(conversation=conversation, status_type="thinking").exists()
    assert stored_counts(conversation) == (2, 1) == counted(conversation)


def test_reproject_rebuilds_the_counts_from_the_log(conversation, feed):
    feed(started("c1"), completed("c1", error="boom"), started("c2"), completed("c2"))
    Conversation.objects.filter(pk=conversation.pk).update(tool_count=40, failed_tool_count=7)
    reproject(conversation)
    assert (conversation.tool_count, conversation.failed_tool_count) == (2, 1)
    assert stored_counts(conversation) == (2, 1) == counted(conversation)


def test_a_callers_copy_saved_after_ingest_keeps_the_counts(conversation, feed):
    feed(started("c1"), completed("c1", error="boom"))
    conversation.title = "Renamed"
    conversation.save()  # the caller's own object: ingest brought its counts up to date
    assert stored_counts(conversation) == (1, 1)


def test_the_row_shows_the_stored_counts(conversation, feed):
    feed(started("c1"), completed("c1", error="boom"), started("c2"))
    row = listing.present_row(selectors.conversation_row(conversation.pk))
    assert row.counts == "2 tools · 1 failed"


# -- a live row push no longer reads the conversation's messages to count them -----------


def many_tools(conversation: Conversation, n: int) -> None:
    events: list[dict] = []
    for number in range(n):
        events += [started(f"c{number}"), completed(f"c{number}", result="ok")]
    ingest(conversation, events)


def test_a_live_row_push_costs_the_same_queries_for_1_or_500_tool_calls(user):
    small = Conversation.objects.create(owner=user, title="small")
    large = Conversation.objects.create(owner=user, title="large")
    many_tools(small, 1)
    many_tools(large, 500)
    with CaptureQueriesContext(connection) as few:
        send_row(small.pk)
    with CaptureQueriesContext(connection) as many:
        send_row(large.pk)
    assert len(few.captured_queries) == len(many.captured_queries) == 1
    (query,) = many.captured_queries
    assert "COUNT(" not in query["sql"].upper()
    row = listing.present_row(selectors.conversation_row(large.pk))
    assert row.counts == "500 tools"


# -- the migration fills the columns of conversations that predate them ----------------

BEFORE = [("chatui", "0009_tool_approval")]
AFTER = [("chatui", "0010_conversation_tool_counts")]


def latest() -> list[tuple[str, str]]:
    """Where the test database is left: the models read it as the latest migration made
    it (later ones add columns: 0013 `Conversation.rebuilds`)."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes("chatui")


def sqlite_trigger_exists(name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = %s", [name])
        return cursor.fetchone() is not None


def old_conversation(apps, owner_pk, statuses: list[str]) -> Any:
    """A conversation as 0009 stored it: a user message, then one tool per status."""
    Conversation = apps.get_model("chatui", "Conversation")
    Message = apps.get_model("chatui", "Message")
    conversation = Conversation.objects.create(owner_id=owner_pk, title="old")
    now = timezone.now()
    Message.objects.create(
        conversation=conversation, message_id="u", role="user", timestamp=now, position=1
    )
    for order, tool_status in enumerate(statuses, start=2):
        Message.objects.create(
            conversation=conversation,
            message_id=f"t{order}",
            role="tool",
            tool_status=tool_status,
            timestamp=now,
            position=order,
        )
    return conversation


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_counts_of_existing_conversations_and_reverses():
    owner = get_user_model().objects.create_user("old-timer")
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        apps = executor.loader.project_state(BEFORE).apps
        mixed = old_conversation(apps, owner.pk, ["success", "error", "running", "error"])
        chat = old_conversation(apps, owner.pk, [])
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
    finally:
        MigrationExecutor(connection).migrate(latest())
    assert stored_counts(Conversation.objects.get(pk=mixed.pk)) == (4, 2)
    assert stored_counts(Conversation.objects.get(pk=chat.pk)) == (0, 0)
    if connection.vendor == "sqlite":
        # The table was rebuilt: the title index's delete trigger must be back.
        assert sqlite_trigger_exists("chatui_title_search_forget")
        MigrationExecutor(connection).migrate(BEFORE)
        try:
            assert sqlite_trigger_exists("chatui_title_search_forget")
        finally:
            MigrationExecutor(connection).migrate(latest())


@pytest.mark.django_db(transaction=True)
def test_w4_the_migration_fills_denied_expired_and_cancelled_counts():
    before, after = (
        [("chatui", "0017_notes_and_share_links")],
        [("chatui", "0018_w4_outcome_counts")],
    )
    owner = get_user_model().objects.create_user("old-timer")
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        apps = executor.loader.project_state(before).apps
        old = old_conversation(apps, owner.pk, ["denied", "denied", "cancelled", "error"])
        Message = apps.get_model("chatui", "Message")
        expired = Message.objects.filter(conversation_id=old.pk, tool_status="denied").first()
        expired.metadata = {"approval": {"decision": "expired"}}
        expired.save()
        MigrationExecutor(connection).migrate(after)
    finally:
        MigrationExecutor(connection).migrate(latest())
    counted_row = Conversation.objects.get(pk=old.pk)
    assert (
        counted_row.denied_tool_count,
        counted_row.expired_tool_count,
        counted_row.cancelled_tool_count,
    ) == (1, 1, 1)
    if connection.vendor == "sqlite":
        assert sqlite_trigger_exists("chatui_title_search_forget")


# -- property: whatever the events, the stored counts are a fresh COUNT -----------------

CALL_IDS = st.sampled_from(["c1", "c2", "c3"])
RUN_IDS = st.sampled_from([None, "r1", "r2"])  # None: no run_id
TOOL_NAMES = st.sampled_from(["ls", "cat"])
OUTCOMES = st.sampled_from(
    [
        {"result": "ok"},
        {"error": "boom"},
        {"skipped": True},
        {"result": "x", "details": {"exit_code": 1}},
        {"result": "x", "details": {"status_code": 500}},
        {},
    ]
)


def _call(call_id: str | None, name: str) -> dict:
    return {"name": name} if call_id is None else {"id": call_id, "name": name}


tool_event = st.one_of(
    st.builds(
        lambda calls: {"type": "agent.step.completed", "content": "", "tool_calls": calls},
        st.lists(st.builds(_call, st.none() | CALL_IDS, TOOL_NAMES), max_size=3),
    ),
    st.builds(started, CALL_IDS, TOOL_NAMES),
    # G14, W4: numbered attempts, so a failed one may be retried
    st.builds(
        lambda call_id, name, attempt: started(call_id, name, attempt=attempt),
        CALL_IDS,
        TOOL_NAMES,
        st.integers(min_value=1, max_value=3),
    ),
    st.builds(
        lambda call_id: {"type": "agent.tool.progress", "tool_call_id": call_id, "output": "."},
        CALL_IDS,
    ),
    st.builds(
        lambda call_id, name, outcome: completed(call_id, tool_name=name, **outcome),
        CALL_IDS,
        TOOL_NAMES,
        OUTCOMES,
    ),
    st.builds(
        lambda call_id, name: {
            "type": "agent.tool.approval_requested",
            "tool_call_id": call_id,
            "tool_name": name,
        },
        CALL_IDS,
        TOOL_NAMES,
    ),
    st.builds(
        lambda call_id, decision: {
            "type": "tool.approval",
            "tool_call_id": call_id,
            "decision": decision,
        },
        CALL_IDS,
        st.sampled_from(APPROVAL_DECISIONS),
    ),
    st.builds(
        lambda status: {"type": "agent.status", "status": status},
        st.sampled_from(["running", "thinking", "completed", "failed", "cancelled"]),
    ),
)
with_run = st.builds(
    lambda event, run_id: event if run_id is None else {**event, "run_id": run_id},
    tool_event,
    RUN_IDS,
)
# Now and then any event of the contract (AgentSpine's aliases included).
any_event = st.one_of(with_run, with_run, with_run, fuzz_event(hostility=0))
batches = st.lists(st.lists(any_event, min_size=1, max_size=4), min_size=1, max_size=6)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batches=batches)
def test_after_any_mix_of_events_the_stored_counts_equal_a_fresh_count(user, batches):
    conversation = Conversation.objects.create(owner=user)
    for batch in batches:
        try:
            ingest(conversation, batch)
        except EventError:
            continue  # refused whole: nothing changed
        stored, walked = every_count(conversation)
        assert stored == walked, batch
    reproject(conversation)
    stored, walked = every_count(conversation)
    assert stored == walked
