"""docs/rendering.md#approvals in the admin: the "has approvals" filter and the decisions listed
with who and when on a conversation's page (`ConversationAdmin` lists both)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Exists, OuterRef
from django.utils.html import format_html, format_html_join

from chatui.models import Conversation, Event

from .filters import ExistsFilter

APPROVAL_TYPES = ("agent.tool.approval_requested", "tool.approval")


class HasApprovalsFilter(ExistsFilter):
    """Conversations where a runtime asked a person before running a tool."""

    title = "approvals"
    parameter_name = "has_approvals"
    labels = ("With approvals", "Without approvals")

    def exists(self) -> Exists:
        return Exists(
            Event.objects.filter(conversation=OuterRef("pk"), type="agent.tool.approval_requested")
        )


def decision_rows(conversation: Conversation) -> list[tuple[str, str, str, str, str]]:
    """(tool call id, decision, by, at, note) for each decision, in log order; requests
    still waiting are listed as "awaiting"."""
    events = Event.objects.filter(conversation=conversation, type__in=APPROVAL_TYPES)
    rows: dict[str, tuple[str, str, str, str, str]] = {}
    for event in events.order_by("seq"):
        payload = event.payload
        call = event.tool_call_id
        if event.type == "agent.tool.approval_requested":
            rows.setdefault(call, (call, "awaiting", "", "", ""))
        elif call not in rows or rows[call][1] == "awaiting":
            rows[call] = (
                call,
                payload.get("decision", ""),
                payload.get("decided_by", ""),
                payload.get("decided_at", "") or event.timestamp.isoformat(),
                payload.get("note", ""),
            )
    return list(rows.values())


def _describe(decision: str, who: str, at: str, note: str) -> str:
    if decision == "awaiting":
        return "awaiting a decision"
    return f"{decision} by {who or '—'} at {at or '—'}" + (f" — {note}" if note else "")


@admin.display(description="Tool approvals")
def approval_decisions(model_admin, conversation: Conversation) -> str:
    rows = decision_rows(conversation)
    if not rows:
        return "—"
    items = format_html_join(
        "",
        "<li data-approval-row><code>{}</code>: {}</li>",
        ((call, _describe(decision, who, at, note)) for call, decision, who, at, note in rows),
    )
    return format_html('<ul class="approval-decisions">{}</ul>', items)
