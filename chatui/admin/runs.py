"""The projected runs, read-only."""

from __future__ import annotations

from django.contrib import admin

from chatui.models import Run
from chatui.read.reveal import reveal_invisible, revealed_block
from chatui.text import clip

from .base import LIST_TEXT_CHARS, ConversationFilter, ConversationScopedAdmin, revealed


@admin.register(Run)
class RunAdmin(ConversationScopedAdmin):
    list_display = (
        "run_id_shown",
        "conversation_shown",
        "status",
        "started_at",
        "ended_at",
        "error_excerpt",
    )
    list_filter = (ConversationFilter, "status")
    search_fields = ("=run_id", "error_message")
    ordering = ("-started_at",)
    scoped_ordering = ("started_seq",)
    fields = (
        "conversation_shown",
        "run_id_shown",
        "status",
        "started_at",
        "ended_at",
        "started_seq",
        "error_shown",
    )

    run_id_shown = revealed("run_id", "run id", ordering="run_id")

    @admin.display(description="error")
    def error_excerpt(self, obj):
        return reveal_invisible(clip(obj.error_message, LIST_TEXT_CHARS))

    @admin.display(description="error message")
    def error_shown(self, obj):
        return revealed_block(obj.error_message)
