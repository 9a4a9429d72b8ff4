"""The audit page of one conversation (the admin change view's extra context): the
transcript with the page's own partials, the tool calls with their args and results
as pretty JSON (masked, T3), the runs, and links to the raw events."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from chatui.ingest import signing
from chatui.models import Conversation, Message
from chatui.read import presenters, selectors
from chatui.read.notes import by_target
from chatui.read.reveal import (
    SHOW_INVISIBLE,
    pretty_json,
    reveal_invisible,
    reveal_text,
    revealed_block,
)
from chatui.read.verify import verify, verify_since_held
from chatui.text import human_size
from chatui.web.note_views import note_context

from .base import VIEW_SECRETS, ConversationFilter, masked_message
from .timeline import entry_anchors, first_error_anchor, run_summaries

#: Messages of a conversation shown in its admin page (the latest ones; the
#: window never cuts a tool batch in two). Exports hold everything.
TRANSCRIPT_LIMIT = 1000


def audit_context(request: HttpRequest, conversation: Conversation) -> dict[str, Any]:
    window, has_earlier = selectors.transcript_window(conversation, limit=TRANSCRIPT_LIMIT)
    items = presenters.present_transcript(window, display=SHOW_INVISIBLE)
    scope = f"?{ConversationFilter.parameter_name}={conversation.pk}"
    user = request.user
    # A4 (docs/sharing.md#notes): the notes at the top, the same partial as the page's,
    # and each tool call's notes beside it in the tool calls' table.
    notes_form_url = reverse("admin:chatui_conversation_notes", args=[conversation.pk])
    notes = note_context(request, conversation, notes_form_url, shown=reveal_text)
    noted = by_target(notes.get("notes", []))
    tool_calls = []
    for message in window:
        if message.role == "tool":
            row = tool_call_row(message, user)
            row["notes"] = noted.get(("tool_call_id", message.tool_call_id), [])
            tool_calls.append(row)
    return {
        **notes,
        "subtitle": reveal_text(str(conversation)),
        "audit_title": reveal_invisible(str(conversation)),
        "audit_items": items,
        "audit_has_earlier": has_earlier,
        "audit_shown": len(window),
        "audit_total": getattr(conversation, "n_messages", len(window)),
        "audit_summary": run_summaries(conversation, window, entry_anchors(items)),
        # A4: the log's verification verdict first, with the key it is checked by
        # (docs/auditing.md#checking-a-log).
        # Checked from where it last held in this process, unless asked for the whole
        # log (`?verify=all`: what verify_log checks).
        "audit_verdict": (
            verify(conversation)
            if request.GET.get("verify") == "all"
            else verify_since_held(conversation)
        ),
        "audit_verified_whole": request.GET.get("verify") == "all",
        "audit_verifier_key": signing.verifier_key(),
        "audit_first_error": first_error_anchor(window),
        "audit_tool_calls": tool_calls,
        "audit_events_url": (
            reverse("admin:chatui_event_changelist") + scope
            if user.has_perm("chatui.view_event")
            else None
        ),
        "audit_messages_url": (
            reverse("admin:chatui_message_changelist") + scope
            if user.has_perm("chatui.view_message")
            else None
        ),
        "audit_runs_url": (
            reverse("admin:chatui_run_changelist") + scope
            if user.has_perm("chatui.view_run")
            else None
        ),
    }


def tool_call_row(message: Message, user) -> dict[str, Any]:
    """The audit row of one tool call, its tool text masked (T3); holders of
    chatui.view_secrets get the form that reveals it (and records that they did)."""
    reveal_url = (
        reverse("admin:chatui_conversation_reveal", args=[message.conversation_id, message.pk])
        if user.has_perm(VIEW_SECRETS)
        else None
    )
    message = masked_message(message)
    meta = message.metadata or {}
    return {
        "pk": message.pk,
        "reveal_url": reveal_url,
        "url": (
            reverse("admin:chatui_message_change", args=[message.pk])
            if user.has_perm("chatui.view_message")
            else None
        ),
        "tool_name": reveal_invisible(message.tool_name),
        "tool_call_id": reveal_invisible(message.tool_call_id),
        "parent_tool_call_id": reveal_invisible(message.parent_tool_call_id),
        "status": message.tool_status,
        "duration": presenters.duration_text(meta.get("tool_duration_ms")),
        "args_summary": (
            reveal_invisible(meta["args_summary"]) if meta.get("args_summary") else None
        ),
        "args": _json_cell(message, meta["args"], "args") if "args" in meta else None,
        "result": (
            _json_cell(message, meta["tool_result"], "details") if "tool_result" in meta else None
        ),
        "error": revealed_block(meta["tool_error"]) if meta.get("tool_error") else None,
    }


def _json_cell(message: Message, value: Any, part: str) -> SafeString:
    """`pretty_json(value)`, or beyond the page's bound (`presenters.inline_chars`, issue
    28) its first lines and a link to the whole, which the page's own view serves
    (chatui.web.tool_text_views: the result is in the entry's Details), masked alike."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(text) <= presenters.inline_chars():
        return pretty_json(value)
    url = reverse("chatui:tool-text", args=[message.conversation_id, message.pk, part])
    return format_html(
        '<pre class="chatui-json" tabindex="0">{}</pre><a href="{}?invisible=1" '
        "data-audit-full-text>All of it ({})</a>",
        reveal_invisible(presenters.truncate_block(text)[0]),
        url,
        human_size(len(text.encode())),
    )
