"""The one connection point between writers and live delivery (cf. Zulip's
`tornado/django_api.py`): ingest's on-commit `events_ingested` signal is received
here, the frame is rendered once, and it is sent to the conversation's group,
whose name the consumers join by; when the conversation's list row changed, the row
is rendered once too and sent to its owner's rows group (list page and rail).
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.dispatch import receiver
from django.template.loader import render_to_string

from . import listing, selectors
from .frames import change_frame
from .ingest import events_ingested
from .models import Conversation
from .projection import ChangeSet


def group_name(conversation_id) -> str:
    return f"conversation.{str(conversation_id).replace('-', '')}"


def rows_group(user_pk) -> str:
    """The group of a reader's list and rail sockets (their own conversations' rows)."""
    return f"rows.{user_pk}"


def row_changed(changes: ChangeSet) -> bool:
    """Did the ingest change what a list row shows? Its status and title (the
    conversation), its preview and counts (a message created or removed). Edits of a
    message in place (streaming deltas, progress) wait for the next such change, so
    a streaming answer costs no row query per token."""
    return bool(
        changes.conversation_changed or changes.created or changes.removed or changes.full_refresh
    )


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
            "streamed_text_only": frame.streamed_text_only,
        },
    )
    if row_changed(changes):
        send_row(conversation_id)


def send_row(conversation_id) -> None:
    """The conversation's list row, rendered once, to its owner's list and rail."""
    conversation = selectors.conversation_row(conversation_id)
    if conversation is None:
        return
    html = render_to_string(
        "chatui/_conversation_row.html", {"row": listing.present_row(conversation), "oob": True}
    )
    async_to_sync(get_channel_layer().group_send)(
        rows_group(conversation.owner_id), {"type": "list.row", "html": html}
    )
