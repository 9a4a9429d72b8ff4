"""Live frames: the HTML partials an ingest changed, rendered once for every viewer.

A frame is a marker comment `<!--seq FIRST LAST-->` followed by top-level
elements that the htmx ws extension swaps out-of-band by id (docs/rendering.md#live-updates):
replaced in place when the element exists, appended to #transcript when the
message is new, deleted when the projection removed it. When a run ends (S3)
or the projection is rebuilt, the frame is the whole transcript instead, so
every open page ends equal to a fresh load.

Why it is long: every kind of frame (a change, the whole transcript, a replay, the run
strip and state) is built here from the same partials and the same kept batch and tail,
so that the equivalence of a live frame and a fresh read is one module's to keep.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.signals import setting_changed
from django.template import Context
from django.template.loader import get_template
from django.utils import timezone, translation
from django.utils.autoreload import file_changed
from django.utils.html import escape

from chatui.db.internals import render_compiled
from chatui.db.lru import BoundedLRU
from chatui.ingest.projection import ChangeSet
from chatui.models import Conversation, Message, Role, seq_of
from chatui.read import pages, presenters, selectors
from chatui.read.windows import MessageWindow

from . import batch_cache, tail_cache

logger = logging.getLogger(__name__)

TEMPLATE = "chatui/_transcript.html"
# A reconnecting page that missed more than this many events gets one full swap.
REPLAY_LIMIT = 500
# Past this many changed messages one transcript render is cheaper than many slices.
PIECEMEAL_LIMIT = 40


@dataclass(frozen=True)
class Frame:
    first_seq: int
    last_seq: int
    html: str
    # Only streamed text appended to bubbles: a viewer's socket may join such frames
    # that follow each other into one (chatui.live.consumers, docs/PERFORMANCE.md#p5).
    streamed_text_only: bool = False
    # The whole (windowed) transcript: it brings any page up to `last_seq`, whatever the
    # page had shown (`for_page`).
    whole: bool = False


def marker(first_seq: int, last_seq: int) -> str:
    return f"<!--seq {first_seq} {last_seq}-->"


# -- building frames --------------------------------------------------------------


def full_frame(conversation: Conversation, first_seq: int = 0) -> Frame:
    """The whole (windowed) transcript, swapped in place of #transcript.

    `conversation.last_seq` was read before the messages are, so the HTML is at
    least as new as the seq it claims."""
    html = render_partial(TEMPLATE + "#transcript-oob", pages.transcript_context(conversation))
    html += render_run_state(conversation, oob=True)
    html += render_run_strip(conversation)
    last_seq = conversation.last_seq
    return Frame(first_seq, last_seq, marker(first_seq, last_seq) + html, whole=True)


def for_page(frame: Frame | None, after: int) -> Frame | None:
    """`frame`, read for one page, for a page that has shown `after`: a whole-transcript
    frame serves any (under its own seq range), another only the page it was read for."""
    if frame is None or not frame.whole or frame.first_seq == after + 1:
        return frame
    if frame.last_seq <= after:
        return None
    body = frame.html[len(marker(frame.first_seq, frame.last_seq)) :]
    return Frame(after + 1, frame.last_seq, marker(after + 1, frame.last_seq) + body, whole=True)


def change_frame(
    conversation: Conversation,
    first_seq: int,
    last_seq: int,
    changes: ChangeSet,
    *,
    live: bool = True,
) -> Frame:
    """The partials `changes` touched. Rows are read as they are now, possibly newer
    than `last_seq`: swaps are idempotent, so a later frame re-applying is harmless,
    while claiming seqs this frame does not cover would lose them.

    `changes` must name every message seqs `first_seq`..`last_seq` changed (an
    ingest's do): the latest messages and the tool batch kept by the frame before
    (chatui.live.tail_cache, chatui.live.batch_cache) are then brought up to date from them.
    `live=False` when they may not (replay's)."""
    if changes.full_refresh:
        batch_cache.BATCHES.discard(batch_cache.key_of(conversation.pk))
        tail_cache.discard(conversation.pk)
    if changes.full_refresh or len(changes.changed) > PIECEMEAL_LIMIT:
        return full_frame(conversation, first_seq)
    parts = [marker(first_seq, last_seq)]
    parts += [_delete(f"m-{pk}") for pk in changes.removed]
    appended = {pk: pieces for pk, pieces in changes.appended.items() if pk not in changes.created}
    others = [pk for pk in changes.changed if pk not in appended]
    # The kept batch's and tail's key, found once (it reads the connection's settings).
    key = batch_cache.key_of(conversation.pk) if live else None
    span = _Span(first_seq, last_seq, changes, key) if live else None
    if live and not others:
        batch_cache.follow(conversation.pk, first_seq, last_seq, changes, key)
        tail_cache.follow(conversation.pk, first_seq, last_seq, changes, key)
    going = pages.run_going(conversation)
    changed, tail = _changed_parts(conversation.pk, others, changes.created, span, going)
    parts += changed
    parts += [delta_part(pk, seq, text) for pk, pieces in appended.items() for seq, text in pieces]
    if changes.conversation_changed:
        parts.append(render_run_state(conversation, oob=True))
    if changes.conversation_changed or (going and others):
        # W2: what the run does now and its counts change with any of its steps
        parts.append(
            render_run_strip(conversation, tail, run_known=not changes.conversation_changed)
        )
    text_only = bool(appended) and not (others or changes.removed or changes.conversation_changed)
    return Frame(first_seq, last_seq, "".join(parts), streamed_text_only=text_only)


def frame_body(first_seq: int, last_seq: int, html: str) -> str:
    """A frame's parts without its marker (to join frames that follow each other)."""
    head = marker(first_seq, last_seq)
    if not html.startswith(head):
        raise ValueError(f"frame {first_seq}-{last_seq} does not start with its marker")
    return html[len(head) :]


@dataclass(frozen=True)
class _Span:
    """A live frame's seqs and everything they changed (chatui.live.batch_cache)."""

    first_seq: int
    last_seq: int
    changes: ChangeSet
    key: tuple | None = None  # batch_cache.key_of the conversation


def _changed_parts(
    conversation_id,
    changed_pks: list[int],
    created: set[int],
    span: _Span | None = None,
    going: bool = False,
) -> tuple[list[str], selectors.Tail | None]:
    """The parts for the changed messages, and the latest messages the frame read."""
    if not changed_pks:
        return [], None
    parts: list[str] = []
    done_messages: set[int] = set()
    runs: dict[str, dict[int, presenters.Item]] = {}  # a run's shown steps, read once
    # The conversation's latest messages: the changed ones, their tool batch and their
    # run's thinking lines are usually among them (docs/PERFORMANCE.md#p1, #p2). Kept from the frame
    # before when this one leads on from it: then only the changed rows are read.
    seqs = (span.first_seq, span.last_seq, span.changes) if span is not None else None
    key = span.key if span is not None else None
    found = tail_cache.frame_tail(conversation_id, _tail_size(len(changed_pks)), seqs, key)
    tail = found.tail
    messages = selectors.messages_by_pk(changed_pks, tail, found.read)
    shown = _Batches(conversation_id, span, messages, tail, going)
    batches = _touched_batches(messages, shown)
    shown.keep()
    superseded = _superseded_spinners(messages, created, tail)
    # A thinking line this frame both adds and replaces never reaches a page: neither
    # rendered nor deleted (a batched ingest adds and replaces several).
    unseen = {m.dom_id for m in messages if m.pk in created} & set(superseded)
    emitted: set[str] = set()
    for message in messages:
        if message.dom_id in unseen:
            continue
        if message.role == Role.TOOL:
            found = batches.get(message.pk)
            if found is not None and found[0].dom_id not in emitted:
                emitted.add(found[0].dom_id)
                parts += _batch_parts(*found, created)
            continue
        if message.role == Role.ASSISTANT:
            parts += _assistant_parts(message, created, done_messages, tail, runs)
            continue
        items = presenters.present_transcript([message])
        if items:
            parts.append(_render_item(items[0], append=message.pk in created))
    parts += [_delete(dom_id) for dom_id in superseded if dom_id not in unseen]
    return parts, tail


def _tail_size(changed: int) -> int:
    """FRAME_TAIL, doubled until it holds the changed messages with room to spare: a
    batched ingest changes dozens, whose batches would otherwise each be walked to by
    query. Powers of two, so that few LIMIT shapes are compiled."""
    size = selectors.FRAME_TAIL
    while size < changed + selectors.FRAME_TAIL // 2:
        size *= 2
    return size


class _Batches:
    """The tool batches a frame shows. The conversation's kept batch (chatui.live.batch_cache)
    when this frame's changes lead on from it: its rows are not read again, and only
    its entries that changed are presented anew (docs/PERFORMANCE.md tool steps: a tool event's
    frame costs what changed, not the batch). Any other batch is read (`_batch_of`), and
    kept when it is the conversation's latest."""

    def __init__(
        self, conversation_id, span: _Span | None, messages, tail: selectors.Tail, going: bool
    ):
        self.tail = tail
        self.span = span
        self.going = going  # a run goes: the batch it is in is held open (W1)
        self.key = (span.key or batch_cache.key_of(conversation_id)) if span is not None else None
        self.kept: batch_cache.KeptBatch | None = None
        self.view: presenters.ToolBatchView | None = None
        self.keeping: batch_cache.KeptBatch | None = None  # what to keep after the frame
        if span is not None:
            before = batch_cache.BATCHES.get(self.key)
            if before is not None and batch_cache.leads_on(before, span.first_seq, span.changes):
                self.kept = batch_cache.advance(before, span.last_seq, span.changes, messages, tail)
                self.keeping = self.kept

    def of(self, message: Message) -> presenters.ToolBatchView | None:
        """The batch showing tool `message`, presented once per frame."""
        kept = self.kept
        if kept is not None and message.pk in kept.index and self._starts_in(kept, message):
            if self.view is None:
                self.view, self.keeping = batch_cache.present(kept, self.going)
            if self.view is not None:
                return self.view
        roots = presenters.KeptRoots()
        batch, window = _batch_of(message, self.tail, roots, self.going)
        if self.span is not None and self.keeping is None:
            last = self.tail.messages[-1] if self.tail.messages else None
            self.keeping = batch_cache.keep(
                self.span.last_seq, window, roots, last, batch, self.span.changes.rebuilds
            )
        return batch

    @staticmethod
    def _starts_in(kept: batch_cache.KeptBatch, message: Message) -> bool:
        """Is the entry `message` shows in (its top ancestor's) in the kept rows? A
        nested tool's parent may be in an earlier batch (G13): its slice is another."""
        if not message.parent_tool_call_id:
            return True
        return selectors.batch_start(message).pk in kept.index

    def keep(self) -> None:
        if self.keeping is not None:
            batch_cache.BATCHES.put(self.key, self.keeping)


def _touched_batches(
    messages: list[Message], shown: _Batches
) -> dict[int, tuple[presenters.ToolBatchView, set[int]]]:
    """Tool message pk → (the batch showing it, the batch's changed pks): each batch is
    presented once however many of its entries changed."""
    found: dict[int, tuple[presenters.ToolBatchView, set[int]]] = {}
    touched_in: dict[int, set[int]] = {}  # id(batch) → its changed pks
    for message in messages:
        if message.role != Role.TOOL:
            continue
        if message.pk not in found:
            batch = shown.of(message)
            if batch is None:
                continue
            # One batch, one set: a change it does not show must not forget those it does.
            touched = touched_in.setdefault(id(batch), set())
            # An entry outside a giant batch's window (docs/rendering.md#long-transcripts) changes
            # its summary only.
            for pk in _entry_pks(batch) | batch.hidden_pks:
                found[pk] = (batch, touched)
        if message.pk in found:
            found[message.pk][1].add(message.pk)
    return found


def _batch_parts(
    batch: presenters.ToolBatchView, touched: set[int], created: set[int]
) -> list[str]:
    """A new batch whole; else its summary and only the entries that changed
    (docs/rendering.md#watching-a-run): the reader's focus, selection and open <details> elsewhere
    in it stay untouched."""
    if _all_created(batch.entries, created):
        return [_render_item(batch, append=True)]
    parts = [render_partial(TEMPLATE + "#batch-summary", {"item": batch, "oob": True})]
    for entry in batch.entries:
        parts += _entry_parts(entry, touched, created, batch.entries_id)
    return parts


def _entry_parts(
    entry: presenters.ToolEntryView, touched: set[int], created: set[int], container: str
) -> list[str]:
    if not _touches(entry, touched):
        return []
    if set(entry.pks) <= created:  # a new entry: appended to its list
        return [_append(container, _render_entry(entry))]
    if set(entry.pks) & touched:
        return [_render_entry(entry)]
    if _entry_pks_of(entry.children) <= created:  # its first children: no list yet
        return [_render_entry(entry)]
    parts: list[str] = []
    for child in entry.children:
        parts += _entry_parts(child, touched, created, f"{entry.dom_id}-children")
    return parts


def _render_entry(entry: presenters.ToolEntryView) -> str:
    return render_partial(TEMPLATE + "#tool-entry", {"entry": entry})


def _append(container: str, html: str) -> str:
    return f'<div hx-swap-oob="beforeend:#{container}">{html}</div>'


def _superseded_spinners(
    messages: list[Message], created: set[int], tail: selectors.Tail
) -> list[str]:
    """docs/rendering.md#one-status-line one status line: whatever a run adds replaces its thinking
    line, in the same frame (presenters.superseded_spinners decides which lines are hidden)."""
    latest: dict[str, Message] = {}  # per run, its newest new message: one query per run
    new_in_run: dict[str, int] = {}
    for message in messages:  # in position order
        if message.pk in created and presenters.supersedes_spinner(message):
            latest[message.run_id] = message
            new_in_run[message.run_id] = new_in_run.get(message.run_id, 0) + 1
    # The line on the page before this frame, plus any this frame added before its last.
    return [
        spinner.dom_id
        for run, message in latest.items()
        for spinner in selectors.spinners_before(message, new_in_run[run] + 1, tail)
    ]


def _assistant_parts(
    message: Message,
    created: set[int],
    done: set[int],
    tail: selectors.Tail,
    runs: dict[str, dict[int, presenters.Item]],
) -> list[str]:
    """The assistant message, presented among its run's steps (S1's meta line sums
    them and sits under the last shown one). When a step is new or final the line
    may move, so the run's other shown messages are re-rendered too. A run's steps
    are read and presented once per frame (`runs`), however many of them changed."""
    key = message.run_id or f"#{message.pk}"  # outside a run: the message alone
    shown = runs.get(key)
    if shown is None:
        steps = selectors.run_steps(message, tail)
        shown = runs[key] = {item.pk: item for item in presenters.present_transcript(steps)}
    parts: list[str] = []
    if message.pk in shown:
        parts.append(_render_item(shown[message.pk], append=message.pk in created))
    elif message.pk not in created:
        parts.append(_delete(message.dom_id))  # e.g. text hidden by R3 once tool_calls came
    done.add(message.pk)
    if message.is_final or message.pk in created:
        for pk, item in shown.items():
            if pk not in done and pk not in created:
                parts.append(_render_item(item, append=False))
                done.add(pk)
    return parts


def _batch_of(
    message: Message,
    tail: selectors.Tail,
    kept: presenters.KeptRoots | None = None,
    going: bool = False,
) -> tuple[presenters.ToolBatchView | None, MessageWindow]:
    """Present the batch holding `message` from the messages it spans (read). Its
    window runs to the conversation's end unless a breaker follows (`batch_ended`)."""
    window = selectors.batch_slice(message, tail)
    items = presenters.present_transcript(window, kept=kept, run_going=going)
    return presenters.batch_containing(items, message.pk), window


def _touches(entry: presenters.ToolEntryView, pks: set[int]) -> bool:
    """Does `entry` (nested ones too) show one of `pks`? Asked of every entry of a
    batch a frame sends part of: no set built for the many that have no children."""
    if not pks.isdisjoint(entry.pks):
        return True
    return any(_touches(child, pks) for child in entry.children)


def _all_created(entries: Iterable[presenters.ToolEntryView], created: set[int]) -> bool:
    """Are all of them new (stops at the first that is not: usually the first)?"""
    return all(pk in created for entry in presenters.iter_entries(entries) for pk in entry.pks)


def _entry_pks(batch: presenters.ToolBatchView) -> set[int]:
    return _entry_pks_of(batch.entries)


def _entry_pks_of(entries: Iterable[presenters.ToolEntryView]) -> set[int]:
    return {pk for entry in presenters.iter_entries(entries) for pk in entry.pks}


# A message's HTML by its view: a frame that adds or ends a run's step re-renders the
# run's other shown messages (the meta line may move), mostly unchanged (docs/PERFORMANCE.md#p1,
# P2). A view is frozen and compared by value, and its HTML depends only on it and the
# active time zone and language. Tool batches are not kept: a float and an int that
# are equal (a progress of 1 and 1.0) would be one key for two outputs.
_MESSAGE_HTML: BoundedLRU[tuple, str] = BoundedLRU(256)
#: HTML longer than this is rendered each time, not kept: a runtime's huge answers cost
#: no memory here (at most 256 × 32 KiB).
KEPT_HTML_CHARS = 32 * 1024


#: Template name → (the compiled template or partial, its engine's autoescape): what
#: `render_to_string` looks up through the loaders on every call, found once.
_TEMPLATES: dict[str, tuple[Any, bool]] = {}


def render_partial(name: str, context: dict[str, Any]) -> str:
    """`render_to_string(name, context)`, the same HTML, without finding the template
    anew (the engines, the partials and cached loaders, the backend's wrapper): a live
    frame renders two or three partials per event (docs/PERFORMANCE.md#p2)."""
    found = _TEMPLATES.get(name)
    if found is None:
        template = get_template(name)
        found = _TEMPLATES[name] = (template.template, template.backend.engine.autoescape)
    compiled, autoescape = found
    bound = Context(context, autoescape=autoescape)
    return render_compiled(compiled, bound)


def _forget_html(**_kwargs) -> None:
    # A setting a render reads may have changed (tests), or a template file (runserver's
    # autoreload resets the template loaders then, without restarting the process).
    _MESSAGE_HTML.clear()
    _TEMPLATES.clear()


setting_changed.connect(_forget_html)
file_changed.connect(_forget_html)


def _item_html(item: presenters.Item) -> str:
    if not isinstance(item, presenters.MessageView):
        return render_partial(TEMPLATE + "#item", {"item": item})
    key = (item, timezone.get_current_timezone_name(), translation.get_language())
    html = _MESSAGE_HTML.get(key)
    if html is None:
        html = render_partial(TEMPLATE + "#item", {"item": item})
        if len(html) <= KEPT_HTML_CHARS:
            _MESSAGE_HTML.put(key, html)
    return html


def _render_item(item, *, append: bool) -> str:
    html = _item_html(item)
    if append:
        return f'<div hx-swap-oob="beforeend:#transcript">{html}</div>'
    return html


def delta_part(message_pk: int, seq: int, text: str) -> str:
    """Streamed text appended (escaped) to the bubble of a message the page shows as
    streaming, with the seq it brings so a bubble rendered later than it is not
    appended to twice (chatui.js); no database read, no Markdown (docs/PERFORMANCE.md#p5)."""
    return (
        f'<div hx-swap-oob="beforeend:#m-{message_pk} [data-stream-text]" data-delta-seq="{seq}">'
        f"{escape(text)}</div>"
    )


def _delete(dom_id: str) -> str:
    return f'<div id="{dom_id}" hx-swap-oob="delete"></div>'


def render_run_state(conversation: Conversation, *, oob: bool = False) -> str:
    """The status badge, Stop button and whether the composer takes input now."""
    context = {
        "conversation": conversation,
        "oob": oob,
        "accepts_input": pages.composer_open(conversation),
    }
    return render_partial("chatui/_run_state.html", context)


def render_run_strip(
    conversation: Conversation, tail: selectors.Tail | None = None, *, run_known: bool = False
) -> str:
    """W2: the run strip, swapped in place (hidden once no run goes)."""
    context = {
        "conversation": conversation,
        "oob": True,
        "strip": pages.run_strip(conversation, tail, run_known=run_known),
    }
    return render_partial("chatui/_run_strip.html", context)


@dataclass(frozen=True)
class ReplayPlan:
    """What a (re)connecting page that has shown `after` missed, read but not rendered:
    the whole transcript (`changes` None), or the messages changed since."""

    conversation: Conversation
    after: int
    changes: ChangeSet | None

    @property
    def whole(self) -> bool:
        return self.changes is None


def plan_replay(conversation_id, after: int) -> ReplayPlan | None:
    """The reads of `replay_frame`, before its render: None when the page is current.
    Apart so that the pages of a conversation reconnecting together can share one
    whole-transcript render (chatui.live.replays)."""
    conversation = selectors.conversation_by_pk(conversation_id)
    if conversation is None or conversation.last_seq <= after:
        return None
    if (
        after == 0
        or conversation.last_seq - after > REPLAY_LIMIT
        or selectors.run_ended_since(conversation, after)
    ):
        return ReplayPlan(conversation, after, None)
    changed = selectors.messages_changed_since(conversation, after)
    if len(changed) > PIECEMEAL_LIMIT:
        return ReplayPlan(conversation, after, None)
    changes = ChangeSet(
        changed={m.pk: m.updated_seq for m in changed},
        created={m.pk for m in changed if seq_of(m.position) > after},
        conversation_changed=True,
    )
    return ReplayPlan(conversation, after, changes)


def render_replay(plan: ReplayPlan) -> Frame:
    conversation, first_seq = plan.conversation, plan.after + 1
    if plan.changes is None:
        return full_frame(conversation, first_seq)
    # Not live: `changes` names no message removed since `after`.
    return change_frame(conversation, first_seq, conversation.last_seq, plan.changes, live=False)


def replay_frame(conversation_id, after: int) -> Frame | None:
    """What a (re)connecting page with `after` missed, or None when it is current."""
    plan = plan_replay(conversation_id, after)
    return None if plan is None else render_replay(plan)
