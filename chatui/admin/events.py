"""The event log, read-only: never added, changed or deleted from the admin. Holders of
chatui.erase_content may erase selected events' content (docs/auditing.md#erasing-content):
tombstones through `erase_content`, recorded in the log, the proof kept.

A3 (docs/rendering.md#a3): the list gives each event's seq, type, its own time to the
millisecond with its offset from its run's start (A2), a one-line summary, and a link
to the transcript as of it (`?at=seq`) and, for AG-UI events, to the agent's state as of
it; it fits 1280 px beside the filters (no ids in columns: they are on each event's
page and searchable)."""

from __future__ import annotations

from itertools import groupby

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Subquery
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from chatui.ingest.dialects import agui
from chatui.ingest.erasure import ERASE, MAX_REASON_CHARS, erase_content
from chatui.ingest.values import EventError
from chatui.models import Event, Run
from chatui.read.exporters import masked_event
from chatui.read.reveal import pretty_json, reveal_invisible
from chatui.secrets import mask_value

from .base import ConversationFilter, ConversationScopedAdmin, revealed
from .event_summary import event_summary
from .times import offset_between, time_element


@admin.register(Event)
class EventAdmin(ConversationScopedAdmin):
    list_display = (
        "seq",
        "type_shown",
        "conversation_shown",
        "time_shown",
        "summary_shown",
        "links_shown",
    )
    list_display_links = ("seq",)
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
        "timestamp_shown",
        "received_shown",
        "as_of_shown",
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

    def get_queryset(self, request):
        # A2: each event's offset from its run's start, in the same query (a subquery
        # per row of the page shown, not a join that filters could inflate).
        started = Run.objects.filter(
            conversation=OuterRef("conversation"), run_id=OuterRef("run_id")
        ).values("started_at")[:1]
        return super().get_queryset(request).annotate(run_started_at=Subquery(started))

    def get_list_display(self, request):
        """One conversation's events (the audit page's link) need no conversation column."""
        if request.GET.get(ConversationFilter.parameter_name):
            return tuple(name for name in self.list_display if name != "conversation_shown")
        return self.list_display

    @admin.display(description="type", ordering="type")
    def type_shown(self, obj):
        # A3: long types wrap at their dots ("agent.<wbr>tool.<wbr>completed"), never
        # inside a word.
        parts = format_html_join(
            mark_safe(".<wbr>"), "{}", ((part,) for part in obj.type.split("."))
        )
        return format_html('<code class="chatui-event-type">{}</code>', parts)

    @admin.display(description="time", ordering="timestamp")
    def time_shown(self, obj):
        """A2: its own time to the millisecond, "+1.234 s" into its run, and when chatui
        received it if that was a second or more apart (the runtime's clock, or a late
        delivery)."""
        parts = [time_element(obj.timestamp, millis=True)]
        started = getattr(obj, "run_started_at", None)
        if started is not None:
            parts.append(
                format_html(
                    '<span class="chatui-muted" data-run-offset>{} in run</span>',
                    offset_between(obj.timestamp, started),
                )
            )
        if abs((obj.received_at - obj.timestamp).total_seconds()) >= 1:
            parts.append(
                format_html(
                    '<span class="chatui-muted">received {}</span>',
                    time_element(obj.received_at, millis=True),
                )
            )
        return format_html_join(" ", "{}", ((part,) for part in parts))

    @admin.display(description="summary")
    def summary_shown(self, obj):
        return format_html(
            '<span class="chatui-event-summary">{}</span>',
            reveal_invisible(event_summary(obj.type, obj.payload)),
        )

    @admin.display(description="as of it")
    def links_shown(self, obj):
        """A3: the transcript as it stood after this event (docs/rendering.md#time-travel);
        for an AG-UI event, the agent's state then (this event's page)."""
        links = [
            format_html(
                '<a href="{}?at={}" data-as-of-event>transcript</a>',
                obj.conversation.get_absolute_url(),
                obj.seq,
            )
        ]
        if obj.type in agui.LOG_TYPES:
            links.append(
                format_html(
                    '<a href="{}" data-agui-state>state</a>',
                    reverse("admin:chatui_event_change", args=[obj.pk]),
                )
            )
        return format_html_join(" · ", "{}", ((link,) for link in links))

    @admin.display(description="timestamp")
    def timestamp_shown(self, obj):
        return time_element(obj.timestamp, millis=True)

    @admin.display(description="received at")
    def received_shown(self, obj):
        return time_element(obj.received_at, millis=True)

    @admin.display(description="as of this event")
    def as_of_shown(self, obj):
        return self.links_shown(obj)

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
