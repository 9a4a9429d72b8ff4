"""Issue 15's audit view (chatui/admin/timeline.py, the conversation change page): a
run summary at the top, a timeline whose links reach entries by their server ids,
"jump to first error", details JSON printed once, exact times to the second."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from chatui.admin import timeline
from chatui.ingest.service import ingest
from chatui.models import Conversation, Message
from chatui.read.selectors import transcript_window

User = get_user_model()
T0 = "2026-03-05T10:00:00Z"


def at(seconds: float) -> str:
    moment = datetime(2026, 3, 5, 10, 0, tzinfo=UTC).timestamp() + seconds
    return datetime.fromtimestamp(moment, tz=UTC).isoformat().replace("+00:00", "Z")


def run_events() -> list[dict]:
    return [
        {"type": "user.message", "run_id": "r1", "content": "Build it", "timestamp": at(0)},
        {"type": "agent.status", "run_id": "r1", "status": "running", "timestamp": at(0)},
        {
            "type": "agent.tool.started",
            "run_id": "r1",
            "tool_call_id": "b1",
            "tool_name": "build",
            "timestamp": at(1),
        },
        {
            "type": "agent.tool.completed",
            "run_id": "r1",
            "tool_call_id": "b1",
            "error": "compiler exploded",
            "duration_ms": 2500,
            "details": {"kind": "telemetry", "marker": "only-once-7731"},
            "timestamp": at(3.5),
        },
        {
            "type": "agent.tool.started",
            "run_id": "r1",
            "tool_call_id": "b2",
            "tool_name": "retry_build",
            "timestamp": at(4),
        },
        {
            "type": "agent.tool.completed",
            "run_id": "r1",
            "tool_call_id": "b2",
            "result": "ok",
            "duration_ms": 1000,
            "timestamp": at(5),
        },
        {
            "type": "agent.step.completed",
            "run_id": "r1",
            "message_id": "a1",
            "content": "## Built\n\nDone on the second try.",
            "tokens": 120,
            "timestamp": at(6),
        },
        {"type": "agent.status", "run_id": "r1", "status": "completed", "timestamp": at(6.25)},
        {"type": "user.message", "run_id": "r2", "content": "Again", "timestamp": at(10)},
        {"type": "agent.status", "run_id": "r2", "status": "running", "timestamp": at(10)},
    ]


@pytest.fixture
def audited(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="Audited build")
    ingest(conversation, run_events())
    return conversation


@pytest.fixture
def auditor_client(db) -> Client:
    person = User.objects.create_user("audra", password="audra-password-1", is_staff=True)
    person.groups.add(Group.objects.get(name="auditor"))
    client = Client()
    client.force_login(person)
    return client


def test_run_summary_has_status_duration_tools_failures_and_tokens(audited):
    window, _ = transcript_window(audited)
    first, second = timeline.run_summaries(audited, window)
    assert (first.run_id, first.status, first.duration) == ("r1", "completed", "6.2 s")
    assert (first.tool_calls, first.failures, first.tokens) == (2, 1, "120 tokens")
    assert first.started == "2026-03-05 10:00:00 UTC"  # to the second
    assert (second.status, second.duration, second.tool_calls) == ("running", "running", 0)


def test_timeline_steps_link_to_entries_by_server_id(audited):
    window, _ = transcript_window(audited)
    first, _ = timeline.run_summaries(audited, window)
    build = Message.objects.get(conversation=audited, tool_call_id="b1")
    assert first.steps[0].anchor == f"#m-{build.pk}"
    assert [(s.title, s.status, s.duration, s.offset) for s in first.steps] == [
        ("build", "error", "2.5 s", "+1.0 s"),
        ("retry_build", "success", "1.0 s", "+4.0 s"),
    ]
    assert first.steps[0].failed and not first.steps[1].failed
    user_message = Message.objects.get(conversation=audited, role="user", run_id="r1")
    assert first.anchor == f"#m-{user_message.pk}"


def test_first_error_is_the_first_failed_entry(audited):
    window, _ = transcript_window(audited)
    build = Message.objects.get(conversation=audited, tool_call_id="b1")
    assert timeline.first_error_anchor(window) == f"#m-{build.pk}"
    assert timeline.first_error_anchor([m for m in window if m.pk != build.pk]) is None


def test_audit_page_puts_the_summary_and_timeline_before_the_transcript(auditor_client, audited):
    html = auditor_client.get(f"/admin/chatui/conversation/{audited.pk}/change/").content.decode()
    assert html.index("data-run-summary") < html.index('id="transcript"')
    assert html.index("data-timeline") < html.index('id="transcript"')
    build = Message.objects.get(conversation=audited, tool_call_id="b1")
    assert f'href="#m-{build.pk}" data-jump-first-error' in html
    assert f'href="#m-{build.pk}" data-timeline-entry' in html
    assert f'id="m-{build.pk}"' in html  # the anchor's target is on the page


def test_audit_page_prints_details_json_once(auditor_client, audited):
    html = auditor_client.get(f"/admin/chatui/conversation/{audited.pk}/change/").content.decode()
    assert html.count("only-once-7731") == 1


def test_audit_page_times_have_seconds(auditor_client, audited):
    html = auditor_client.get(f"/admin/chatui/conversation/{audited.pk}/change/").content.decode()
    assert "2026-03-05 10:00:00" in html
    created = re.search(r"created at.*?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", html, re.S | re.I)
    assert created is not None


def test_audit_page_without_errors_says_so(auditor_client, user):
    calm = Conversation.objects.create(owner=user, title="Calm")
    ingest(calm, [{"type": "user.message", "content": "hi"}])
    html = auditor_client.get(f"/admin/chatui/conversation/{calm.pk}/change/").content.decode()
    assert "data-no-errors" in html and "data-jump-first-error" not in html
