"""A tool step's events (started, done, a status), each with its own timestamp."""

from __future__ import annotations

from typing import Any

RUN = "r"


def timed(events: list[dict]) -> list[dict]:
    """Every event with its own timestamp: the server's clock would differ per run."""
    return [
        {"timestamp": f"2026-11-02T11:{n // 60 % 60:02d}:{n % 60:02d}Z", **event}
        for n, event in enumerate(events)
    ]


def tool(call: str, name: str = "read_file", **fields: Any) -> dict:
    return {
        "type": "agent.tool.started",
        "run_id": RUN,
        "tool_call_id": call,
        "tool_name": name,
        **fields,
    }


def done(call: str, **fields: Any) -> dict:
    return {"type": "agent.tool.completed", "run_id": RUN, "tool_call_id": call, **fields}


def status(value: str, **fields: Any) -> dict:
    return {"type": "agent.status", "run_id": RUN, "status": value, **fields}
