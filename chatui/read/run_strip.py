"""W2 the run strip (docs/rendering.md#w2): while a run goes, what it does now, its tool
calls by outcome, a jump to the first failure or to the approval waiting, and Stop —
docked above the composer, so it never scrolls away; and which mark the tab's title
starts with: "✋" while an approval waits, else "●" (chatui.js writes the character:
the page's HTML holds none an emoji font draws, W7).

Plain data from the run's messages, tested without HTML; `chatui/_run_strip.html`
draws it on the page, in every live frame that may change it, in time travel and in
replay. Its counts are the W4 outcomes (chatui.read.outcomes): the same words the
batch summaries and the list rows use; "waiting" is W3's (queued or awaiting a
person), never folded into running.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from chatui.models import Message, Role, ToolStatus
from chatui.text import format_elapsed, humanise_tool_name, neutralise

from .display import MASKED, Display, Key, Text, ToolText
from .outcomes import Outcome, outcome_of
from .presenters import TemplateView, progress_line

#: The tab title's marks (docs/rendering.md#w2), by name: chatui.js maps them to "✋", "●".
MARK_APPROVAL = "approval"
MARK_RUNNING = "running"


@dataclass(frozen=True)
class RunStripView(TemplateView):
    """What the strip shows while a run goes."""

    # what happens now: "tool" (a running tool's title, clock and progress line),
    # "approval" ("Approval needed: Delete File"), "writing", "thinking" or "working"
    now_kind: Key
    now_text: ToolText
    now_target: Key | None  # the DOM id the "now" line jumps to (an approval's entry)
    now_started_iso: Key | None  # a running tool's start: its clock ticks on the page
    now_elapsed: Text | None
    now_progress: ToolText | None  # the running tool's progress line (G11)
    counts_text: Text  # "5 done · 1 failed · 2 waiting"
    first_failure: Key | None  # the DOM id of the run's first failed entry
    title_mark: Key  # MARK_APPROVAL or MARK_RUNNING
    done: int = 0
    failed: int = 0
    denied: int = 0
    expired: int = 0
    cancelled: int = 0
    waiting: int = 0
    running: int = 0


def run_of(messages: Sequence[Message]) -> list[Message]:
    """Of a transcript's messages, those of the run of the newest one that names a run
    (chatui.read.selectors.going_run_messages reads the same from the database)."""
    run_id = next((message.run_id for message in reversed(messages) if message.run_id), None)
    return [message for message in messages if run_id and message.run_id == run_id]


def _counts_text(counts: dict[str, int]) -> str:
    words = ("done", "failed", "denied", "expired", "cancelled", "waiting", "running")
    return " · ".join(f"{counts[word]} {word}" for word in words if counts[word])


#: Of the tool rows a run's database read counts by status (`status_counts`), the W4
#: outcome each status is; the others (pending, failed, denied: expired or not) come as
#: rows. (A row stored as a success before G15 whose details say it failed counts as
#: done there: the projection has stored such failures as errors since.)
COUNTED_STATUSES = {
    ToolStatus.SUCCESS: "done",
    ToolStatus.SKIPPED: "done",
    ToolStatus.CANCELLED: "cancelled",
}


def present_run_strip(
    messages: Sequence[Message],
    *,
    going: bool,
    now: datetime | None = None,
    display: Display = MASKED,
    status_counts: Mapping[str, int] | None = None,
) -> RunStripView | None:
    """The strip of a run (None when no run goes: the strip is hidden). `messages`, in
    position order, are all the run's messages; or, with `status_counts` (its tool calls
    not retried, by a COUNTED_STATUSES status, counted by the database), only its other
    tool rows and its newest message (chatui.read.selectors.going_run_messages)."""
    if not going:
        return None
    counts = dict.fromkeys(
        ("done", "failed", "denied", "expired", "cancelled", "waiting", "running"), 0
    )
    for status, number in (status_counts or {}).items():
        counts[COUNTED_STATUSES[status]] += number
    first_failure = awaiting = running = None
    for message in messages:
        if message.role != Role.TOOL:
            continue
        if status_counts is not None and message.tool_status in COUNTED_STATUSES:
            continue  # counted by the database (the run's newest message may be one)
        outcome = outcome_of(message.tool_status, message.metadata)
        if outcome == Outcome.RETRIED:
            continue  # part of its call (G14), counted by its last attempt (W4)
        if outcome in (Outcome.SUCCEEDED, Outcome.SKIPPED):
            counts["done"] += 1
        elif outcome == Outcome.PENDING:
            if message.tool_status in ("", ToolStatus.RUNNING):
                counts["running"] += 1
                running = running or message
            else:  # queued, or awaiting a person's decision (W3: waiting)
                counts["waiting"] += 1
                if message.tool_status == ToolStatus.AWAITING_APPROVAL:
                    awaiting = awaiting or message
        else:
            counts[str(outcome)] += 1
            if outcome == Outcome.FAILED and first_failure is None:
                first_failure = message.dom_id
    fields: dict = {"now_target": None, "now_started_iso": None, "now_elapsed": None}
    fields["now_progress"] = None
    # Read from the row's columns and metadata, never its `content` (the run's rows are
    # read without it: chatui.read.selectors.going_run_messages).
    if awaiting is not None:
        title = neutralise(humanise_tool_name(awaiting.tool_name))
        fields |= {"now_kind": "approval", "now_text": f"Approval needed: {title}"}
        fields["now_target"] = awaiting.dom_id
    elif running is not None:
        title = neutralise(humanise_tool_name(running.tool_name))
        fields |= {"now_kind": "tool", "now_text": title, "now_target": running.dom_id}
        seconds = ((now or timezone.now()) - running.timestamp).total_seconds()
        fields["now_started_iso"] = running.timestamp.isoformat()
        fields["now_elapsed"] = format_elapsed(max(seconds, 0))
        fields["now_progress"] = progress_line(running.metadata or {}, display)
    else:
        fields |= _text_now(messages)
    return display.show(
        RunStripView(
            **fields,
            counts_text=_counts_text(counts),
            first_failure=first_failure,
            title_mark=MARK_APPROVAL if awaiting is not None else MARK_RUNNING,
            **counts,
        )
    )


def _text_now(messages: Sequence[Message]) -> dict[str, str]:
    """No tool runs: the run's newest message says what it does — an answer streaming
    ("Writing…"), a thinking line ("Thinking…"), else "Working…"."""
    newest = messages[-1] if messages else None
    if newest is not None and newest.role == Role.ASSISTANT and not newest.is_final:
        return {"now_kind": "writing", "now_text": "Writing…"}
    if newest is not None and newest.role == Role.STATUS and newest.status_type == "thinking":
        return {"now_kind": "thinking", "now_text": "Thinking…"}
    return {"now_kind": "working", "now_text": "Working…"}
