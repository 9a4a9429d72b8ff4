"""The projected runs, read-only; a failed run's error line masked (T3) and searched
through the masked full-text index."""

from __future__ import annotations

from django.contrib import admin

from chatui.models import Run
from chatui.read import search
from chatui.read.reveal import reveal_invisible, revealed_block
from chatui.secrets import mask_text
from chatui.text import clip

from .base import LIST_TEXT_CHARS, ConversationFilter, ConversationScopedAdmin, revealed
from .times import time_element


@admin.register(Run)
class RunAdmin(ConversationScopedAdmin):
    list_display = (
        "run_id_shown",
        "conversation_shown",
        "status",
        "started_shown",
        "ended_shown",
        "error_excerpt",
    )
    list_filter = (ConversationFilter, "status")
    # Searched through the index (get_search_results); listed so the box shows.
    search_fields = ("=run_id", "error_message")
    search_help_text = "Exact run id, or words of the run's error."
    ordering = ("-started_at",)
    scoped_ordering = ("started_seq",)
    fields = (
        "conversation_shown",
        "run_id_shown",
        "status",
        "started_shown",
        "ended_shown",
        "started_seq",
        "error_shown",
    )

    run_id_shown = revealed("run_id", "run id", ordering="run_id")

    def get_search_results(self, request, queryset, search_term):
        """T3: by the run's masked error line in the index, never a `LIKE` over the
        stored `error_message`, which would find a run by its secret."""
        return search.filter_runs(queryset, search_term), False

    @admin.display(description="started", ordering="started_at")
    def started_shown(self, obj):
        return time_element(obj.started_at)  # A2: to the second, ISO on hover

    @admin.display(description="ended", ordering="ended_at")
    def ended_shown(self, obj):
        return time_element(obj.ended_at)

    @admin.display(description="error")
    def error_excerpt(self, obj):
        # Masked before it is clipped, so a secret is never cut in two and half-shown.
        return reveal_invisible(clip(mask_text(obj.error_message), LIST_TEXT_CHARS))

    @admin.display(description="error message")
    def error_shown(self, obj):
        return revealed_block(mask_text(obj.error_message))
