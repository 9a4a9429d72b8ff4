"""docs/PERFORMANCE.md#p2 must not change what is stored: one session's events give the same
messages, runs and conversation row whether they come one per request, in small
batches or all in one, and a re-projection from the log gives them again.

The session covers what the projector answers from its batch caches instead of the
database: run ends (S3 reconciliation, T2 unanswered tools, streams ended), runs that
overlap, progress logged before its tool, calls queued without an id, approvals
decided after their run ended, and events without a run.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chatui.ingest.service import ingest, reproject
from chatui.models import Conversation, Message, Run

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _run_one(run: str) -> list[dict[str, Any]]:
    calls = [
        {"id": f"{run}-t1", "name": "read_file", "args": {"path": "a.py"}},
        {"id": f"{run}-t2", "name": "run_cmd", "args": {"cmd": "make"}},
    ]
    return [
        {"type": "user.message", "run_id": run, "content": "Check the parser, please."},
        {"type": "agent.status", "run_id": run, "status": "running"},
        {"type": "agent.status", "run_id": run, "status": "thinking"},
        *[
            {"type": "agent.message.delta", "run_id": run, "message_id": f"{run}-a1", "delta": d}
            for d in ("Let ", "me ", "look.")
        ],
        {"type": "agent.step.completed", "run_id": run, "message_id": f"{run}-a1",
         "content": "Let me look.", "tool_calls": calls, "tokens": 12},
        # Progress logged before its tool exists: applied when the tool starts.
        {"type": "agent.tool.progress", "run_id": run, "tool_call_id": f"{run}-t3",
         "output": "early line\n", "progress": 0.1},
        {"type": "agent.tool.started", "run_id": run, "tool_call_id": f"{run}-t1",
         "tool_name": "read_file", "args": {"path": "a.py"}},
        {"type": "agent.tool.progress", "run_id": run, "tool_call_id": f"{run}-t1",
         "output": "reading\n", "progress": 0.5},
        {"type": "agent.tool.completed", "run_id": run, "tool_call_id": f"{run}-t1",
         "result": "42 lines", "duration_ms": 20},
        {"type": "agent.tool.started", "run_id": run, "tool_call_id": f"{run}-t3",
         "tool_name": "grep"},
        {"type": "agent.tool.completed", "run_id": run, "tool_call_id": f"{run}-t3",
         "error": "exit code 2"},
        # t2 starts and never ends; a2 streams and never completes: the run's end
        # marks the one "no result recorded" and makes the other final.
        {"type": "agent.tool.started", "run_id": run, "tool_call_id": f"{run}-t2",
         "tool_name": "run_cmd"},
        {"type": "agent.status", "run_id": run, "status": "info", "message": "halfway"},
        {"type": "agent.message.delta", "run_id": run, "message_id": f"{run}-a2",
         "delta": "Still checking"},
        {"type": "agent.status", "run_id": run, "status": "completed"},
    ]  # fmt: skip


def _run_failing(run: str) -> list[dict[str, Any]]:
    calls = [
        {"name": "grep", "args": {"q": "x"}},  # queued without an id, claimed by name
        {"id": f"{run}-t6", "name": "deploy"},
    ]
    return [
        {"type": "user.message", "run_id": run, "content": "Now deploy it."},
        {"type": "agent.status", "run_id": run, "status": "running"},
        {"type": "agent.status", "run_id": run, "status": "thinking"},
        {"type": "agent.step.completed", "run_id": run, "message_id": f"{run}-a1",
         "content": "Deploying.", "tool_calls": calls},
        {"type": "agent.tool.started", "run_id": run, "tool_call_id": f"{run}-t5",
         "tool_name": "grep"},
        {"type": "agent.tool.completed", "run_id": run, "tool_call_id": f"{run}-t5",
         "result": "no match"},
        {"type": "agent.tool.approval_requested", "run_id": run, "tool_call_id": f"{run}-t6",
         "tool_name": "deploy", "reason": "production"},
        {"type": "agent.tool.approval_requested", "run_id": run, "tool_call_id": f"{run}-t7",
         "tool_name": "rollback"},
        {"type": "tool.approval", "run_id": run, "tool_call_id": f"{run}-t6",
         "decision": "denied", "decided_by": "alice"},
        {"type": "agent.status", "run_id": run, "status": "failed",
         "error_message": "deploy refused"},
        # Approved after its run ended: nothing will run it.
        {"type": "tool.approval", "run_id": run, "tool_call_id": f"{run}-t7",
         "decision": "approved", "decided_by": "alice"},
    ]  # fmt: skip


def _overlapping_runs() -> list[dict[str, Any]]:
    return [
        {"type": "agent.status", "run_id": "old", "status": "running"},
        {"type": "agent.status", "run_id": "new", "status": "running"},
        {"type": "agent.status", "run_id": "old", "status": "thinking"},
        {"type": "agent.status", "run_id": "new", "status": "thinking"},
        # An older run ending leaves the newer run's status (and the conversation's).
        {"type": "agent.status", "run_id": "old", "status": "completed"},
        {"type": "agent.message.delta", "run_id": "new", "message_id": "new-a", "delta": "{"},
        {"type": "agent.status", "run_id": "old", "status": "running"},
        {"type": "agent.status", "run_id": "new", "status": "completed"},
        # The latest run going again is running again.
        {"type": "agent.status", "run_id": "new", "status": "running"},
    ]  # fmt: skip


def _runless() -> list[dict[str, Any]]:
    return [
        {"type": "agent.status", "status": "thinking"},
        {"type": "agent.message.delta", "message_id": "loose", "delta": "Loose text"},
        {"type": "agent.continuation", "should_continue": True, "stop_reason": "more",
         "resolved_by": "policy"},
        {"type": "agent.status", "status": "completed"},
    ]  # fmt: skip


def session() -> list[dict[str, Any]]:
    events = [
        *_run_one("r1"),
        *_run_failing("r2"),
        *_run_one("r3"),
        *_overlapping_runs(),
        *_runless(),
        *_run_one("r4"),
    ]
    # Timestamps from the events, not the server's clock: the copies are comparable.
    for n, event in enumerate(events):
        event["timestamp"] = (START + timedelta(seconds=n)).isoformat()
        event["event_id"] = f"e{n}"
    return events


MESSAGE_FIELDS = [
    "message_id", "role", "content", "timestamp", "metadata", "position", "run_id",
    "tool_call_id", "tool_name", "tool_status", "parent_tool_call_id", "status_type",
    "is_final", "updated_seq",
]  # fmt: skip
RUN_FIELDS = ["run_id", "status", "started_at", "ended_at", "error_message", "started_seq"]


def stored(conversation: Conversation) -> dict[str, Any]:
    """Everything the projection wrote, without primary keys and the server's clock."""
    conversation.refresh_from_db()
    messages = Message.objects.filter(conversation=conversation).order_by("position")
    for message in messages:
        # The approval deadline is reckoned from when the server received the request.
        message.metadata.pop("approval", {}).clear()
    return {
        "messages": [
            {name: getattr(m, name) for name in MESSAGE_FIELDS}
            | {"approval": "approval" in m.metadata}
            for m in messages
        ],
        "runs": list(Run.objects.filter(conversation=conversation).values(*RUN_FIELDS)),
        "conversation": {
            name: getattr(conversation, name)
            for name in ("title", "status", "last_seq", "tool_count", "failed_tool_count")
        },
    }


