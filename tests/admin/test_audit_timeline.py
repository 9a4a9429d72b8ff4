"""The audit page's A1 timeline and A2 times (docs/rendering.md#a1, #a2): the presenter's
plain data first (chatui/admin/timeline.py), then what the page shows of it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client, override_settings

from chatui.admin import timeline
from chatui.admin.approvals import decision_rows
from chatui.admin.times import event_time, exact_time, iso_time, time_element
from chatui.ingest import approvals
from chatui.ingest.service import ingest
from chatui.models import Conversation, Message
from chatui.read import presenters
from chatui.read.selectors import transcript_window

User = get_user_model()
START = datetime(2026, 3, 5, 10, 0, tzinfo=UTC)
HOSTILE = '<img src=x onerror="alert(1)">'


def at(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def event(kind: str, seconds: float, **fields) -> dict:
    return {"type": kind, "run_id": "r1", "timestamp": at(seconds), **fields}


def started(call: str, name: str, seconds: float, **fields) -> dict:
    return event("agent.tool.started", seconds, tool_call_id=call, tool_name=name, **fields)


def completed(call: str, seconds: float, **fields) -> dict:
    return event("agent.tool.completed", seconds, tool_call_id=call, **fields)


def summaries(conversation: Conversation, **options) -> list[timeline.RunSummary]:
    window, _ = transcript_window(conversation)
    items = presenters.present_transcript(window)
    return timeline.run_summaries(conversation, window, timeline.entry_anchors(items), **options)


@pytest.fixture
def auditor_client(db) -> Client:
    person = User.objects.create_user("audra", password="audra-password-1", is_staff=True)
    person.groups.add(Group.objects.get(name="auditor"))
    client = Client()
    client.force_login(person)
    return client


@pytest.fixture
def out_of_order(user) -> Conversation:
    """A step queues `a` and `b`; `b` starts first, `u` in between, `a` last with a
    sub-agent `n` inside it (created last, so last in the transcript's order too)."""
    conversation = Conversation.objects.create(owner=user, title="Out of order")
    ingest(
        conversation,
        [
            event("user.message", 0, content="Go"),
            event("agent.status", 0, status="running"),
            event(
                "agent.step.completed",
                1,
                message_id="s1",
                content="",
                tool_calls=[{"id": "a", "name": "alpha"}, {"id": "b", "name": "beta"}],
            ),
            started("b", "beta", 2),
            completed("b", 5, result="ok", duration_ms=3000),
            started("u", "unrelated", 3),
            completed("u", 3.5, result="ok"),
            started("a", "alpha", 4),
            started("n", "nested", 4.5, parent_tool_call_id="a"),
            completed("n", 6, error="boom"),
            completed("a", 7, result="ok", duration_ms=3000),
            event("agent.status", 10, status="completed"),
        ],
    )
    return conversation


def test_a1_timeline_is_in_start_order_nested_under_the_parent(out_of_order):
    (run,) = summaries(out_of_order)
    assert [(step.title, step.depth) for step in run.steps] == [
        ("beta", 0),
        ("unrelated", 0),
        ("alpha", 0),
        ("nested", 1),
    ]
    assert [step.offset for step in run.steps] == ["+2.0 s", "+3.0 s", "+4.0 s", "+4.5 s"]
    starts = [step.start_ms for step in run.steps]
    assert starts == sorted(starts)


def test_a1_bars_are_start_offset_and_duration_on_the_runs_axis(out_of_order):
    (run,) = summaries(out_of_order)
    beta, unrelated, _, nested = run.steps
    # The run spans 10 s: beta ran from 2 s for 3 s (its duration_ms).
    assert [(part.kind, part.x, part.width) for part in beta.segments] == [("run", 20.0, 30.0)]
    # Without duration_ms, a call ends at the event that finished it.
    assert [(part.x, part.width) for part in unrelated.segments] == [(30.0, 5.0)]
    assert unrelated.duration == "500 ms"
    assert nested.segments[0].x == 45.0 and nested.segments[0].width == 15.0
    assert [tick.label for tick in run.ticks] == [
        "0",
        "+2.0 s",
        "+4.0 s",
        "+6.0 s",
        "+8.0 s",
        "+10.0 s",
    ]
    assert run.span == "10.0 s"


def test_a1_failures_and_retries_are_marked(user):
    conversation = Conversation.objects.create(owner=user, title="Retries")
    ingest(
        conversation,
        [
            event("agent.status", 0, status="running"),
            started("f1", "flaky", 1, args={"q": 1}, attempt=1, max_attempts=3),
            completed("f1", 2, error="timeout"),
            started("f2", "flaky", 3, args={"q": 1}, attempt=2, max_attempts=3),
            completed("f2", 4, result="ok"),
            started("x", "explode", 5),
            completed("x", 6, error="boom"),
            event("agent.status", 8, status="completed"),
        ],
    )
    (run,) = summaries(conversation)
    assert [(s.title, s.outcome, s.failed) for s in run.steps] == [
        ("flaky", "retried", False),
        ("flaky", "succeeded", False),
        ("explode", "failed", True),
    ]
    assert [list(map(str, step.marks)) for step in run.steps] == [
        ["failed, retried"],
        ["attempt 2/3"],
        [],
    ]
    # G14: both attempts are one entry on the page, under the first attempt's id.
    assert run.steps[0].anchor == run.steps[1].anchor
    first = Message.objects.get(conversation=conversation, tool_call_id="f1")
    assert run.steps[1].anchor == f"#m-{first.pk}"


@pytest.fixture
def approvals_run(user) -> Conversation:
    """The showcase's approvals, as the demo runs them: three calls queued by one step,
    each asking a person; the first approved, the second denied, the third left to
    expire; then the first runs, after the others were decided."""
    conversation = Conversation.objects.create(owner=user, title="Approvals")
    ingest(
        conversation,
        [
            {"type": "agent.status", "run_id": "r1", "status": "running"},
            {
                "type": "agent.step.completed",
                "run_id": "r1",
                "message_id": "s1",
                "content": "Asking first.",
                "tool_calls": [
                    {"id": "t1", "name": "delete_file"},
                    {"id": "t2", "name": "run_command"},
                    {"id": "t3", "name": HOSTILE},
                ],
            },
        ],
    )
    for call, name, verdict in (
        ("t1", "delete_file", "approved"),
        ("t2", "run_command", "denied"),
        ("t3", HOSTILE, None),
    ):
        ingest(
            conversation,
            {
                "type": "agent.tool.approval_requested",
                "run_id": "r1",
                "tool_call_id": call,
                "tool_name": name,
                "reason": "asks",
                "timeout_s": 1 if verdict is None else 600,
            },
        )
        if verdict:
            approvals.decide_as(conversation, call, verdict, "rev<i>ewer</i>", "")
    approvals.expire_overdue(conversation, now=datetime.now(UTC) + timedelta(seconds=5))
    ingest(
        conversation,
        [
            {"type": "agent.tool.started", "run_id": "r1", "tool_call_id": "t1",
             "tool_name": "delete_file"},
            {"type": "agent.tool.completed", "run_id": "r1", "tool_call_id": "t1",
             "result": "deleted", "duration_ms": 20},
            {"type": "agent.status", "run_id": "r1", "status": "completed"},
        ],
    )  # fmt: skip
    return conversation


def test_a2_approval_times_never_go_backwards(approvals_run):
    """The old list ordered by position and showed the approved call's start, after the
    later requests' decisions: +12 s, +10 s, +10 s. Rows begin at their request now."""
    (run,) = summaries(approvals_run)
    assert [step.outcome for step in run.steps] == ["succeeded", "denied", "expired"]
    starts = [step.start_ms for step in run.steps]
    assert starts == sorted(starts)
    rows = decision_rows(approvals_run)
    assert [row.decision for row in rows] == ["approved", "denied", "expired"]
    times = [row.decided_at for row in rows]
    assert times == sorted(times)


def test_a1_approvals_show_the_wait_before_the_run(approvals_run):
    (run,) = summaries(approvals_run)
    approved, denied, expired = run.steps
    assert [part.kind for part in approved.segments] == ["wait", "run"]
    assert approved.segments[0].x <= approved.segments[1].x
    assert [part.kind for part in denied.segments] == ["wait"]
    assert [part.kind for part in expired.segments] == ["wait"]
    assert str(approved.marks[0]).startswith("approved by rev&lt;i&gt;ewer&lt;/i&gt; after ")
    assert str(denied.marks[0]).startswith("denied by rev&lt;i&gt;ewer&lt;/i&gt;")
    assert str(expired.marks[0]).startswith("approval expired after ")


def test_a1_hostile_tool_names_and_approvers_are_escaped_on_the_page(auditor_client, approvals_run):
    html = auditor_client.get(f"/admin/chatui/conversation/{approvals_run.pk}/change/")
    text = html.content.decode()
    assert HOSTILE not in text and "<i>ewer" not in text
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in text
    timeline_html = text[text.index("data-timeline>") : text.index('id="audit-transcript"')]
    assert " style=" not in timeline_html  # the CSP allows no inline style: SVG attributes
    bars = re.findall(r'<rect class="chatui-tl-(\w+)" x="([\d.]+)%" width="([\d.]+)%"', text)
    assert [kind for kind, _, _ in bars] == ["wait", "run", "wait", "wait"]


def test_a1_a_cycle_of_parents_lists_each_call_once(user):
    conversation = Conversation.objects.create(owner=user, title="Cycle")
    ingest(
        conversation,
        [
            event("agent.status", 0, status="running"),
            started("p", "one", 1, parent_tool_call_id="q"),
            started("q", "two", 2, parent_tool_call_id="p"),
            started("s", "self", 3, parent_tool_call_id="s"),
        ],
    )
    (run,) = summaries(conversation, now=START + timedelta(seconds=10))
    assert sorted(step.title for step in run.steps) == ["one", "self", "two"]
    assert all(part.kind == "run" for step in run.steps for part in step.segments)


def test_a1_a_running_call_reaches_now(user):
    conversation = Conversation.objects.create(owner=user, title="Running")
    ingest(conversation, [event("agent.status", 0, status="running"), started("r", "slow", 2)])
    (run,) = summaries(conversation, now=START + timedelta(seconds=10))
    (step,) = run.steps
    assert (step.outcome, step.duration) == ("pending", "")
    assert step.segments[0].kind == "run"
    assert (step.segments[0].x, step.segments[0].width) == (20.0, 80.0)


# -- A2 ----------------------------------------------------------------------------------


def test_a2_times_are_to_the_second_events_to_the_millisecond():
    moment = datetime(2026, 3, 5, 10, 0, 1, 234567, tzinfo=UTC)
    assert exact_time(moment) == "2026-03-05 10:00:01 UTC"
    assert event_time(moment) == "2026-03-05 10:00:01.234"
    assert iso_time(moment) == "2026-03-05T10:00:01.234+00:00"
    assert str(time_element(moment)) == (
        '<time datetime="2026-03-05T10:00:01.234+00:00" '
        'title="2026-03-05T10:00:01.234+00:00">2026-03-05 10:00:01 UTC</time>'
    )


@override_settings(TIME_ZONE="Europe/Berlin")
def test_a2_times_are_in_the_auditors_time_zone():
    moment = datetime(2026, 3, 5, 10, 0, 1, tzinfo=UTC)
    assert exact_time(moment) == "2026-03-05 11:00:01 CET"
    assert iso_time(moment) == "2026-03-05T11:00:01.000+01:00"


def test_a2_no_raw_iso_with_microseconds_on_the_audit_page(auditor_client, approvals_run):
    for path in (
        f"/admin/chatui/conversation/{approvals_run.pk}/change/",
        f"/admin/chatui/event/?conversation={approvals_run.pk}",
        f"/admin/chatui/run/?conversation={approvals_run.pk}",
        f"/admin/chatui/message/?conversation={approvals_run.pk}",
    ):
        text = auditor_client.get(path).content.decode()
        assert re.search(r"\d\d:\d\d:\d\d\.\d{4,}", text) is None, path
        # To the second, the ISO value on hover (Django's default said "10 a.m.").
        assert re.search(
            r'<time datetime="[^"]+" title="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d', text
        ), path
    page = auditor_client.get(f"/admin/chatui/conversation/{approvals_run.pk}/change/")
    assert re.search(
        r"data-approval-row><code>t1</code>: approved by rev&lt;i&gt;ewer&lt;/i&gt; at <time "
        r'datetime="[^"]+\.\d{3}\+00:00" title="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</time>',
        page.content.decode(),
    )
