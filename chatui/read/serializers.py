"""Conversations and messages as JSON: the seed-000 output contract
(docs/events.md#canonical-messages)."""

from __future__ import annotations

from typing import Any

from chatui.ingest.chain import event_content
from chatui.ingest.dialects import agui
from chatui.models import Conversation, Event, Message
from chatui.text import isoformat


def message_to_dict(message: Message) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": message.message_id,
        "role": message.role,
        "content": message.content,
        "timestamp": isoformat(message.timestamp),
    }
    if message.metadata:
        data["metadata"] = message.metadata
    return data


def conversation_to_dict(conversation: Conversation) -> dict[str, Any]:
    return {
        "id": str(conversation.pk),
        "title": conversation.title,
        "status": conversation.status,
        "owner": conversation.owner.get_username(),
        "url": conversation.get_absolute_url(),
        "created_at": isoformat(conversation.created_at),
        "updated_at": isoformat(conversation.updated_at),
        "last_seq": conversation.last_seq,
    }


def event_to_dict(event: Event) -> dict[str, Any]:
    """An event as the events API serves it: what its content hash is of
    (docs/auditing.md#the-canonical-form)."""
    return event_content(event)


def event_to_input(event: Event) -> dict[str, Any]:
    """An event as a runtime would post it: re-ingesting gives the same messages."""
    if event.type in agui.LOG_TYPES:
        # docs/events.md#ag-ui: as the agent sent it, with its id and (AG-UI's epoch
        # milliseconds) the time chatui received it when it came without one.
        data = (
            {**event.payload, "event_id": event.event_id} if event.event_id else dict(event.payload)
        )
        data.setdefault("timestamp", agui.epoch_ms(event.timestamp))
        return data
    data: dict[str, Any] = {"type": event.type}
    if event.event_id:
        data["event_id"] = event.event_id
    if event.run_id:
        data["run_id"] = event.run_id
    data["timestamp"] = isoformat(event.timestamp)
    data.update(event.payload)
    return data
