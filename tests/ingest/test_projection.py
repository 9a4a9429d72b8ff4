"""docs/events.md#event-types, #canonical-messages: every event type's effect on messages, and the
tolerance cases."""

from __future__ import annotations

from chatui.ingest.service import ingest
from chatui.models import Message, Run
from chatui.read.serializers import message_to_dict


def messages(conversation) -> list[dict]:
    return [message_to_dict(m) for m in Message.objects.filter(conversation=conversation)]


def tool(conversation, call_id: str) -> Message:
    return Message.objects.get(conversation=conversation, tool_call_id=call_id)


def test_user_message_projects_with_given_or_generated_id(conversation, feed):
    feed(
        {"type": "user.message", "message_id": "u1", "content": "hi <b>there</b>"},
        {"type": "user.message", "content": "again"},
    )
    first, second = messages(conversation)
    assert first["id"] == "u1" and first["role"] == "user"
    assert first["content"] == "hi <b>there</b>"
    assert "metadata" not in first
    assert second["id"] == "msg_2"


def test_user_message_with_same_message_id_appears_once(conversation, feed):
    feed(
        {"type": "user.message", "message_id": "u1", "content": "hi", "event_id": "a"},
        {"type": "user.message", "message_id": "u1", "content": "hi", "event_id": "b"},
    )
    assert [m["id"] for m in messages(conversation)] == ["u1"]


def test_first_user_message_becomes_the_title(user):
    from chatui.models import Conversation

    conversation = Conversation.objects.create(owner=user)
    ingest(conversation, {"type": "user.message", "content": "  Find   the bug\nin parser.py "})
    conversation.refresh_from_db()
    assert conversation.title == "Find the bug in parser.py"


def test_deltas_stream_and_step_completed_replaces_text(conversation, feed):
    feed(
        {"type": "agent.message.delta", "message_id": "a1", "delta": "Hel"},
        {"type": "agent.message.delta", "message_id": "a1", "delta": "lo"},
    )
    assert messages(conversation)[0]["content"] == "Hello"
    feed(
        {
            "type": "agent.step.completed",
            "message_id": "a1",
            "content": "Hello, world.",
            "duration_ms": 1200,
            "tokens": 650,
        }
    )
    (message,) = messages(conversation)
    assert message["content"] == "Hello, world."
    assert message["metadata"] == {"duration_ms": 1200, "tokens": 650}


def test_delta_after_step_completed_is_ignored(conversation, feed):
    feed(
        {"type": "agent.step.completed", "message_id": "a1", "content": "Final."},
        {"type": "agent.message.delta", "message_id": "a1", "delta": " late"},
    )
    assert messages(conversation)[0]["content"] == "Final."


def test_step_completed_without_message_id_finalises_the_open_stream(conversation, feed):
    feed(
        {"type": "agent.message.delta", "message_id": "a1", "delta": "draft", "run_id": "r"},
        {"type": "agent.step.completed", "content": "done", "run_id": "r"},
    )
    assert [(m["id"], m["content"]) for m in messages(conversation)] == [("a1", "done")]


def test_step_completed_tool_calls_become_queued_tool_messages(conversation, feed):
    feed(
        {
            "type": "agent.step.completed",
            "message_id": "a1",
            "content": "",
            "tool_calls": [
                {"id": "c1", "name": "ls", "args": {"path": "."}},
                {"id": "c2", "name": "cat", "args_summary": "cat a.txt"},
            ],
        }
    )
    assistant, first, second = messages(conversation)
    assert assistant["metadata"]["tool_calls"][0] == {
        "id": "c1",
        "name": "ls",
        "args": {"path": "."},
    }
    assert first["id"] == "tool_c1" and first["role"] == "tool"
    assert first["content"] == ""
    assert first["metadata"]["tool_status"] == "queued"
    assert first["metadata"]["args"] == {"path": "."}
    assert second["metadata"]["args_summary"] == "cat a.txt"


