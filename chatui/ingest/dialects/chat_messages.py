"""What the chat-message importers (OpenAI, Anthropic) share: the loop over a list of
role-tagged messages, tool call ids kept unique, and an assistant message becoming
one `agent.step.completed` with its tool calls and the events that follow it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .files import Builder, TranscriptError, require, source_time


def each_message(
    messages: list[Any],
) -> Iterator[tuple[int, str, dict[str, Any], str, datetime | None]]:
    """(index, where, message, role, time) of each message; a message that is not an
    object or has no role is refused, naming where it is."""
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise TranscriptError("a message must be a JSON object", where=where)
        yield index, where, message, require(message, "role", where), source_time(message, where)


class CallIds:
    """Source tool call ids → chatui ids, unique within the import."""

    def __init__(self, builder: Builder):
        self.builder = builder
        self.uses: Counter[str] = Counter()
        self.current: dict[str, tuple[str, str]] = {}  # source id -> (chatui id, name)

    def announce(self, source_id: str | None, name: str) -> str:
        if not source_id:
            call_id = self.builder.new_tool_call_id()
        else:
            self.uses[source_id] += 1
            uses = self.uses[source_id]
            call_id = source_id if uses == 1 else f"{source_id}~{uses}"
            self.current[source_id] = (call_id, name)
        return call_id

    def resolve(self, source_id: str) -> tuple[str, str | None]:
        if source_id in self.current:
            return self.current[source_id]
        return source_id, None

    def completed(self, source_id: str) -> dict[str, Any]:
        """The start of the `agent.tool.completed` answering `source_id`."""
        call_id, name = self.resolve(source_id)
        event: dict[str, Any] = {"type": "agent.tool.completed", "tool_call_id": call_id}
        if name:
            event["tool_name"] = name
        return event


@dataclass
class Step:
    """An assistant message being read: its tool calls and the events after it."""

    calls: CallIds
    index: int
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    after: list[dict[str, Any]] = field(default_factory=list)

    def call(
        self, source_id: Any, name: str, arguments: dict[str, Any], where: str, *, started: bool
    ) -> str:
        """Announce a call; `started`: its result comes later in the file, so it is also
        `agent.tool.started` at this message's time (else it stays queued)."""
        if source_id is not None and not isinstance(source_id, str):
            raise TranscriptError("'id' must be a string", where=where)
        call_id = self.calls.announce(source_id, name)
        self.tool_calls.append({"id": call_id, "name": name, **arguments})
        if started:
            self.after.append(
                {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": name}
                | arguments
            )
        return call_id

    def add_to(self, builder: Builder, text: str, where: str, at: Any, **fields: Any) -> None:
        """The step (skipped when it has neither text nor calls), then what follows it."""
        if not text and not self.tool_calls:
            builder.skip("empty assistant message")
            return
        step: dict[str, Any] = {
            "type": "agent.step.completed",
            "message_id": builder.message_id(self.index),
            "content": text,
        }
        if self.tool_calls:
            step["tool_calls"] = self.tool_calls
        builder.add(step | fields, where=where, at=at)
        for event in self.after:
            builder.add(event, where=where, at=at)
