"""AG-UI captures (tests/fixtures/agui/) and what the tests read of a conversation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chatui.models import Conversation, Message, Run
from chatui.read.serializers import message_to_dict
from tests.support.fixtures import FIXTURES, load_fixture

AGUI = FIXTURES / "agui"


def capture(name: str) -> list[dict[str, Any]]:
    """A capture's events, one per JSONL line, exactly as the framework streamed them."""
    return load_fixture(f"agui/{name}.jsonl")


def sse_text(name: str) -> str:
    return (AGUI / f"{name}.sse").read_text()


def captures() -> list[str]:
    return sorted(path.stem for path in Path(AGUI).glob("*.jsonl"))


def transcript(conversation: Conversation) -> list[dict[str, Any]]:
    """The conversation's messages as the API gives them (ids, roles, content, metadata)."""
    rows = Message.objects.filter(conversation=conversation).order_by("position")
    return [message_to_dict(message) for message in rows]


def tools(conversation: Conversation) -> dict[str, Message]:
    rows = Message.objects.filter(conversation=conversation, role="tool")
    return {message.tool_call_id: message for message in rows}


def run_status(conversation: Conversation) -> list[tuple[str, str]]:
    return list(Run.objects.filter(conversation=conversation).values_list("run_id", "status"))


def comparable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages without what differs between two deliveries of one stream: the time an
    event without a `timestamp` (LangGraph sends none) was received."""
    return [{key: value for key, value in m.items() if key != "timestamp"} for m in messages]
