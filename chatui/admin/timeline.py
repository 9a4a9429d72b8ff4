"""The audit page's run summary and timeline (issue 15; A1, A2, S4 in
docs/rendering.md#admin): plain data, no HTML.

- a run summary: each run's status, times, duration, tool calls, failures, tokens and
  cost (S4);
- A1, a timeline per run: its tool calls as bars on a time axis (start offset and
  duration, as percentages of the run's span, which the template draws as SVG
  attributes: the CSP allows no inline style), in start-time order, nested under
  their parent (G13), failures, retries and approvals marked, each linking to its
  entry in the transcript by the entry's server-generated DOM id (`m-<pk>`);
- the first error (a failed tool call or a run's error line), for "jump to first error".

Times (A2): a tool's bar starts when it started running (`Message.timestamp`, which the
projection moves to the `started` event's time), or, for one that asked for approval,
when it asked; a call that waited for a person shows the wait, from the request to the
decision, before its run. Ordering by that first moment is what keeps the rows in time
order: an approved call runs after the calls asked after it were decided, and a denied
one never starts at all, so ordering by the transcript's position (as the old list did)
made its times go backwards.

Counts, tokens and cost cover the whole conversation (two aggregate queries); the
timeline and the anchors cover the transcript window the page shows, since a link must
reach an entry that is on the page.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone
from django.utils.safestring import SafeString

from chatui.ingest.values import MAX_DURATION_MS, MAX_TOKENS, contract_number
from chatui.ingest.visibility import is_assistant_shown
from chatui.models import Conversation, Event, Message, Role, Run, ToolStatus
from chatui.read.cost import format_cost, run_cost
from chatui.read.outcomes import RETRIED_Q, Outcome, outcome_of
from chatui.read.presenters import MALFORMED, duration_text, iter_entries, run_total
from chatui.read.reveal import reveal_invisible
from chatui.secrets import mask_text
from chatui.text import format_duration, format_tokens

from .times import event_time, exact_time, iso_time, offset_text, parse_moment

__all__ = ["exact_time", "first_error_anchor", "run_summaries"]

#: Indentation levels drawn (G13); deeper entries stay at the last one, labelled.
MAX_INDENT = 6
#: A bar narrower than this (percent of the axis) is drawn this wide, so a 3 ms call
#: shows among 10 s ones.
MIN_BAR = 0.4
#: Steps of the time axis, in ms: the first that gives at most MAX_TICKS intervals.
TICK_STEPS = [
    unit * factor
    for unit in (1, 10, 100, 1000, 10_000, 60_000, 600_000, 3_600_000, 86_400_000)
    for factor in (1, 2, 5)
]
MAX_TICKS = 6
OPEN = (ToolStatus.QUEUED, ToolStatus.RUNNING, ToolStatus.AWAITING_APPROVAL)
#: Outcomes whose bar is the tool's run; the others never ran (or have not yet).
RAN = {Outcome.SUCCEEDED, Outcome.FAILED, Outcome.RETRIED, Outcome.SKIPPED}


@dataclass(frozen=True)
class Segment:
    """One rectangle of a bar: `x` and `width` in percent of the run's axis."""

    kind: str  # "run" | "wait"
    x: float
    width: float


@dataclass(frozen=True)
class Tick:
    x: float
    label: str
    anchor: str  # SVG text-anchor: start | middle | end


@dataclass(frozen=True)
class ToolStep:
    anchor: str  # "#m-<pk>" of the entry that shows it
    title: SafeString
    status: str  # the stored status as shown ("no result" for T2)
    outcome: str  # W4's outcome: its bar's colour and its mark
    failed: bool
    depth: int  # G13 nesting level
    indent: int  # min(depth, MAX_INDENT): the class that indents it
    marks: tuple[SafeString, ...]  # "attempt 2/3", "approved by alice after 1.2 s", …
    started: str  # to the millisecond (A2)
    started_iso: str
    offset: str  # "+1.2 s" from the run's start
    duration: str
    segments: tuple[Segment, ...]
    start_ms: float  # offset in ms of its first moment, for order


