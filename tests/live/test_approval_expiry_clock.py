"""Tool approvals expire at their deadline while a process is up, not when someone reads.

Found by the security probe (issue 28, finding 5): with the server up and nobody
reading, a request with `timeout_s=2` was still pending 12 s later — expiry was
recorded only by a reader (page, API, long poll) or a run worker's sweep, and the
events feed, a read path, did not expire at all. A runtime that asked and then read
the feed (rather than long polling) never learned of the expiry.

The live tests read the log with a separate `manage.py shell` (no chatui read path, so
nothing there expires a request) and compare when the expiry was recorded
(`received_at`) with the deadline it carries (its `timestamp`).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from chatui.ingest import approvals
from chatui.ingest.service import ingest
from chatui.models import Event
from tests.support.live import LiveServer

#: How late after its deadline an expiry may be recorded (the clock's own slack is
#: ~10 ms; the rest is a busy 2-core machine).
LATE_AT_MOST_SECONDS = 1.0


def ask(call_id: str, timeout_s: float) -> dict:
    return {
        "type": "agent.tool.approval_requested",
        "tool_call_id": call_id,
        "tool_name": "delete_file",
        "args": {"path": "notes/old.txt"},
        "timeout_s": timeout_s,
    }


def recorded_decisions(server: LiveServer, conversation_id: str) -> list[dict]:
    """The conversation's `tool.approval` events as stored, read by a process that is
    no reader of chatui's (it only selects rows), with when each was recorded."""
    script = (
        "import json; from chatui.models import Event;"
        "print(json.dumps([{'event_id': e.event_id, 'decision': e.payload['decision'],"
        " 'decided_by': e.payload.get('decided_by'), 'deadline': e.timestamp.isoformat(),"
        " 'recorded': e.received_at.isoformat()} for e in Event.objects.filter("
        f"conversation_id={conversation_id!r}, type='tool.approval').order_by('seq')]))"
    )
    return json.loads(server.manage("shell", "-c", script).strip().splitlines()[-1])


def lateness(decision: dict) -> float:
    recorded = datetime.fromisoformat(decision["recorded"])
    return (recorded - datetime.fromisoformat(decision["deadline"])).total_seconds()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with LiveServer(tmp_path_factory.mktemp("approval-clock")).serving() as live:
        yield live


def test_approval_expires_at_its_deadline_with_no_reader(server):
    conversation_id = server.new_conversation("nobody reads")
    server.post_events(conversation_id, ask("w1", timeout_s=2))
    time.sleep(2 + LATE_AT_MOST_SECONDS + 0.5)  # nobody reads meanwhile

    [expired] = recorded_decisions(server, conversation_id)
    assert (expired["decision"], expired["decided_by"]) == ("expired", "system")
    assert 0 <= lateness(expired) < LATE_AT_MOST_SECONDS, expired
    # Visible through the events feed, once (reading it records nothing more).
    with server.api() as api:
        feed = api.get(f"/conversations/{conversation_id}/events").json()["events"]
    decisions = [e for e in feed if e["type"] == "tool.approval"]
    assert [(e["event_id"], e["payload"]["decision"]) for e in decisions] == [
        (expired["event_id"], "expired")
    ]


def test_approval_asked_before_a_restart_expires_at_its_deadline(server):
    """A deadline the process did not see being set (asked before it started, or of
    another process in a cluster) is found when the process starts."""
    conversation_id = server.new_conversation("asked before a restart")
    # The deadline must fall after the restart: a loaded CI machine took 7.8 s for it.
    server.post_events(conversation_id, ask("w2", timeout_s=15))
    asked = time.monotonic()
    server.restart()
    assert time.monotonic() - asked < 14, "the restart took too long for this test"
    time.sleep(asked + 15 + LATE_AT_MOST_SECONDS + 0.5 - time.monotonic())  # nobody reads

    [expired] = recorded_decisions(server, conversation_id)
    assert (expired["decision"], expired["decided_by"]) == ("expired", "system")
    assert 0 <= lateness(expired) < LATE_AT_MOST_SECONDS, expired


def agui_interrupt(run_id: str, call_id: str, expires_at: datetime) -> list[dict]:
    """An AG-UI run, pushed as a runtime tees it, that ends asking about one tool call."""
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": "delete_file"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": '{"path": "old.txt"}'},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": run_id,
            "outcome": {
                "type": "interrupt",
                "interrupts": [
                    {
                        "id": f"i-{call_id}",
                        "reason": "tool_call",
                        "toolCallId": call_id,
                        "expiresAt": expires_at.isoformat(),
                    }
                ],
            },
        },
    ]


def test_sec13_an_agui_interrupt_expires_at_its_deadline_with_no_reader(server):
    """An AG-UI interrupt that became an approval request is timed by the same clock as
    a native request: expired by "system" at its `expiresAt`, with nobody reading."""
    conversation_id = server.new_conversation("an AG-UI interrupt nobody answers")
    deadline = timezone.now() + timedelta(seconds=3)
    server.post_events(conversation_id, agui_interrupt("r1", "a1", deadline))
    time.sleep(max(0.0, (deadline - timezone.now()).total_seconds()) + LATE_AT_MOST_SECONDS + 0.5)

    [expired] = recorded_decisions(server, conversation_id)
    assert (expired["decision"], expired["decided_by"]) == ("expired", "system")
    assert abs(datetime.fromisoformat(expired["deadline"]) - deadline) < timedelta(milliseconds=1)
    assert 0 <= lateness(expired) < LATE_AT_MOST_SECONDS, expired


def test_the_events_feed_expires_due_requests_before_it_answers(api, conversation):
    ingest(conversation, ask("c1", timeout_s=0))
    feed = api.get(f"/api/v1/conversations/{conversation.pk}/events").json()
    decisions = [e for e in feed["events"] if e["type"] == "tool.approval"]
    assert [(e["payload"]["decision"], e["payload"]["decided_by"]) for e in decisions] == [
        ("expired", "system")
    ]
    assert feed["last_seq"] == 2
    # Read again: the same one decision, no second expiry.
    again = api.get(f"/api/v1/conversations/{conversation.pk}/events", after="1").json()
    assert [e["type"] for e in again["events"]] == ["tool.approval"]
    assert Event.objects.filter(conversation=conversation, type="tool.approval").count() == 1
    assert approvals.expire_overdue(conversation, now=timezone.now()) == 0
