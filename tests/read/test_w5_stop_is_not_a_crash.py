"""W5 Stop is not a crash (docs/rendering.md#w5, docs/events.md#agent-status): a run a
person stops ends `cancelled` — "Stopped by you", muted, no red banner — its queued and
running tools become `cancelled` (muted, "cancelled", no Copy output), not errors, and the
list row says "Stopped". Every surface counts them apart from failures (W4). A run that
fails by itself keeps S2.

The built-in agents' Stop (the agui backend's included) is proved in tests/agents; here
the contract, the projection and every surface that shows a run's end.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from chatui.ingest import approvals
from chatui.ingest.service import ingest, reproject
from chatui.ingest.values import EventError
from chatui.models import Conversation, Message, Run
from chatui.read import listing, selectors
from chatui.read.serializers import message_to_dict

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def stopped_run(conversation: Conversation, *, status: str = "cancelled") -> None:
    """A run with one finished tool, one running (its name and args hostile), one queued,
    and a half-streamed answer — then ended with `status`."""
    ingest(
        conversation,
        [
            {"type": "user.message", "content": "work", "run_id": "r1"},
            {"type": "agent.status", "status": "running", "run_id": "r1"},
            {"type": "agent.step.completed", "content": "", "run_id": "r1",
             "tool_calls": [{"id": "c1", "name": "ls"}, {"id": "c2", "name": HOSTILE},
                            {"id": "c3", "name": "later"}]},
            {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "ls",
             "run_id": "r1"},
            {"type": "agent.tool.completed", "tool_call_id": "c1", "result": "a.txt",
             "run_id": "r1"},
            {"type": "agent.tool.started", "tool_call_id": "c2", "tool_name": HOSTILE,
             "args": {"cmd": HOSTILE}, "run_id": "r1"},
            {"type": "agent.tool.progress", "tool_call_id": "c2", "output": HOSTILE,
             "run_id": "r1"},
            {"type": "agent.message.delta", "message_id": "m1", "delta": "Half an ans",
             "run_id": "r1"},
            {"type": "agent.status", "status": status, "run_id": "r1",
             **({"error_message": "the model broke"} if status == "failed" else {})},
        ],
    )  # fmt: skip


def tool_statuses(conversation: Conversation) -> dict[str, str]:
    return dict(
        Message.objects.filter(conversation=conversation, role="tool").values_list(
            "tool_call_id", "tool_status"
        )
    )


def page(client: Client, conversation: Conversation) -> str:
    return client.get(conversation.get_absolute_url()).content.decode()


def entry_html(html: str, call_id: str) -> str:
    match = re.search(rf'<li [^>]*data-tool-call-id="{call_id}".*?</li>', html, re.S)
    assert match, call_id
    return match.group(0)


def test_w5_agent_status_cancelled_is_in_the_contract(conversation):
    ingest(conversation, {"type": "agent.status", "status": "cancelled", "run_id": "r1"})
    with pytest.raises(EventError) as refused:
        ingest(conversation, {"type": "agent.status", "status": "stopped", "run_id": "r1"})
    assert refused.value.field == "status" and "cancelled" in str(refused.value)


def test_w5_a_stopped_run_ends_cancelled_with_its_open_tools_cancelled(conversation):
    stopped_run(conversation)
    run = Run.objects.get(conversation=conversation, run_id="r1")
    assert (run.status, run.error_message) == ("cancelled", "")
    assert Conversation.objects.get(pk=conversation.pk).status == "cancelled"
    # The finished tool keeps its outcome; the running and the queued one never ran to
    # an end: cancelled, not errors, and no "no result recorded" (T2) either.
    assert tool_statuses(conversation) == {"c1": "success", "c2": "cancelled", "c3": "cancelled"}
    for entry in Message.objects.filter(conversation=conversation, tool_status="cancelled"):
        assert "no_result_recorded" not in entry.metadata
    # No red banner; one muted line that stays after S3; the streamed answer kept.
    statuses = Message.objects.filter(conversation=conversation, role="status")
    assert list(statuses.values_list("status_type", "content")) == [
        ("continuation", "Stopped by you")
    ]
    answer = Message.objects.get(conversation=conversation, message_id="m1")
    assert (answer.content, answer.is_final) == ("Half an ans", True)


def test_w5_a_cancelled_run_is_not_a_failure_in_the_counts(conversation):
    stopped_run(conversation)
    counted = Conversation.objects.get(pk=conversation.pk)
    assert (counted.tool_count, counted.failed_tool_count) == (3, 0)
    row = listing.present_row(selectors.conversation_row(conversation.pk))
    assert row.counts == "3 tools · 2 cancelled"  # W4: their own count


def test_w5_the_canonical_messages_say_cancelled(conversation):
    stopped_run(conversation)
    entry = message_to_dict(Message.objects.get(conversation=conversation, tool_call_id="c2"))
    assert entry["metadata"]["tool_status"] == "cancelled"


def test_w5_reprojection_gives_the_same_cancelled_run(conversation):
    stopped_run(conversation)
    before = (tool_statuses(conversation), list(Run.objects.values_list("status", flat=True)))
    reproject(conversation)
    after = (tool_statuses(conversation), list(Run.objects.values_list("status", flat=True)))
    assert (
        before == after == ({"c1": "success", "c2": "cancelled", "c3": "cancelled"}, ["cancelled"])
    )


def test_w5_a_stopped_run_renders_muted_cancelled_entries_and_no_banner(client, user, conversation):
    stopped_run(conversation)
    client.force_login(user)
    html = page(client, conversation)
    running = entry_html(html, "c2")
    assert 'data-status="cancelled"' in running
    assert "data-tool-cancelled>cancelled</span>" in running
    assert "data-copy-output" not in running  # nothing ran to an end: nothing to copy
    assert 'visually-hidden">failed' not in running and "icon--circle-x" not in running
    assert "data-tool-pending" not in running and "data-elapsed" not in running
    assert 'data-status="cancelled"' in entry_html(html, "c3")
    # Hostile names and output are escaped, never markup.
    assert HOSTILE not in html and "&lt;script&gt;" in html
    # The batch counts them apart and stays calm (not opened as a failure would be).
    assert "data-batch-cancelled>2 cancelled</span>" in html
    assert 'data-batch-error="false"' in html and "data-batch-failed" not in html
    assert "Stopped by you" in html
    assert "data-run-error" not in html and "status--error" not in html


def test_w5_the_list_row_says_stopped(client, user, conversation):
    conversation.title = HOSTILE
    conversation.save(update_fields=["title"])
    stopped_run(conversation)
    row = listing.present_row(selectors.conversation_row(conversation.pk))
    assert (row.status, row.status_label, row.badged) == ("cancelled", "Stopped", True)
    client.force_login(user)
    html = client.get("/").content.decode()
    assert 'data-run-status="cancelled"' in html
    assert 'class="badge badge--cancelled" data-status-badge>Stopped</span>' in html
    assert HOSTILE not in html


def test_w5_s2_a_run_that_fails_by_itself_keeps_its_red_banner(client, user, conversation):
    stopped_run(conversation, status="failed")
    assert Run.objects.get(conversation=conversation).status == "failed"
    # Its open tools are not cancelled: T2's "no result recorded", as before.
    assert tool_statuses(conversation)["c2"] == "running"
    errors = Message.objects.filter(conversation=conversation, status_type="error")
    assert list(errors.values_list("content", flat=True)) == ["the model broke"]
    row = listing.present_row(selectors.conversation_row(conversation.pk))
    assert (row.status, row.status_label) == ("failed", "Failed")


def test_w5_a_decision_after_a_stopped_run_runs_nothing(conversation, user):
    """An approval decided after its run was stopped: nothing will run it (T2)."""
    ingest(
        conversation,
        [
            {"type": "agent.status", "status": "running", "run_id": "r1"},
            {"type": "agent.tool.approval_requested", "tool_call_id": "a1",
             "tool_name": "rm", "run_id": "r1"},
            {"type": "agent.status", "status": "cancelled", "run_id": "r1"},
        ],
    )  # fmt: skip
    approvals.decide(conversation, "a1", "approved", user)
    entry = Message.objects.get(conversation=conversation, tool_call_id="a1")
    assert entry.metadata.get("no_result_recorded") is True
