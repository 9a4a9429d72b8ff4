"""A giant tool batch's events, as the P3 case has them: a hidden step and a tool's start
and result per call."""

from __future__ import annotations


def call_events(
    first: int, last: int, *, failed: set[int] = frozenset(), running: set[int] = frozenset()
) -> list[dict]:
    """Each call as the P3 giant case has it: a step with tool_calls and no text (a
    hidden assistant message) and the tool's start and result: two messages a call."""
    events = []
    for n in range(first, last):
        call = f"call-{n}"
        events += [
            {
                "type": "agent.step.completed",
                "run_id": "r",
                "message_id": f"step-{n}",
                "content": "",
                "tool_calls": [{"id": call, "name": "read_file"}],
            },
            {
                "type": "agent.tool.started",
                "run_id": "r",
                "tool_call_id": call,
                "tool_name": "read_file",
            },
        ]
        if n in running:
            continue
        if n in failed:
            events.append(
                {
                    "type": "agent.tool.completed",
                    "run_id": "r",
                    "tool_call_id": call,
                    "error": "boom",
                }
            )
        else:
            events.append(
                {
                    "type": "agent.tool.completed",
                    "run_id": "r",
                    "tool_call_id": call,
                    "result": f"r{n}",
                }
            )
    return events