def ingested_in_batches(user, size: int) -> Conversation:
    conversation = Conversation.objects.create(owner=user)
    events = session()
    for start in range(0, len(events), size):
        ingest(conversation, events[start : start + size])
    return conversation


@pytest.fixture
def one_by_one(user) -> dict[str, Any]:
    return stored(ingested_in_batches(user, 1))


@pytest.mark.parametrize("size", [2, 7, 16, 100])
def test_p2_a_batch_stores_what_the_same_events_one_by_one_store(user, one_by_one, size):
    assert stored(ingested_in_batches(user, size)) == one_by_one


def test_p2_the_session_exercises_what_it_means_to(one_by_one):
    """The comparison above is only as good as the session: it reaches each case."""
    messages = {m["message_id"]: m for m in one_by_one["messages"]}
    assert messages["tool_r1-t2"]["metadata"]["no_result_recorded"] is True
    assert messages["r1-a2"]["is_final"] is True
    assert messages["tool_r1-t3"]["metadata"]["output"] == "early line\n"
    assert messages["tool_r2-a1_0"]["tool_call_id"] == "r2-t5"  # claimed by name
    assert messages["tool_r2-t7"]["metadata"]["no_result_recorded"] is True
    assert messages["tool_r2-t6"]["tool_status"] == "denied"
    assert not [m for m in one_by_one["messages"] if m["status_type"] in ("thinking", "info")]
    runs = {run["run_id"]: run for run in one_by_one["runs"]}
    assert runs["r2"]["status"] == "failed" and runs["r2"]["error_message"] == "deploy refused"
    assert runs["old"]["status"] == "completed"  # an older run's "running" changes nothing
    assert runs["new"]["status"] == "running"
    assert one_by_one["conversation"]["status"] == "completed"
    assert one_by_one["conversation"]["failed_tool_count"] >= 2


@pytest.mark.parametrize("size", [1, 100])
def test_p2_reprojecting_a_batched_conversation_gives_the_same_rows(user, size):
    conversation = ingested_in_batches(user, size)
    before = stored(conversation)
    reproject(conversation)
    assert stored(conversation) == before
