"""Built-in agents asking a person before a tool runs (docs/events.md#approvals).

The in-process counterpart of a runtime's long poll: ask with
`agent.tool.approval_requested`, then look at the decision every POLL_SECONDS until
there is one. The server expires the request after `timeout_s`, and each look expires
it when overdue, so the wait always ends.
"""

from __future__ import annotations

import asyncio
from typing import Any

from chatui.ingest import approvals

from .base import ToolCall
from .runner import db

POLL_SECONDS = 0.25


async def ask_approval(call: ToolCall, *, reason: str, timeout_s: float) -> approvals.Decision:
    """Ask for `call` and wait for the decision (approved, denied or expired)."""
    event: dict[str, Any] = {
        "type": "agent.tool.approval_requested",
        "tool_call_id": call.id,
        "tool_name": call.name,
        "args": call.args,
        "reason": reason,
        "timeout_s": timeout_s,
    }
    await call.ctx.emit(event)
    return await wait_for_decision(call.ctx.conversation_id, call.id)


async def wait_for_decision(conversation_id: Any, tool_call_id: str) -> approvals.Decision:
    look = db(approvals.current_decision)
    while (decision := await look(conversation_id, tool_call_id)) is None:
        await asyncio.sleep(POLL_SECONDS)
    return decision