def test_tool_started_turns_queued_into_running_in_place(conversation, feed):
    feed(
        {"type": "agent.step.completed", "content": "", "tool_calls": [{"id": "c1", "name": "ls"}]},
        {
            "type": "agent.tool.started",
            "tool_call_id": "c1",
            "tool_name": "ls",
            "args": {"path": "/"},
            "attempt": 2,
            "max_attempts": 3,
            "parent_tool_call_id": "p1",
        },
    )
    message = tool(conversation, "c1")
    assert message.tool_status == "running"
    assert message.metadata["args"] == {"path": "/"}
    assert (message.metadata["attempt"], message.metadata["max_attempts"]) == (2, 3)
    assert message.parent_tool_call_id == "p1"
    assert Message.objects.filter(conversation=conversation, role="tool").count() == 1


def test_queued_call_without_id_is_matched_by_tool_name(conversation, feed):
    feed(
        {
            "type": "agent.step.completed",
            "message_id": "a1",
            "content": "",
            "tool_calls": [{"name": "ls"}],
        },
        {"type": "agent.tool.started", "tool_call_id": "c9", "tool_name": "ls"},
    )
    (entry,) = Message.objects.filter(conversation=conversation, role="tool")
    assert entry.tool_call_id == "c9" and entry.tool_status == "running"


