"""The event log, read-only: never added, changed or deleted from the admin."""

from __future__ import annotations

from django.contrib import admin

from chatui.models import Event
from chatui.read.exporters import masked_event
from chatui.read.reveal import pretty_json

from .base import ConversationFilter, ConversationScopedAdmin, revealed


@admin.register(Event)
class EventAdmin(ConversationScopedAdmin):
    list_display = (
        "seq",
        "type",
        "conversation_shown",
        "tool_call_id_shown",
        "run_id_shown",
        "event_id_shown",
        "timestamp",
        "received_at",
    )
    list_display_links = ("seq", "type")
    list_filter = (ConversationFilter, "type")
    search_fields = ("=event_id", "=run_id", "=tool_call_id", "type")
    search_help_text = "Exact event id, run id or tool call id; or part of the type."
    ordering = ("-received_at", "-seq")
    scoped_ordering = ("seq",)
    fields = (
        "conversation_shown",
        "seq",
        "type",
        "event_id_shown",
        "run_id_shown",
        "tool_call_id_shown",
        "timestamp",
        "received_at",
        "body_hash",
        "payload_shown",
    )

    tool_call_id_shown = revealed("tool_call_id", "tool call id")
    run_id_shown = revealed("run_id", "run id")
    event_id_shown = revealed("event_id", "event id")

    @admin.display(description="payload")
    def payload_shown(self, obj):
        return pretty_json(masked_event(obj.payload))
