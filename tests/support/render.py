"""Rendering every surface of a conversation (page, frames, admin, exports) to prove none
fails on what ingest stored."""

from __future__ import annotations

import json

from django.test import Client
from django.urls import reverse

from chatui.ingest.values import MAX_SEQ
from chatui.live import frames
from chatui.models import Conversation
from chatui.read.exporters import EXPORT_FORMATS, export_text


def render_everything(
    client: Client, conversation: Conversation, *, admin: bool = True
) -> dict[str, str]:
    """Every way a conversation is shown: page, fragments, the admin audit page, the
    three exports (parsed back as JSON) and the socket replay (full and piecemeal).
    `client` must be logged in as someone who may see the conversation (and the admin)."""
    conversation.refresh_from_db()
    pk = conversation.pk
    responses = {
        "page": client.get(f"/c/{pk}/"),
        "transcript": client.get(f"/c/{pk}/transcript"),
        "earlier": client.get(f"/c/{pk}/earlier", {"before": str(MAX_SEQ)}),
    }
    if admin:
        responses["admin"] = client.get(reverse("admin:chatui_conversation_change", args=[pk]))
    shown = {}
    for name, response in responses.items():
        assert response.status_code == 200, name
        shown[name] = response.content.decode()
    for format in EXPORT_FORMATS:
        text = export_text(conversation, format)
        # JSONL lines end at "\n" only: U+2028 or U+0085 inside a string are text.
        for line in filter(None, text.split("\n")) if format == "events" else [text]:
            json.loads(line)
        shown[format] = text
    for after in sorted({0, max(conversation.last_seq - 1, 0)}):
        frame = frames.replay_frame(pk, after)
        shown[f"replay {after}"] = frame.html if frame is not None else ""
    return shown
