"""The projected messages, read-only; tool text and status lines masked (T3), and
searched through the page's masked full-text index, never by a secret's value."""

from __future__ import annotations

from django.contrib import admin

from chatui.models import Message
from chatui.read import search
from chatui.read.reveal import pretty_json, reveal_invisible, revealed_block
from chatui.text import clip, collapse_newlines

from .base import (
    LIST_TEXT_CHARS,
    ConversationFilter,
    ConversationScopedAdmin,
    masked_message,
    revealed,
)
from .times import timed


@admin.register(Message)
class MessageAdmin(ConversationScopedAdmin):
    list_display = (
        "position",
        "role",
        "conversation_shown",
        "tool_name_shown",
        "tool_status",
        "status_type",
        "content_excerpt",
        "timestamp_shown",
    )
    list_display_links = ("position", "role")
    list_filter = (ConversationFilter, "role", "tool_status", "status_type")
    # Searched through the index (get_search_results); listed so the box shows.
    search_fields = ("content", "tool_name", "=message_id", "=tool_call_id")
    search_help_text = "Message text or tool name; exact message or tool call id."
    ordering = ("-timestamp", "-position")
    scoped_ordering = ("position",)
    fields = (
        "conversation_shown",
        "message_id_shown",
        "role",
        "position",
        "run_id",
        "tool_call_id_shown",
        "tool_name_shown",
        "tool_status",
        "parent_tool_call_id",
        "status_type",
        "is_final",
        "updated_seq",
        "timestamp_shown",
        "content_shown",
        "metadata_shown",
    )

    timestamp_shown = timed("timestamp", "timestamp", millis=True)  # A2

    def get_search_results(self, request, queryset, search_term):
        """Through the full-text index, which holds masked text (T3): a `LIKE` over the
        stored content would find a message by its secret, letter by letter."""
        return search.filter_messages(queryset, search_term), False

    message_id_shown = revealed("message_id", "message id")
    tool_call_id_shown = revealed("tool_call_id", "tool call id")
    tool_name_shown = revealed("tool_name", "tool name", ordering="tool_name")

    @admin.display(description="content")
    def content_excerpt(self, obj):
        content = masked_message(obj).content
        return reveal_invisible(clip(collapse_newlines(content), LIST_TEXT_CHARS))

    @admin.display(description="content")
    def content_shown(self, obj):
        return revealed_block(masked_message(obj).content)

    @admin.display(description="metadata")
    def metadata_shown(self, obj):
        return pretty_json(masked_message(obj).metadata)
