"""The conversation list and the rail (docs/rendering.md#list-and-rail): one row per conversation,
as plain data for `chatui/_conversation_row.html`.

A row reads only what `selectors.with_row_data` annotated onto the conversation, so
a page of rows costs one query. Its status is the latest run's own status (a run's
status follows its own end, `projection._finish_run`), not the conversation's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from chatui.models import Conversation, ConversationStatus

from .outcomes import row_counts
from .previews import PREVIEW_CHARS, preview_of

__all__ = ["PREVIEW_CHARS", "ConversationRow", "present_row", "present_rows"]

#: Run statuses shown as a badge; a completed run is the quiet default (its status
#: stays on the row as `data-run-status`).
BADGED = (ConversationStatus.RUNNING, ConversationStatus.FAILED, ConversationStatus.CANCELLED)
#: What a row's badge says, where not the status's own label (W5: a run a person
#: stopped is "Stopped", muted, not a failure).
ROW_LABELS = {ConversationStatus.CANCELLED: "Stopped"}


@dataclass(frozen=True)
class ConversationRow:
    pk: str
    url: str
    title: str
    preview: str
    counts: str
    # the latest run's: "running", "completed", "failed", "cancelled"; None: no run
    status: str | None
    status_label: str
    badged: bool
    updated_at: datetime
    updated_iso: str
    updated_exact: str
    updated_short: str


def counts_text(conversation: Conversation) -> str:
    """W4 (docs/rendering.md#w4): "12 tools · 1 failed · 1 denied · 1 expired · 1 cancelled"
    from the counts `selectors.with_outcome_counts` annotated, as every surface counts
    them; "" for a conversation without tool calls."""
    return row_counts(conversation).text()


def short_time(moment: datetime, now: datetime) -> str:
    """A relative time that fits one line on a phone: "just now", "5 min ago", "3 h ago",
    "Mar 4" ("Mar 4, 2025" another year), worded as chatui.js's `relativeTime`, which
    keeps it current; the exact time is the element's title."""
    seconds = (now - moment).total_seconds()
    if seconds < 45:
        return "just now"
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min ago"
    if seconds < 86400:
        return f"{round(seconds / 3600)} h ago"
    local = timezone.localtime(moment)
    if local.year == timezone.localtime(now).year:
        return f"{local:%b} {local.day}"
    return f"{local:%b} {local.day}, {local.year}"


def present_row(conversation: Conversation, now: datetime | None = None) -> ConversationRow:
    """`conversation` comes from `selectors.with_row_data` (or `with_run_status`)."""
    now = now or timezone.now()
    status = conversation.run_status
    updated = conversation.updated_at
    return ConversationRow(
        pk=str(conversation.pk),
        url=conversation.get_absolute_url(),
        title=conversation.title or "Untitled conversation",
        # Compact rows (selectors.with_run_status) come without a preview.
        # W6: the latest answer's first sentence, else the latest user message
        preview=preview_of(
            getattr(conversation, "answer_text", None), getattr(conversation, "asked_text", None)
        ),
        counts=counts_text(conversation),
        status=status,
        status_label=ROW_LABELS.get(status) or ConversationStatus(status).label if status else "",
        badged=status in BADGED,
        updated_at=updated,
        updated_iso=updated.isoformat(),
        updated_exact=f"{timezone.localtime(updated):%Y-%m-%d %H:%M:%S %Z}",
        updated_short=short_time(updated, now),
    )


def present_rows(conversations: list[Conversation]) -> list[ConversationRow]:
    now = timezone.now()
    return [present_row(conversation, now) for conversation in conversations]
