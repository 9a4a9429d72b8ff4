"""Event sequences shared by the write path's cost tests."""

from __future__ import annotations

from typing import Any


def run_events(run: str, *, steps: int = 3, end: bool = True) -> list[dict[str, Any]]:
    """A P2-like run (bench/common.EventStream): statuses, streamed text, `steps` steps of
    two tool calls each (started, progress, completed), and its end unless `end` is False."""
    events: list[dict[str, Any]] = [
        {"type": "user.message", "run_id": run, "content": f"Check {run}."},
        {"type": "agent.status", "run_id": run, "status": "running"},
    ]
    for step in range(steps):
        message_id = f"{run}-s{step}"
        calls = [
            {"id": f"{message_id}-t{n}", "name": "read_file", "args": {"path": "a.py"}}
            for n in range(2)
        ]
        events += [
            {"type": "agent.status", "run_id": run, "status": "thinking"},
            *[
                {"type": "agent.message.delta", "run_id": run, "message_id": message_id,
                 "delta": word}
                for word in ("Let ", "me ", "look.")
            ],
            {"type": "agent.step.completed", "run_id": run, "message_id": message_id,
             "content": "Let me look.", "tool_calls": calls},
        ]  # fmt: skip
        for call in calls:
            events += [
                {"type": "agent.tool.started", "run_id": run, "tool_call_id": call["id"],
                 "tool_name": "read_file"},
                {"type": "agent.tool.progress", "run_id": run, "tool_call_id": call["id"],
                 "output": "reading\n"},
                {"type": "agent.tool.completed", "run_id": run, "tool_call_id": call["id"],
                 "result": "ok"},
            ]  # fmt: skip
    if end:
        events.append({"type": "agent.status", "run_id": run, "status": "completed"})
    return events
