"""The audit page's summary and timeline (issue 15): plain data, no HTML.

- a run summary: each run's status, duration, tool calls, failures and tokens;
- a timeline: each run, then its tool calls (start, duration, outcome), each linking
  to its entry in the transcript by the entry's server-generated DOM id (`m-<pk>`);
- the first error (a failed tool call or a run's error line), for "jump to first error".

Counts and tokens cover the whole conversation (two aggregate queries); the timeline
and the anchors cover the transcript window the page shows, since a link must reach
an entry that is on the page.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from chatui.ingest.values import MAX_TOKENS
from chatui.ingest.visibility import is_assistant_shown
from chatui.models import Conversation, Message, Role, Run, ToolStatus
from chatui.read.outcomes import RETRIED_Q
from chatui.read.presenters import MALFORMED, duration_text, run_total
from chatui.read.reveal import reveal_invisible
from chatui.secrets import mask_text
from chatui.text import format_duration, format_tokens

EXACT = "%Y-%m-%d %H:%M:%S"


def exact_time(moment: datetime | None) -> str:
    """Local time to the second ("2026-11-22 18:04:05 UTC"); "" for none."""
    if moment is None:
        return ""
    local = timezone.localtime(moment)
    return f"{local:{EXACT}} {local:%Z}".strip()


def _offset(moment: datetime, start: datetime) -> str:
    """ "+1.2 s" after the run started."""
    return "+" + format_duration(max(0.0, (moment - start).total_seconds() * 1000))


@dataclass
class ToolStep:
    anchor: str  # "#m-<pk>"
    title: str
    status: str
    failed: bool
    started: str
    offset: str
    duration: str


@dataclass
class RunSummary:
    run_id: str
    status: str
    started: str
    ended: str
    duration: str
    tool_calls: int
    failures: int
    tokens: str
    error: str
    anchor: str | None  # the run's first entry on the page
    steps: list[ToolStep] = field(default_factory=list)


def _tool_counts(conversation: Conversation) -> dict[str, tuple[int, int]]:
    rows = (
        Message.objects.filter(conversation=conversation, role=Role.TOOL)
        .order_by()
        .values("run_id")
        .annotate(
            n=Count("pk"),
            failed=Count("pk", filter=Q(tool_status=ToolStatus.ERROR)),
            # W4 (docs/rendering.md#w4): a retried attempt is part of its call, never a
            # failure (only failed attempts are retried).
            retried=Count("pk", filter=RETRIED_Q),
        )
    )
    return {
        row["run_id"]: (row["n"] - row["retried"], row["failed"] - row["retried"]) for row in rows
    }


def _tokens(conversation: Conversation) -> dict[str, str]:
    """Each run's tokens as shown: the sum of its assistant steps' `tokens` (S1), "—"
    when a stored value would be refused today (as on the page)."""
    sent: dict[str, list[Any]] = defaultdict(list)
    steps = Message.objects.filter(conversation=conversation, role=Role.ASSISTANT)
    # The metadata whole, not `metadata__tokens`: on PostgreSQL a key lookup reads the
    # json column as jsonb, which refuses an old row's "\u0000" anywhere in it.
    for run_id, metadata in steps.values_list("run_id", "metadata"):
        sent[run_id].append(metadata.get("tokens") if isinstance(metadata, dict) else None)
    shown: dict[str, str] = {}
    for run_id, values in sent.items():
        total = run_total(values, MAX_TOKENS, integral=True)
        if total == MALFORMED:
            shown[run_id] = MALFORMED
        elif total:
            shown[run_id] = format_tokens(total)
    return shown


def _run_duration(run: Run) -> str:
    if run.ended_at is None:
        return "running" if run.status == "running" else "—"
    return format_duration((run.ended_at - run.started_at).total_seconds() * 1000)


def is_error(message: Message) -> bool:
    if message.role == Role.TOOL:
        return message.tool_status == ToolStatus.ERROR
    return message.role == Role.STATUS and message.status_type == "error"


def _rendered(message: Message) -> bool:
    """Does the transcript render this message under its own id? (An assistant step
    that only called tools shows nothing of its own.)"""
    return message.role != Role.ASSISTANT or is_assistant_shown(message)


def _step(message: Message, run_start: datetime) -> ToolStep:
    meta = message.metadata or {}
    status = message.tool_status or "queued"
    if meta.get("no_result_recorded"):
        status = "no result"
    return ToolStep(
        anchor=f"#{message.dom_id}",
        title=reveal_invisible(message.tool_name or "tool"),
        status=status,
        failed=message.tool_status == ToolStatus.ERROR,
        started=exact_time(message.timestamp),
        offset=_offset(message.timestamp, run_start),
        duration=duration_text(meta.get("tool_duration_ms")) or "",
    )


def run_summaries(conversation: Conversation, window: Sequence[Message]) -> list[RunSummary]:
    """Every run, oldest first, with its tool calls from `window` as timeline steps."""
    runs = list(Run.objects.filter(conversation=conversation).order_by("started_seq"))
    counts = _tool_counts(conversation)
    tokens = _tokens(conversation)
    first_entry: dict[str, str] = {}
    tools: dict[str, list[Message]] = defaultdict(list)
    for message in window:
        if message.run_id and _rendered(message):
            first_entry.setdefault(message.run_id, f"#{message.dom_id}")
        if message.role == Role.TOOL:
            tools[message.run_id].append(message)
    summaries = []
    for run in runs:
        n_tools, n_failed = counts.get(run.run_id, (0, 0))
        summaries.append(
            RunSummary(
                run_id=reveal_invisible(run.run_id),
                status=run.status,
                started=exact_time(run.started_at),
                ended=exact_time(run.ended_at),
                duration=_run_duration(run),
                tool_calls=n_tools,
                failures=n_failed,
                tokens=tokens.get(run.run_id, "—"),
                error=reveal_invisible(mask_text(run.error_message)),  # T3
                anchor=first_entry.get(run.run_id),
                steps=[_step(message, run.started_at) for message in tools.get(run.run_id, [])],
            )
        )
    return summaries


def first_error_anchor(window: Sequence[Message]) -> str | None:
    """The first failed tool call or run error line on the page, as "#m-<pk>"."""
    for message in window:
        if is_error(message):
            return f"#{message.dom_id}"
    return None
