"""docs/rendering.md#approvals in the admin: the "has approvals" filter and the decisions listed
with who and when on a conversation's page (`ConversationAdmin` lists both)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib import admin
from django.db.models import Exists, OuterRef
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from chatui.models import Conversation, Event
from chatui.read.reveal import reveal_invisible

from .filters import ExistsFilter
from .times import parse_moment, time_element

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


@dataclass(frozen=True)
class DecisionRow:
    tool_call_id: str
    decision: str  # approved | denied | expired | awaiting
    decided_by: str
    decided_at: datetime | None
    note: str
    seq: int


def decision_rows(conversation: Conversation) -> list[DecisionRow]:
    """Each request's decision (or "awaiting"), in the order they were decided (A2: the
    times never go backwards, whichever request was asked first); those still waiting
    last, in the order they were asked."""
    events = Event.objects.filter(conversation=conversation, type__in=APPROVAL_TYPES)
    rows: dict[str, DecisionRow] = {}
    for event in events.order_by("seq"):
        payload = event.payload if isinstance(event.payload, dict) else {}
        call = event.tool_call_id
        if event.type == "agent.tool.approval_requested":
            if call not in rows:
                rows[call] = DecisionRow(call, "awaiting", "", None, "", event.seq)
        elif call not in rows or rows[call].decision == "awaiting":
            rows[call] = DecisionRow(
                call,
                str(payload.get("decision", "")),
                str(payload.get("decided_by", "")),
                parse_moment(payload.get("decided_at")) or event.timestamp,
                str(payload.get("note", "")),
                event.seq,
            )
    decided = sorted(
        (row for row in rows.values() if row.decided_at is not None),
        key=lambda row: (row.decided_at, row.seq),
    )
    return decided + [row for row in rows.values() if row.decided_at is None]


def _describe(row: DecisionRow) -> SafeString:
    if row.decision == "awaiting":
        return SafeString("awaiting a decision")
    note = format_html(" — {}", reveal_invisible(row.note)) if row.note else ""
    return format_html(
        "{} by {} at {}{}",
        row.decision,
        reveal_invisible(row.decided_by or "—"),
        time_element(row.decided_at),
        note,
    )


@admin.display(description="Tool approvals")
def approval_decisions(model_admin, conversation: Conversation) -> str:
    rows = decision_rows(conversation)
    if not rows:
        return "—"
    items = format_html_join(
        "",
        "<li data-approval-row><code>{}</code>: {}</li>",
        ((reveal_invisible(row.tool_call_id), _describe(row)) for row in rows),
    )
    return format_html('<ul class="approval-decisions">{}</ul>', items)
