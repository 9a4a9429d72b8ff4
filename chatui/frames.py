"""Live frames: the HTML partials an ingest changed, rendered once for every viewer.

A frame is a marker comment `<!--seq FIRST LAST-->` followed by top-level
elements that the htmx ws extension swaps out-of-band by id (SPEC §5):
replaced in place when the element exists, appended to #transcript when the
message is new, deleted when the projection removed it. When a run ends (S3)
or the projection is rebuilt, the frame is the whole transcript instead, so
every open page ends equal to a fresh load.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.template.loader import render_to_string

from . import pages, presenters, selectors
from .models import Conversation, Message, Role, seq_of
from .projection import ChangeSet

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


def marker(first_seq: int, last_seq: int) -> str:
    return f"<!--seq {first_seq} {last_seq}-->"


# -- building frames --------------------------------------------------------------


def full_frame(conversation: Conversation, first_seq: int = 0) -> Frame:
    """The whole (windowed) transcript, swapped in place of #transcript.

    `conversation.last_seq` was read before the messages are, so the HTML is at
    least as new as the seq it claims."""
    html = render_to_string(TEMPLATE + "#transcript-oob", pages.transcript_context(conversation))
    html += render_run_state(conversation, oob=True)
    return Frame(first_seq, conversation.last_seq, marker(first_seq, conversation.last_seq) + html)


def change_frame(
    conversation: Conversation, first_seq: int, last_seq: int, changes: ChangeSet
) -> Frame:
    """The partials `changes` touched. Rows are read as they are now, possibly newer
    than `last_seq`: swaps are idempotent, so a later frame re-applying is harmless,
    while claiming seqs this frame does not cover would lose them."""
    if changes.full_refresh or len(changes.changed) > PIECEMEAL_LIMIT:
        return full_frame(conversation, first_seq)
    parts = [marker(first_seq, last_seq)]
    parts += [_delete(f"m-{pk}") for pk in changes.removed]
    parts += _changed_parts(changes.changed, changes.created)
    if changes.conversation_changed:
        parts.append(render_run_state(conversation, oob=True))
    return Frame(first_seq, last_seq, "".join(parts))


def _changed_parts(changed_pks: Iterable[int], created: set[int]) -> list[str]:
    parts: list[str] = []
    done_batches: set[str] = set()
    done_messages: set[int] = set()
    in_done_batches: set[int] = set()  # a batch is read and rendered once per frame
    messages = selectors.messages_by_pk(changed_pks)
    for message in messages:
        if message.role == Role.TOOL:
            if message.pk in in_done_batches:
                continue
            batch = _batch_of(message)
            if batch is None or batch.dom_id in done_batches:
                continue
            done_batches.add(batch.dom_id)
            in_done_batches |= _entry_pks(batch) | batch.hidden_pks
            is_new = all(pk in created for pk in _entry_pks(batch))
            parts.append(_render_item(batch, append=is_new))
            continue
        if message.role == Role.ASSISTANT:
            parts += _assistant_parts(message, created, done_messages)
            continue
        items = presenters.present_transcript([message])
        if items:
            parts.append(_render_item(items[0], append=message.pk in created))
    return parts


def _assistant_parts(message: Message, created: set[int], done: set[int]) -> list[str]:
    """The assistant message, presented among its run's steps (S1's meta line sums
    them and sits under the last shown one). When a step is new or final the line
    may move, so the run's other shown messages are re-rendered too."""
    steps = selectors.run_steps(message)
    shown = {item.pk: item for item in presenters.present_transcript(steps)}
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


def _batch_of(message: Message) -> presenters.ToolBatchView | None:
    """Present the batch holding `message` from the messages it spans."""
    items = presenters.present_transcript(selectors.batch_slice(message))
    return presenters.batch_containing(items, message.pk)


def _entry_pks(batch: presenters.ToolBatchView) -> set[int]:
    return {entry.pk for entry in presenters.iter_entries(batch.entries)}


def _render_item(item, *, append: bool) -> str:
    html = render_to_string(TEMPLATE + "#item", {"item": item})
    if append:
        return f'<div hx-swap-oob="beforeend:#transcript">{html}</div>'
    return html


def _delete(dom_id: str) -> str:
    return f'<div id="{dom_id}" hx-swap-oob="delete"></div>'


def render_run_state(conversation: Conversation, *, oob: bool = False) -> str:
    """The status badge, Stop button and whether the composer takes input now."""
    context = {
        "conversation": conversation,
        "oob": oob,
        "accepts_input": pages.composer_open(conversation),
    }
    return render_to_string("chatui/_run_state.html", context)


def replay_frame(conversation_id, after: int) -> Frame | None:
    """What a (re)connecting page with `after` missed, or None when it is current."""
    conversation = selectors.conversation_by_pk(conversation_id)
    if conversation is None or conversation.last_seq <= after:
        return None
    run_ended = selectors.run_ended_since(conversation, after)
    if after == 0 or run_ended or conversation.last_seq - after > REPLAY_LIMIT:
        return full_frame(conversation, after + 1)
    changed = selectors.messages_changed_since(conversation, after)
    changes = ChangeSet(
        changed={m.pk: m.updated_seq for m in changed},
        created={m.pk for m in changed if seq_of(m.position) > after},
        conversation_changed=True,
    )
    return change_frame(conversation, after + 1, conversation.last_seq, changes)