@dataclass
class RunSummary:
    run_id: str
    status: str
    started: str
    started_iso: str
    ended: str
    ended_iso: str
    duration: str
    tool_calls: int
    failures: int
    tokens: str
    cost: str  # S4: "$0.0042", or "—" when it cannot be priced
    error: str
    anchor: str | None  # the run's first entry on the page
    steps: list[ToolStep] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    span: str = ""  # the axis' length, "12.3 s"


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


def _usage(conversation: Conversation) -> tuple[dict[str, str], dict[str, str]]:
    """Each run's tokens as shown: the sum of its assistant steps' `tokens` (S1), "—"
    when a stored value would be refused today (as on the page); and its cost (S4)."""
    sent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    steps = Message.objects.filter(conversation=conversation, role=Role.ASSISTANT)
    # The metadata whole, not `metadata__tokens`: on PostgreSQL a key lookup reads the
    # json column as jsonb, which refuses an old row's "\u0000" anywhere in it.
    for run_id, metadata in steps.values_list("run_id", "metadata"):
        sent[run_id].append(metadata if isinstance(metadata, dict) else {})
    tokens: dict[str, str] = {}
    costs: dict[str, str] = {}
    for run_id, metas in sent.items():
        total = run_total((meta.get("tokens") for meta in metas), MAX_TOKENS, integral=True)
        if total == MALFORMED:
            tokens[run_id] = MALFORMED
        elif total:
            tokens[run_id] = format_tokens(total)
        cost = format_cost(run_cost(metas))
        if cost:
            costs[run_id] = cost
    return tokens, costs


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


def entry_anchors(items: Sequence[Any]) -> dict[int, str]:
    """Message pk → "#<dom id>" of the entry that shows it on the page: G14 shows the
    attempts of one call as one entry, under its first attempt's id."""
    anchors: dict[int, str] = {}
    for item in items:
        for entry in iter_entries(getattr(item, "entries", ()) or ()):
            for pk in entry.pks or (entry.pk,):
                anchors[pk] = f"#{entry.dom_id}"
    return anchors


# -- A1: one tool call's moments ------------------------------------------------------


@dataclass
class _Moments:
    message: Message
    outcome: Outcome
    start: datetime  # it started running (or was created, if it never did)
    end: datetime
    asked: datetime | None = None  # approval requested
    decided: datetime | None = None
    is_open: bool = False  # still going: its end is "now"

    @property
    def first(self) -> datetime:
        """Where its row begins: the request, for a call that asked a person first
        (its `start` is then the run, or for one that never ran, when it was queued)."""
        return self.asked or self.start

    @property
    def last(self) -> datetime:
        return max(self.end, self.decided or self.end)


def _moments(
    message: Message, ended_at: dict[int, datetime], run_end: datetime | None, now: datetime
) -> _Moments:
    meta = message.metadata if isinstance(message.metadata, dict) else {}
    outcome = outcome_of(message.tool_status, meta)
    start = message.timestamp
    is_open = message.tool_status in OPEN and not meta.get("no_result_recorded")
    took = contract_number(meta.get("tool_duration_ms"), MAX_DURATION_MS)
    if is_open:
        end = run_end or now
    elif took is not None:
        end = start + timedelta(milliseconds=took)
    else:
        end = ended_at.get(message.updated_seq, start)
    moments = _Moments(message, outcome, start, max(end, start), is_open=is_open)
    approval = meta.get("approval")
    if isinstance(approval, dict):
        moments.asked = parse_moment(approval.get("requested_at"))
        moments.decided = parse_moment(approval.get("decided_at"))
        if moments.asked and moments.decided and moments.decided < moments.asked:
            moments.decided = moments.asked  # a clock that went back: no negative wait
    return moments


def _marks(moments: _Moments) -> tuple[SafeString, ...]:
    """What the bar alone does not say: the attempt, the approval, a missing result."""
    message = moments.message
    meta = message.metadata if isinstance(message.metadata, dict) else {}
    marks: list[str] = []
    attempt = contract_number(meta.get("attempt"), 1000, integral=True)
    if attempt and attempt > 1:
        limit = contract_number(meta.get("max_attempts"), 1000, integral=True)
        marks.append(f"attempt {attempt}" + (f"/{limit}" if limit else ""))
    if moments.outcome == Outcome.RETRIED:
        marks.append("failed, retried")
    approval = meta.get("approval")
    if isinstance(approval, dict):
        decision = approval.get("decision")
        waited = ""
        if moments.asked and moments.decided:
            waited = " after " + format_duration(
                (moments.decided - moments.asked).total_seconds() * 1000
            )
        who = str(approval.get("decided_by") or "someone")[:200]
        if decision in ("approved", "denied"):
            marks.append(f"{decision} by {who}{waited}")
        elif decision == "expired":
            marks.append(f"approval expired{waited}")
        else:
            marks.append("awaiting approval")
    if meta.get("no_result_recorded"):
        marks.append("no result recorded")
    return tuple(reveal_invisible(mark) for mark in marks)


