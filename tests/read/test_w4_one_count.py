"""W4 one count (docs/rendering.md#w4): one function decides a tool call's final outcome
(chatui.read.outcomes) and every surface counts its results — the page's batch
summaries, the list and rail rows, the admin's columns and filter, the exports. A
failure a later attempt recovered (G14) is not a failure; denied, expired and cancelled
are their own counts."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from chatui.admin.filters import HasErrorsFilter
from chatui.ingest import approvals
from chatui.ingest.service import ingest, reproject
from chatui.models import Conversation, Message
from chatui.read import listing, presenters, selectors
from chatui.read.exporters import export_otlp
from chatui.read.outcomes import Outcome, OutcomeCounts, outcome_of

HOSTILE = '<script>alert("x")</script>'
EXPECTED = OutcomeCounts(tools=5, failed=1, denied=1, expired=1, cancelled=1)
EXPECTED_TEXT = "5 tools · 1 failed · 1 denied · 1 expired · 1 cancelled"


def every_outcome(conversation: Conversation, user) -> None:
    """Run r1: a call that failed and was retried to success (G14), a failure, a denial
    and an expiry; run r2: a tool running when a person pressed Stop (W5)."""
    args = {"path": HOSTILE}
    ingest(
        conversation,
        [
            {"type": "user.message", "content": "go", "run_id": "r1"},
            {"type": "agent.status", "status": "running", "run_id": "r1"},
            {"type": "agent.tool.started", "tool_call_id": "t1", "tool_name": "read_file",
             "args": args, "attempt": 1, "max_attempts": 3, "run_id": "r1"},
            {"type": "agent.tool.completed", "tool_call_id": "t1", "error": "timeout",
             "run_id": "r1"},
            {"type": "agent.tool.started", "tool_call_id": "t2", "tool_name": "read_file",
             "args": args, "attempt": 2, "max_attempts": 3, "run_id": "r1"},
            {"type": "agent.tool.completed", "tool_call_id": "t2", "result": "ok",
             "run_id": "r1"},
            {"type": "agent.tool.started", "tool_call_id": "f1", "tool_name": "fetch",
             "run_id": "r1"},
            {"type": "agent.tool.completed", "tool_call_id": "f1", "error": HOSTILE,
             "run_id": "r1"},
            {"type": "agent.tool.approval_requested", "tool_call_id": "d1",
             "tool_name": "delete_file", "run_id": "r1"},
            {"type": "agent.tool.approval_requested", "tool_call_id": "e1",
             "tool_name": "delete_file", "timeout_s": 1, "run_id": "r1"},
        ],
    )  # fmt: skip
    approvals.decide(conversation, "d1", "denied", user)
    assert approvals.expire_overdue(conversation, now=timezone.now() + timedelta(seconds=5)) == 1
    ingest(
        conversation,
        [
            {"type": "agent.status", "status": "completed", "run_id": "r1"},
            {"type": "user.message", "content": "more", "run_id": "r2"},
            {"type": "agent.status", "status": "running", "run_id": "r2"},
            {"type": "agent.tool.started", "tool_call_id": "s1", "tool_name": "sleep",
             "run_id": "r2"},
            {"type": "agent.status", "status": "cancelled", "run_id": "r2"},
        ],
    )  # fmt: skip


@pytest.fixture
def full(conversation, user) -> Conversation:
    every_outcome(conversation, user)
    return conversation


def page_counts(conversation: Conversation) -> OutcomeCounts:
    """The page's batch summaries added up, as shown."""
    items = presenters.present_transcript(list(selectors.messages_of(conversation)))
    batches = [item for item in items if item.kind == "tool_batch"]

    def number(text: str | None) -> int:
        return int(text.split()[0]) if text else 0

    return OutcomeCounts(
        tools=sum(len(list(presenters.iter_entries(batch.entries))) for batch in batches),
        failed=sum(number(batch.failed_text) for batch in batches),
        denied=sum(number(batch.denied_text) for batch in batches),
        expired=sum(number(batch.expired_text) for batch in batches),
        cancelled=sum(number(batch.cancelled_text) for batch in batches),
    )


def test_w4_one_function_decides_each_outcome(full):
    outcomes = {
        tool.tool_call_id: outcome_of(tool.tool_status, tool.metadata)
        for tool in Message.objects.filter(conversation=full, role="tool")
    }
    assert outcomes == {
        "t1": Outcome.RETRIED,
        "t2": Outcome.SUCCEEDED,
        "f1": Outcome.FAILED,
        "d1": Outcome.DENIED,
        "e1": Outcome.EXPIRED,
        "s1": Outcome.CANCELLED,
    }
    assert OutcomeCounts.of_messages(Message.objects.filter(conversation=full)) == EXPECTED


def test_w4_page_list_rail_and_admin_counts_agree(full):
    assert page_counts(full) == EXPECTED
    (row,) = listing.present_rows(list(selectors.with_row_data(Conversation.objects.all())))
    assert row.counts == EXPECTED_TEXT
    (rail,) = listing.present_rows(list(selectors.with_run_status(Conversation.objects.all())))
    assert rail.counts == EXPECTED_TEXT


