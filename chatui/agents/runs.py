"""What the run driver (`runner`) and the run queue (`dispatch`) share: a run's spec,
database access from async code, and ending a run that no task here drives.

It sits below both so that `runner` can hand runs to `dispatch` in cluster mode
without either importing the other inside a function.
"""

from __future__ import annotations

import contextvars
import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import SyncToAsync
from django.db import close_old_connections

from chatui.ingest.service import EventError, ingest
from chatui.models import Conversation, ConversationStatus, Message, Role, Run, ToolStatus

from .base import Agent, tool_failed_event
from .registry import AGENTS, get_agent

STOPPED_BY_USER = "stopped by user"


def stopped_by_user(reason: str | None) -> bool:
    """W5: a run ended for this reason was stopped by a person (Stop): it ends
    `cancelled`, not failed."""
    return reason == STOPPED_BY_USER


# -- database access from async code -----------------------------------------------


def _fresh(func: Callable[..., Any]) -> Callable[..., Any]:
    """Run `func` in the worker thread with a usable connection (the worker never
    sees Django's request signals, which otherwise recycle connections)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        return func(*args, **kwargs)

    return wrapper


def db(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` as a coroutine function, run by the thread-sensitive worker.

    Each call runs in a fresh, empty context that is not copied back: ingest's
    broadcast uses `async_to_sync`, and when a Stop cancels a call half-way,
    asgiref would otherwise copy that call's (by then finished) executor into
    the run's context and the run's next database call would fail."""
    fresh = _fresh(func)

    @functools.wraps(func)
    async def call(*args: Any, **kwargs: Any) -> Any:
        worker = SyncToAsync(fresh, thread_sensitive=True, context=contextvars.Context())
        return await worker(*args, **kwargs)

    return call


def _ingest(conversation: Conversation, events: list[dict[str, Any]]) -> Any:
    return ingest(conversation, events)


ingest_async = db(_ingest)


def _closing_events(conversation_id: Any, run_id: str, reason: str) -> list[dict[str, Any]]:
    """What a failing run must still say so nothing of it looks alive afterwards:
    its half-streamed assistant messages are finalised with the text they have,
    and its queued or running tools end as errors with `reason` (newest first,
    so nested calls close before their parents)."""
    events: list[dict[str, Any]] = [
        {"type": "agent.step.completed", "message_id": message_id, "content": content}
        for message_id, content in Message.objects.filter(
            conversation_id=conversation_id, run_id=run_id, role=Role.ASSISTANT, is_final=False
        ).values_list("message_id", "content")
    ]
    events += [
        tool_failed_event(call_id, name, reason)
        for call_id, name in Message.objects.filter(
            conversation_id=conversation_id,
            run_id=run_id,
            role=Role.TOOL,
            tool_status__in=[ToolStatus.QUEUED, ToolStatus.RUNNING],
        )
        .exclude(tool_call_id="")
        .order_by("-position")
        .values_list("tool_call_id", "tool_name")
    ]
    return events


closing_events = db(_closing_events)


def _ending_events(conversation_id: Any, run_id: str, reason: str) -> list[dict[str, Any]]:
    """The events that end a run no agent ends itself: `cancelled` when a person
    stopped it (W5: its half-streamed answers keep their text, the projection makes its
    open tools `cancelled`), else what it left open closed and `failed` with `reason`."""
    if stopped_by_user(reason):
        closing = [
            event
            for event in _closing_events(conversation_id, run_id, reason)
            if event["type"] == "agent.step.completed"
        ]
        return [*closing, {"type": "agent.status", "status": "cancelled"}]
    closing = _closing_events(conversation_id, run_id, reason)
    return [*closing, {"type": "agent.status", "status": "failed", "error_message": reason}]


ending_events = db(_ending_events)


def _run_status(conversation_id: Any, run_id: str) -> str | None:
    return (
        Run.objects.filter(conversation_id=conversation_id, run_id=run_id)
        .values_list("status", flat=True)
        .first()
    )


run_status = db(_run_status)


# -- runs ------------------------------------------------------------------------------


def new_run_id() -> str:
    return "run_" + uuid.uuid4().hex[:16]


@dataclass
class RunSpec:
    agent: Agent
    user_text: str
    run_id: str
    #: Scripted runs (the showcase) post the user's message themselves.
    post_user_message: bool = False
    #: The factory options a run worker needs to build the same agent by name.
    agent_options: dict[str, Any] = field(default_factory=dict)
    #: A scripted run whose failure is the point (the showcase's S2): the runs after
    #: it still play. A Stop still ends them all.
    fails_on_purpose: bool = False

    def to_message(self) -> dict[str, Any]:
        """The spec as plain data for the run queue (the agent by its registry name)."""
        name = getattr(self.agent, "name", "")
        if AGENTS.get(name) is None:
            raise RuntimeError(f"agent {name!r} is not registered: run workers cannot build it")
        return {
            "agent": name,
            "agent_options": self.agent_options,
            "user_text": self.user_text,
            "run_id": self.run_id,
            "post_user_message": self.post_user_message,
            "fails_on_purpose": self.fails_on_purpose,
        }

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> RunSpec:
        options = dict(message.get("agent_options") or {})
        return cls(
            get_agent(message["agent"], **options),
            message["user_text"],
            message["run_id"],
            bool(message.get("post_user_message")),
            options,
            bool(message.get("fails_on_purpose")),
        )


def fail_run(run: Run, reason: str, *, tag: str = "stop") -> str | None:
    """End `run`, driven by no task of this process, as failed with `reason`,
    closing what it left open — or `cancelled` when the reason is a person's Stop (W5).
    Event ids are `{run_id}.{tag}.{n}`, so two processes ending the same run for the
    same cause store it once. Returns the run id, or None when the run had already
    ended."""
    closing = _ending_events(run.conversation_id, run.run_id, reason)
    events = [
        {**event, "run_id": run.run_id, "event_id": f"{run.run_id}.{tag}.{number}"}
        for number, event in enumerate(closing, start=1)
    ]
    try:
        ingest(run.conversation, events)
    except EventError:
        # Another process ended it at the same moment, with other closing events.
        if _run_status(run.conversation_id, run.run_id) == ConversationStatus.RUNNING:
            raise
        return None
    return run.run_id
