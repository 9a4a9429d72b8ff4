"""A tool call's events (queued, started, progress) and its output as projected, for the
ingest and projection cost tests."""

from __future__ import annotations

from chatui.models import Conversation


def tool_output(conversation: Conversation, call_id: str) -> str:
    return conversation.messages.get(tool_call_id=call_id).metadata.get("output", "")


def progress(call_id: str, output: str) -> dict:
    return {"type": "agent.tool.progress", "tool_call_id": call_id, "output": output}


def started(call_id: str) -> dict:
    return {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": "sh"}


def queued(call_id: str) -> dict:
    """A step announcing the call before it starts (its entry is queued)."""
    return {
        "type": "agent.step.completed",
        "message_id": f"step-{call_id}",
        "content": "",
        "tool_calls": [{"id": call_id, "name": "sh"}],
    }
