"""The one connection point between writers and live delivery (cf. Zulip's
`tornado/django_api.py`): ingest's on-commit `events_ingested` signal is received
here, the frame is rendered once, and it is sent to the conversation's group,
whose name the consumers join by.
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.dispatch import receiver

from .frames import change_frame
from .ingest import events_ingested
from .models import Conversation
from .projection import ChangeSet


def group_name(conversation_id) -> str:
    return f"conversation.{str(conversation_id).replace('-', '')}"


@receiver(events_ingested, dispatch_uid="chatui.broadcast.broadcast")
def broadcast(
    sender,
    conversation: Conversation,
    conversation_id,
    first_seq: int,
    last_seq: int,
    changes: ChangeSet,
    **kwargs,
) -> None:
    """Render the frame once and hand it to every viewer's consumer."""
    frame = change_frame(conversation, first_seq, last_seq, changes)
    async_to_sync(get_channel_layer().group_send)(
        group_name(conversation_id),
        {
            "type": "transcript.frame",
            "first_seq": frame.first_seq,
            "last_seq": frame.last_seq,
            "html": frame.html,
        },
    )