# -- A1: the axis ---------------------------------------------------------------------


def _ticks(span_ms: float) -> list[Tick]:
    # Past the list (a run left "running" for months): whole multiples of its last step.
    fallback = TICK_STEPS[-1] * -(-span_ms // (TICK_STEPS[-1] * MAX_TICKS))
    step = next((step for step in TICK_STEPS if span_ms / step <= MAX_TICKS), fallback)
    ticks = []
    at = 0.0
    while at <= span_ms + 1e-9:
        x = round(at / span_ms * 100, 2)
        anchor = "start" if at == 0 else ("end" if x > 92 else "middle")
        ticks.append(Tick(x=x, label="0" if at == 0 else offset_text(at), anchor=anchor))
        at += step
    return ticks


def _percent(moment: datetime, origin: datetime, span_ms: float) -> float:
    return (moment - origin).total_seconds() * 1000 / span_ms * 100


def _segment(kind: str, left: datetime, right: datetime, origin: datetime, span: float):
    x = min(max(_percent(left, origin, span), 0.0), 100.0)
    width = max(_percent(right, origin, span) - x, MIN_BAR)
    x = min(x, 100.0 - width)
    return Segment(kind=kind, x=round(x, 2), width=round(width, 2))


def _segments(moments: _Moments, origin: datetime, span: float) -> tuple[Segment, ...]:
    parts = []
    if moments.asked:
        waited_until = moments.decided or moments.end
        parts.append(_segment("wait", moments.asked, waited_until, origin, span))
    running = moments.message.tool_status == ToolStatus.RUNNING
    if moments.outcome in RAN or moments.outcome == Outcome.CANCELLED or running:
        parts.append(_segment("run", moments.start, moments.end, origin, span))
    elif (moments.outcome == Outcome.PENDING and not moments.asked) or not parts:
        parts.append(_segment("wait", moments.start, moments.end, origin, span))
    return tuple(parts)


def _in_tree_order(moments: list[_Moments]) -> list[tuple[_Moments, int]]:
    """G13 and A1: each call under its parent, siblings by their first moment (then by
    position); a parent outside this run's window, or a cycle of parents a runtime
    sent, leaves the call at the top."""
    by_id: dict[str, _Moments] = {}
    for moment in moments:
        by_id.setdefault(moment.message.tool_call_id, moment)
    children: dict[str, list[_Moments]] = defaultdict(list)
    roots = []
    for moment in moments:
        parent = moment.message.parent_tool_call_id
        if parent and parent in by_id and by_id[parent] is not moment:
            children[parent].append(moment)
        else:
            roots.append(moment)

    def key(moment: _Moments) -> tuple[datetime, int]:
        return (moment.first, moment.message.position)

    ordered: list[tuple[_Moments, int]] = []
    seen: set[int] = set()
    stack = [(root, 0) for root in sorted(roots, key=key, reverse=True)]
    while stack:
        moment, depth = stack.pop()
        if id(moment) in seen:
            continue
        seen.add(id(moment))
        ordered.append((moment, depth))
        kids = children.get(moment.message.tool_call_id, [])
        if by_id.get(moment.message.tool_call_id) is moment:
            stack.extend((kid, depth + 1) for kid in sorted(kids, key=key, reverse=True))
    # Calls in a cycle of parents were never reached from a root.
    ordered += [(moment, 0) for moment in sorted(moments, key=key) if id(moment) not in seen]
    return ordered


def _steps(
    run: Run,
    tools: list[Message],
    anchors: Mapping[int, str],
    ended_at: dict[int, datetime],
    now: datetime,
) -> tuple[list[ToolStep], list[Tick], str]:
    run_end = run.ended_at or (now if run.status == "running" else None)
    moments = [_moments(message, ended_at, run_end, now) for message in tools]
    origin = min([run.started_at, *(moment.first for moment in moments)])
    finish = max([run_end or run.started_at, *(moment.last for moment in moments)])
    span = max((finish - origin).total_seconds() * 1000, 1.0)
    steps = []
    for moment, depth in _in_tree_order(moments):
        message = moment.message
        meta = message.metadata if isinstance(message.metadata, dict) else {}
        status = message.tool_status or "queued"
        if meta.get("no_result_recorded"):
            status = "no result"
        first = moment.first
        steps.append(
            ToolStep(
                anchor=anchors.get(message.pk, f"#{message.dom_id}"),
                title=reveal_invisible(message.tool_name or "tool"),
                status=status,
                outcome=str(moment.outcome),
                failed=moment.outcome == Outcome.FAILED,
                depth=depth,
                indent=min(depth, MAX_INDENT),
                marks=_marks(moment),
                started=event_time(first),
                started_iso=iso_time(first),
                offset=offset_text((first - run.started_at).total_seconds() * 1000),
                duration=duration_text(meta.get("tool_duration_ms"))
                or (
                    ""
                    if moment.is_open or moment.outcome not in RAN
                    else format_duration((moment.end - moment.start).total_seconds() * 1000)
                ),
                segments=_segments(moment, origin, span),
                start_ms=(first - origin).total_seconds() * 1000,
            )
        )
    return steps, _ticks(span), format_duration(span)


def _end_times(conversation: Conversation, tools: Sequence[Message]) -> dict[int, datetime]:
    """The time of the event that last changed each finished tool without a duration:
    its end (one query; the seqs in chunks that fit any database's parameter limit)."""
    seqs = sorted(
        {
            message.updated_seq
            for message in tools
            if message.tool_status not in OPEN
            and "tool_duration_ms" not in (message.metadata or {})
        }
    )
    found: dict[int, datetime] = {}
    for start in range(0, len(seqs), 500):
        rows = Event.objects.filter(conversation=conversation, seq__in=seqs[start : start + 500])
        found.update(rows.values_list("seq", "timestamp"))
    return found


def run_summaries(
    conversation: Conversation,
    window: Sequence[Message],
    anchors: Mapping[int, str] | None = None,
    *,
    now: datetime | None = None,
) -> list[RunSummary]:
    """Every run, oldest first, with its tool calls from `window` as timeline steps;
    `anchors` (`entry_anchors` of the presented window) say where each one is shown."""
    now = now or timezone.now()
    runs = list(Run.objects.filter(conversation=conversation).order_by("started_seq"))
    counts = _tool_counts(conversation)
    tokens, costs = _usage(conversation)
    first_entry: dict[str, str] = {}
    tools: dict[str, list[Message]] = defaultdict(list)
    for message in window:
        if message.run_id and _rendered(message):
            first_entry.setdefault(message.run_id, f"#{message.dom_id}")
        if message.role == Role.TOOL:
            tools[message.run_id].append(message)
    ended_at = _end_times(conversation, [m for run in runs for m in tools.get(run.run_id, [])])
    summaries = []
    for run in runs:
        n_tools, n_failed = counts.get(run.run_id, (0, 0))
        steps, ticks, span = _steps(run, tools.get(run.run_id, []), anchors or {}, ended_at, now)
        summaries.append(
            RunSummary(
                run_id=reveal_invisible(run.run_id),
                status=run.status,
                started=exact_time(run.started_at),
                started_iso=iso_time(run.started_at),
                ended=exact_time(run.ended_at),
                ended_iso=iso_time(run.ended_at),
                duration=_run_duration(run),
                tool_calls=n_tools,
                failures=n_failed,
                tokens=tokens.get(run.run_id, "—"),
                cost=costs.get(run.run_id, "—"),
                error=reveal_invisible(mask_text(run.error_message)),  # T3
                anchor=first_entry.get(run.run_id),
                steps=steps,
                ticks=ticks if steps else [],
                span=span,
            )
        )
    return summaries


def first_error_anchor(window: Sequence[Message]) -> str | None:
    """The first failed tool call or run error line on the page, as "#m-<pk>"."""
    for message in window:
        if is_error(message):
            return f"#{message.dom_id}"
    return None