def test_w4_a_retried_attempt_is_no_call_and_no_failure_in_the_row_columns(full):
    full.refresh_from_db()
    assert (full.tool_count, full.failed_tool_count) == (5, 1)
    reproject(full)  # a rebuilt projection counts the same
    full.refresh_from_db()
    assert (full.tool_count, full.failed_tool_count) == (5, 1)
    assert page_counts(full) == EXPECTED


def test_w4_an_attempt_of_other_args_is_its_own_call(conversation):
    ingest(
        conversation,
        [
            {"type": "agent.tool.started", "tool_call_id": "t1", "tool_name": "read",
             "args": {"p": 1}, "attempt": 1, "run_id": "r1"},
            {"type": "agent.tool.completed", "tool_call_id": "t1", "error": "no", "run_id": "r1"},
            {"type": "agent.tool.started", "tool_call_id": "t2", "tool_name": "read",
             "args": {"p": 2}, "attempt": 2, "run_id": "r1"},
            {"type": "agent.tool.completed", "tool_call_id": "t2", "result": "ok",
             "run_id": "r1"},
        ],
    )  # fmt: skip
    conversation.refresh_from_db()
    assert (conversation.tool_count, conversation.failed_tool_count) == (2, 1)
    assert page_counts(conversation).failed == 1


def test_w4_a_call_that_failed_on_every_attempt_is_one_failure(conversation):
    events = []
    for attempt in (1, 2, 3):
        events += [
            {"type": "agent.tool.started", "tool_call_id": f"t{attempt}", "tool_name": "read",
             "args": {"p": 1}, "attempt": attempt, "max_attempts": 3, "run_id": "r1"},
            {"type": "agent.tool.completed", "tool_call_id": f"t{attempt}", "error": "no",
             "run_id": "r1"},
        ]  # fmt: skip
    ingest(conversation, events)
    conversation.refresh_from_db()
    assert (conversation.tool_count, conversation.failed_tool_count) == (1, 1)
    assert page_counts(conversation) == OutcomeCounts(tools=1, failed=1)


def test_w4_admin_columns_filter_and_exports_count_the_same(full):
    superuser = get_user_model().objects.create_superuser("root", password="root-password-1")
    client = Client()
    client.force_login(superuser)
    page = client.get(reverse("admin:chatui_conversation_changelist")).content.decode()
    failed = re.search(r'<td class="field-errors_count"><strong[^>]*>(\d+)</strong>', page)
    assert failed and failed.group(1) == "1"
    assert '<td class="field-tool_calls_count">5</td>' in page
    assert '<td class="field-outcomes_shown">1 denied · 1 expired · 1 cancelled</td>' in page
    assert HOSTILE not in page
    # The errors filter: a conversation whose only failure was recovered has none.
    recovered = Conversation.objects.create(owner=full.owner, title="recovered")
    ingest(
        recovered,
        [
            {"type": "agent.tool.started", "tool_call_id": "t1", "tool_name": "read",
             "attempt": 1, "run_id": "r1"},
            {"type": "agent.tool.completed", "tool_call_id": "t1", "error": "no", "run_id": "r1"},
            {"type": "agent.tool.started", "tool_call_id": "t2", "tool_name": "read",
             "attempt": 2, "run_id": "r1"},
            {"type": "agent.tool.completed", "tool_call_id": "t2", "result": "ok",
             "run_id": "r1"},
        ],
    )  # fmt: skip
    with_errors = client.get(reverse("admin:chatui_conversation_changelist") + "?has_errors=yes")
    assert [c.pk for c in with_errors.context["cl"].result_list] == [full.pk]
    assert HasErrorsFilter.parameter_name == "has_errors"
    # OTLP: each tool span says what it counts as.
    spans = [
        span
        for resource in export_otlp(full)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
        if span["name"].startswith("execute_tool")
    ]
    outcomes = sorted(
        attribute["value"]["stringValue"]
        for span in spans
        for attribute in span["attributes"]
        if attribute["key"] == "chatui.tool.outcome"
    )
    assert outcomes == ["cancelled", "denied", "expired", "failed", "retried", "succeeded"]


def test_w4_rendered_page_list_and_rail_show_the_same_counts(full, user):
    client = Client()
    client.force_login(user)
    page = client.get(full.get_absolute_url()).content.decode()
    for attribute, number in (
        ("data-batch-failed", 1),
        ("data-batch-denied", 1),
        ("data-batch-expired", 1),
        ("data-batch-cancelled", 1),
    ):
        shown = re.findall(rf"<span [^>]*{attribute}>(\d+) ", page)
        assert sum(map(int, shown)) == number, attribute
    rail = re.findall(r"data-row-counts>([^<]*)<", page)
    assert rail == [EXPECTED_TEXT]
    listed = client.get(reverse("chatui:conversation-list")).content.decode()
    assert re.findall(r"data-row-counts>([^<]*)<", listed) == [EXPECTED_TEXT]
    assert HOSTILE not in page
