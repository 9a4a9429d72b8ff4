"""A3 (docs/rendering.md#a3): the events list gives each event's seq, type, own time and
a one-line summary, and links each to the transcript as of it (`?at=seq`) and, for an
AG-UI event, to the agent's state then. The summary first (plain text, no HTML)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from chatui.admin.event_summary import SUMMARY_CHARS, event_summary
from chatui.ingest.service import ingest
from chatui.models import Conversation, Event

User = get_user_model()
HOSTILE = "<script>alert(1)</script>"
SECRET = "sk-live-0123456789abcdefghijklmnop"


def test_a3_summary_says_what_each_event_is():
    started = {"tool_call_id": "c", "tool_name": "read_file", "args": {"path": "a.py"}}
    assert event_summary("agent.tool.started", started) == "read_file(path=a.py)"
    failed = {"tool_call_id": "c", "tool_name": "t", "error": "boom\nline 2"}
    assert event_summary("agent.tool.completed", failed) == "t failed: boom line 2"
    status = {"status": "failed", "error_message": "HTTP 504"}
    assert event_summary("agent.status", status) == "failed: HTTP 504"
    decision = {"tool_call_id": "c", "decision": "denied", "decided_by": "al", "note": "no"}
    assert event_summary("tool.approval", decision) == "denied by al: no"
    step = {"content": "Let me look.", "tool_calls": [{"id": "1", "name": "ls"}], "tokens": 12}
    assert event_summary("agent.step.completed", step) == "Let me look. → calls ls · 12 tokens"
    # A dialect's event: its fields, compactly.
    agui = {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "x"}
    assert event_summary("agui.TOOL_CALL_START", agui) == '{"toolCallId":"c","toolCallName":"x"}'


def test_a3_summary_masks_secrets_before_it_cuts_and_stays_one_line():
    line = event_summary(
        "agent.tool.started",
        {"tool_call_id": "c", "tool_name": "deploy", "args": {"api_key": SECRET, "n": "x" * 500}},
    )
    assert SECRET not in line and "mnop" in line  # masked to its last 4
    assert len(line) <= SUMMARY_CHARS and "\n" not in line
    delta = event_summary("agent.message.delta", {"message_id": "m", "delta": f"key {SECRET}"})
    assert SECRET not in delta


def test_a3_summary_is_plain_text_of_hostile_input():
    """The summary is text; the admin escapes it (below)."""
    assert event_summary("user.message", {"content": HOSTILE}) == HOSTILE
    assert event_summary("agent.tool.started", {"tool_call_id": "c", "tool_name": HOSTILE}) == (
        f"{HOSTILE}()"
    )
    assert event_summary("odd.type", ["not", "an", "object"]) == '["not","an","object"]'


@pytest.fixture
def auditor_client(db) -> Client:
    person = User.objects.create_user("audra", password="audra-password-1", is_staff=True)
    person.groups.add(Group.objects.get(name="auditor"))
    client = Client()
    client.force_login(person)
    return client


@pytest.fixture
def logged(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="Logged")
    ingest(
        conversation,
        [
            {"type": "agent.status", "run_id": "r1", "status": "running",
             "timestamp": "2026-03-05T10:00:00.000Z"},
            {"type": "agent.tool.started", "run_id": "r1", "tool_call_id": "c1",
             "tool_name": HOSTILE, "timestamp": "2026-03-05T10:00:00.125Z"},
            {"type": "agent.tool.completed", "run_id": "r1", "tool_call_id": "c1",
             "result": "ok", "timestamp": "2026-03-05T10:00:01.250Z"},
            {"type": "RUN_STARTED", "threadId": "t", "runId": "g1"},
        ],
    )  # fmt: skip
    return conversation


def rows(html: str) -> list[str]:
    body = html[html.index('<table id="result_list"') :]
    return re.findall(r"<tr>(.*?)</tr>", body[body.index("<tbody>") :], re.S)


def test_a3_events_list_shows_each_events_own_time_and_offset(auditor_client, logged):
    html = auditor_client.get(f"/admin/chatui/event/?conversation={logged.pk}").content.decode()
    listed = rows(html)
    assert len(listed) == 4
    times = [re.search(r"<time [^>]*>([^<]+)</time>", row).group(1) for row in listed[:3]]
    assert times == [
        "2026-03-05 10:00:00.000",
        "2026-03-05 10:00:00.125",
        "2026-03-05 10:00:01.250",
    ]
    offsets = [re.search(r"data-run-offset>([^<]+)<", row).group(1) for row in listed[:3]]
    assert offsets == ["+0 ms in run", "+125 ms in run", "+1.2 s in run"]
    assert 'title="2026-03-05T10:00:00.125+00:00"' in listed[1]  # A2: ISO on hover


def test_a3_each_event_links_to_the_transcript_as_of_it(auditor_client, logged):
    html = auditor_client.get(f"/admin/chatui/event/?conversation={logged.pk}").content.decode()
    links = re.findall(r'href="([^"]+)" data-as-of-event', html)
    assert links == [f"/c/{logged.pk}/?at={seq}" for seq in (1, 2, 3, 4)]
    agui_event = Event.objects.get(conversation=logged, type="agui.RUN_STARTED")
    state_links = re.findall(r'href="([^"]+)" data-agui-state', html)
    assert state_links == [f"/admin/chatui/event/{agui_event.pk}/change/"]
    # The transcript as of an event answers for the auditor.
    assert auditor_client.get(links[1]).status_code == 200


def test_a3_events_list_escapes_hostile_text(auditor_client, logged):
    html = auditor_client.get(f"/admin/chatui/event/?conversation={logged.pk}").content.decode()
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;()" in html


def test_a3_one_conversations_events_have_no_conversation_column(auditor_client, logged):
    scoped = auditor_client.get(f"/admin/chatui/event/?conversation={logged.pk}")
    assert "column-conversation_shown" not in scoped.content.decode()
    everyone = auditor_client.get("/admin/chatui/event/")
    assert "column-conversation_shown" in everyone.content.decode()