def test_tool_message_created_empty_while_running(conversation, feed):
    feed({"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "image_generation"})
    (message,) = messages(conversation)
    assert message["content"] == ""
    assert message["metadata"]["tool_status"] == "running"


def test_tool_completed_success_and_error(conversation, feed):
    feed(
        {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "ls"},
        {
            "type": "agent.tool.completed",
            "tool_call_id": "c1",
            "result": ["a", "b"],
            "duration_ms": 250,
        },
        {"type": "agent.tool.started", "tool_call_id": "c2", "tool_name": "rm"},
        {"type": "agent.tool.completed", "tool_call_id": "c2", "error": "permission denied"},
    )
    ok, failed = messages(conversation)
    assert ok["content"] == '["a","b"]'
    assert ok["metadata"]["tool_result"] == ["a", "b"]
    assert ok["metadata"]["tool_duration_ms"] == 250
    assert ok["metadata"]["tool_status"] == "success"
    assert failed["content"] == "permission denied"
    assert failed["metadata"]["tool_error"] == "permission denied"
    assert failed["metadata"]["tool_status"] == "error"


def test_tool_execution_result_details_are_kept(conversation, feed):
    feed(
        {
            "type": "agent.tool.completed",
            "tool_call_id": "c1",
            "tool_name": "read_file",
            "result": {"text": "line 1", "details": {"kind": "file", "path": "a.txt"}},
        }
    )
    (message,) = messages(conversation)
    assert message["content"] == "line 1"
    assert message["metadata"]["details"] == {"kind": "file", "path": "a.txt"}
    assert message["metadata"]["tool_result"] == {
        "text": "line 1",
        "details": {"kind": "file", "path": "a.txt"},
    }


def test_completed_without_started_creates_the_tool_message(conversation, feed):
    feed({"type": "agent.tool.completed", "tool_call_id": "c1", "tool_name": "ls", "result": "x"})
    (message,) = messages(conversation)
    assert (message["id"], message["metadata"]["tool_status"]) == ("tool_c1", "success")


def test_late_started_for_finished_tool_changes_nothing(conversation, feed):
    feed({"type": "agent.tool.completed", "tool_call_id": "c1", "tool_name": "ls", "result": "x"})
    before = messages(conversation)
    feed(
        {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "other", "args": {"x": 1}}
    )
    assert messages(conversation) == before


def test_progress_for_unknown_tool_is_applied_when_the_tool_appears(conversation, feed):
    feed(
        {
            "type": "agent.tool.progress",
            "tool_call_id": "c1",
            "progress": 0.25,
            "output": "line 1\n",
            "message": "→ warming up",
        }
    )
    assert messages(conversation) == []
    feed({"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "build"})
    message = tool(conversation, "c1")
    assert message.metadata["progress"] == 0.25
    assert message.metadata["output"] == "line 1\n"
    assert message.metadata["progress_message"] == "→ warming up"


def test_progress_updates_a_running_tool(conversation, feed):
    feed(
        {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "build"},
        {"type": "agent.tool.progress", "tool_call_id": "c1", "progress": 0.5, "output": "a\n"},
        {"type": "agent.tool.progress", "tool_call_id": "c1", "progress": 0.75, "output": "b\n"},
    )
    message = tool(conversation, "c1")
    assert message.metadata["progress"] == 0.75
    assert message.metadata["output"] == "a\nb\n"


def test_continuation_status_message(conversation, feed):
    feed(
        {
            "type": "agent.continuation",
            "should_continue": False,
            "stop_reason": "steps_limit",
            "resolved_by": "StepsLimit",
        }
    )
    (message,) = messages(conversation)
    assert message["role"] == "status"
    assert message["content"] == "Agent stopped: steps_limit"
    assert message["metadata"] == {
        "continuation": {
            "should_continue": False,
            "stop_reason": "steps_limit",
            "resolved_by": "StepsLimit",
        },
        "status_type": "continuation",
    }


def test_status_thinking_info_and_failed_messages(conversation, feed):
    feed(
        {"type": "agent.status", "status": "thinking", "message": "Pondering"},
        {"type": "agent.status", "status": "info", "message": "Using cache"},
        {"type": "agent.status", "status": "failed", "error_message": "model overloaded"},
    )
    # failed reconciles: the ephemeral thinking/info lines go, the error stays (S3).
    (error,) = messages(conversation)
    assert error["content"] == "model overloaded"
    assert error["metadata"]["status_type"] == "error"


def test_s3_completed_removes_ephemeral_statuses_keeps_errors_and_continuations(conversation, feed):
    feed(
        {"type": "agent.status", "status": "thinking", "run_id": "r1"},
        {"type": "agent.status", "status": "info", "message": "fyi", "run_id": "r1"},
        {
            "type": "agent.continuation",
            "should_continue": False,
            "stop_reason": "steps_limit",
            "resolved_by": "Model",
            "run_id": "r1",
        },
        {
            "type": "agent.tool.completed",
            "tool_call_id": "c1",
            "tool_name": "x",
            "error": "boom",
            "run_id": "r1",
        },
    )
    assert len(messages(conversation)) == 4
    feed({"type": "agent.status", "status": "completed", "run_id": "r1"})
    kinds = [(m["role"], m.get("metadata", {}).get("status_type")) for m in messages(conversation)]
    assert kinds == [("status", "continuation"), ("tool", None)]


def test_run_status_follows_latest_run(conversation, feed):
    feed({"type": "agent.status", "status": "running", "run_id": "r1"})
    conversation.refresh_from_db()
    assert conversation.status == "running"
    feed(
        {"type": "agent.status", "status": "running", "run_id": "r2"},
        {"type": "agent.status", "status": "failed", "run_id": "r1", "error_message": "x"},
    )
    conversation.refresh_from_db()
    assert conversation.status == "running"  # r2 is the latest run
    feed({"type": "agent.status", "status": "completed", "run_id": "r2"})
    conversation.refresh_from_db()
    assert conversation.status == "completed"
    assert dict(Run.objects.values_list("run_id", "status")) == {"r1": "failed", "r2": "completed"}


def test_timestamps_come_from_events_or_receipt(conversation, feed):
    feed({"type": "user.message", "content": "x", "timestamp": "2026-01-16T10:05:00Z"})
    assert messages(conversation)[0]["timestamp"] == "2026-01-16T10:05:00Z"


def test_a_step_completed_twice_queues_its_id_less_tool_calls_once(conversation):
    """Found by the API fuzz test: completing a step again (its message_id known)
    queued its tool calls without ids a second time under the same message id (500)."""
    step = {
        "type": "agent.step.completed",
        "message_id": "a1",
        "content": "",
        "tool_calls": [{"name": "search"}],
    }
    ingest(conversation, [step, {**step, "run_id": "r1"}])
    queued = conversation.messages.filter(role="tool")
    assert list(queued.values_list("message_id", "tool_status")) == [("tool_a1_0", "queued")]
