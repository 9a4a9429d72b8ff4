"""The event log, read-only: never added, changed or deleted from the admin. Holders of
chatui.erase_content may erase selected events' content (docs/auditing.md#erasing-content):
tombstones through `erase_content`, recorded in the log, the proof kept."""

from __future__ import annotations

from itertools import groupby

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.utils.html import format_html

from chatui.ingest.dialects import agui
from chatui.ingest.erasure import ERASE, MAX_REASON_CHARS, erase_content
from chatui.ingest.values import EventError
from chatui.models import Event
from chatui.read.exporters import masked_event
from chatui.read.reveal import pretty_json
from chatui.secrets import mask_value

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
        "agui_state_shown",
    )

    actions = ("erase_selected",)

    def has_erase_content_permission(self, request) -> bool:
        return request.user.has_perm(ERASE)

    @admin.action(
        description="Erase the selected events' content (kept in the proof)…",
        permissions=["erase_content"],
    )
    def erase_selected(self, request, queryset):
        """A confirmation page asking why, then one erasure per conversation."""
        if not self.has_erase_content_permission(request):
            raise PermissionDenied
        rows = list(queryset.select_related("conversation").order_by("conversation_id", "seq"))
        reason = request.POST.get("reason")
        problem = ""
        if reason is not None and request.POST.get("confirmed"):
            try:
                for _, of_one in groupby(rows, key=lambda row: row.conversation_id):
                    events = list(of_one)
                    erasure = erase_content(
                        events[0].conversation, request.user, [row.seq for row in events], reason
                    )
                    self.message_user(
                        request,
                        f"Erased {len(erasure.erased)} event(s) of {events[0].conversation_id}; "
                        f"recorded as seq {erasure.seq}.",
                        messages.SUCCESS,
                    )
                return None
            except EventError as error:
                problem = error.message
        return TemplateResponse(
            request,
            "admin/chatui/erase_content.html",
            {
                **self.admin_site.each_context(request),
                "title": "Erase events' content",
                "rows": rows,
                "problem": problem,
                "reason": reason or "",
                "max_reason": MAX_REASON_CHARS,
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
                "opts": self.model._meta,
            },
        )

    tool_call_id_shown = revealed("tool_call_id", "tool call id")
    run_id_shown = revealed("run_id", "run id")
    event_id_shown = revealed("event_id", "event id")

    @admin.display(description="payload")
    def payload_shown(self, obj):
        return pretty_json(masked_event(obj.payload))

    @admin.display(description="AG-UI state as of this event")
    def agui_state_shown(self, obj):
        """docs/events.md#ag-ui: the agent's state then — its latest STATE_SNAPSHOT up to this
        event, with the STATE_DELTAs after it applied; secrets masked as in the payload."""
        if obj.type not in agui.LOG_TYPES:
            return "—"
        logged = Event.objects.filter(conversation_id=obj.conversation_id, seq__lte=obj.seq)
        snapshot = logged.filter(type="agui.STATE_SNAPSHOT").order_by("-seq").first()
        if snapshot is None:
            return "no STATE_SNAPSHOT yet"
        deltas = logged.filter(type="agui.STATE_DELTA", seq__gt=snapshot.seq).order_by("seq")
        state, problem = agui.state_after(
            snapshot.payload.get("snapshot"), [row.payload.get("delta") for row in deltas]
        )
        shown = pretty_json(mask_value(state))
        return format_html("{}<p>{}</p>", shown, problem) if problem else shown
