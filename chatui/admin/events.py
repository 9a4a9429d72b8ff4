"""The event log, read-only: never added, changed or deleted from the admin.

A3 (docs/rendering.md#a3): the list gives each event's seq, type, its own time to the
millisecond with its offset from its run's start (A2), a one-line summary, and a link
to the transcript as of it (`?at=seq`) and, for AG-UI events, to the agent's state as of
it; it fits 1280 px beside the filters (no ids in columns: they are on each event's
page and searchable)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import OuterRef, Subquery
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from chatui.ingest.dialects import agui
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
