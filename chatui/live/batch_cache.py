"""A conversation's latest tool batch, kept from one live frame to the next (docs/PERFORMANCE.md
tool steps, issue 12).

A tool event's frame sends the entry that changed and its batch's summary, and the
summary counts the whole batch: reading the batch's rows and presenting its entries
on every event made a tool step cost as much as the batch. Each process keeps, per
conversation, the batch its last frame presented: its rows (`selectors.batch_slice`'s
window) and its top-level entries' views, stamped with a seq S such that the rows are
at least as new as S.

Seqs are gap-free and a frame's ChangeSet names every message its seqs changed, so a
frame for S+1..L knows every row changed since the batch was kept: it reads them
anyway (the frame's tail, chatui.live.tail_cache), splices them in (`advance`) and
presents anew only the entries they are in. A flat batch (no nesting, no numbered
attempt: most) is brought up to date entry by entry, its summary counted from the counts before
(presenters.flat_batch_after); any other is presented in full from its kept rows,
lending the entries that did not change (presenters.KeptRoots). Anything else falls
back to reading the batch (chatui.live.frames), which keeps what it read: a gap (another
process or thread wrote in between), a removed message, a rebuilt projection, a
message the batch does not hold changing, a batch that ended, a giant batch
(docs/rendering.md#long-transcripts) crossing BATCH_WINDOW for the first time. Kept batches are only
replaced by newer ones, never by older ones.

Only the projection writes Message rows, and every write comes with a seq and its
ChangeSet except a rebuild (`ingest.reproject`: new rows under the same seqs). Its own
frame drops the kept batch (`full_refresh`); a rebuild in another process bumps
`Conversation.rebuilds`, which the batch is stamped with and each ingest's ChangeSet
carries (`leads_on`). The frame's latest rows must also hold the batch's (`advance`):
they come from chatui.live.tail_cache, which is stamped the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from django.db import DEFAULT_DB_ALIAS, connections

from chatui.db.lru import NewestKept
from chatui.ingest.projection import ChangeSet
from chatui.models import Message, Role
from chatui.read.presenters import (
    FlatBatch,
    KeptRoot,
    KeptRoots,
    ToolBatchView,
    count_unpresented,
    flat_batch_after,
    is_flat,
    present_transcript,
)
from chatui.read.selectors import breaks_batch
from chatui.read.windows import BATCH_WINDOW, BatchHead, MessageWindow

#: Conversations kept per process: those with a run going, and more.
SIZE = 128
#: A batch whose rows hold more text than this (their `content`; their metadata holds
#: about as much again) is not kept: its frames read it, as before. So a runtime posting
#: huge results costs no memory here, and the cache holds at most SIZE × this.
KEPT_TEXT = 256 * 1024


@dataclass(frozen=True)
class KeptBatch:
    """A tool batch through the conversation's last message: no message in `rows`
    ends it (selectors.breaks_batch), and `rows` is exactly what `batch_slice` returns
    for any of its top-level entries (with `head`, the part not loaded,
    docs/rendering.md#long-transcripts)."""

    seq: int  # `rows` are at least as new as this seq
    rows: tuple[Message, ...]
    head: BatchHead | None
    index: dict[int, int]  # message pk → its place in `rows`
    roots: int  # top-level tool messages in `rows` (selectors._is_root)
    views: dict[int, KeptRoot] = field(default_factory=dict)
    dirty: frozenset[int] = frozenset()  # pks changed since `views` were presented
    # No nested call, no numbered attempt (presenters.is_flat): then `flat`, the batch
    # as last presented, is brought up to date entry by entry (presenters.FlatBatch).
    is_flat: bool = False
    flat: FlatBatch | None = None
    # The conversation's `rebuilds` the rows are of (ChangeSet.rebuilds; None: unknown).
    rebuilds: int | None = None

    def window(self) -> MessageWindow:
        window = MessageWindow(self.rows)
        if self.head is not None:
            window.batch_head = self.head
        return window

    def kept_roots(self) -> KeptRoots:
        return KeptRoots(views=self.views, dirty=self.dirty)

    def presented(self, kept: KeptRoots, view: ToolBatchView | None) -> KeptBatch:
        """This batch with the views `kept` presented (none dirty any more)."""
        flat = None
        if self.is_flat and view is not None and kept.tally is not None:
            flat = FlatBatch.of(view, kept.tally, kept.presented)
        return replace(self, views=kept.presented, dirty=frozenset(), flat=flat)


def present(batch: KeptBatch, going: bool = False) -> tuple[ToolBatchView | None, KeptBatch]:
    """The kept batch's view, and the batch to keep with it: entry by entry from the
    view before when the batch is flat, else presented in full (lending entries
    that did not change, presenters.KeptRoots). A kept batch runs through the
    conversation's last message: while a run goes (`going`) it is held open (W1)."""
    if batch.flat is not None:
        flat = flat_batch_after(
            batch.flat, batch.dirty, batch.rows, batch.index, batch.roots, batch.head, going
        )
        if flat is not None:
            return flat.view, replace(batch, views=flat.views, dirty=frozenset(), flat=flat)
    roots = batch.kept_roots()
    items = present_transcript(batch.window(), kept=roots, run_going=going)
    view = next((item for item in items if isinstance(item, ToolBatchView)), None)
    return view, batch.presented(roots, view)


def _is_root(message: Message) -> bool:
    return message.role == Role.TOOL and not message.parent_tool_call_id


def keep(
    seq: int,
    window: MessageWindow,
    kept: KeptRoots,
    last: Message | None,
    view: ToolBatchView | None = None,
    rebuilds: int | None = None,
) -> KeptBatch | None:
    """`window` (batch_slice's) as a kept batch, if it is one: through `last` (the
    conversation's last message), holding no breaker, and starting where any of its
    entries' slice would (after a breaker, or at its BATCH_WINDOW-th latest entry)."""
    if not window or last is None or window[-1].pk != last.pk:
        return None
    head = getattr(window, "batch_head", None)
    roots = sum(map(_is_root, window))
    if roots > BATCH_WINDOW or (head is not None and roots < BATCH_WINDOW):
        return None  # a slice from an entry before the window (its start), not the batch's
    if roots == BATCH_WINDOW and not _is_root(window[0]):
        return None
    if any(map(breaks_batch, window)):
        return None  # a nested entry whose parent is in an earlier batch
    index = {message.pk: n for n, message in enumerate(window)}
    flat = all(map(is_flat, window))
    batch = KeptBatch(seq, tuple(window), head, index, roots, is_flat=flat, rebuilds=rebuilds)
    return batch.presented(kept, view)


def leads_on(batch: KeptBatch, first_seq: int, changes: ChangeSet) -> bool:
    """Do `changes` (of seqs `first_seq`…) follow on from the kept batch: no gap, and
    the projection not rebuilt since (in any process: `Conversation.rebuilds`)?"""
    return (
        batch.seq == first_seq - 1
        and changes.rebuilds is not None
        and batch.rebuilds == changes.rebuilds
        and not changes.full_refresh
    )


def advance(
    batch: KeptBatch, last_seq: int, changes: ChangeSet, rows: Iterable[Message], latest
) -> KeptBatch | None:
    """`batch` as of `last_seq`, from the frame's `changes` since `batch.seq` and the
    `rows` it read for them; None when they change it in a way this does not follow
    (the frame then reads the batch). `latest` are the conversation's latest messages
    as the frame read them (selectors.Tail)."""
    if changes.removed or changes.full_refresh:
        return None
    read = {message.pk: message for message in rows}
    spliced = list(batch.rows)
    new: list[Message] = []
    fresh: list[Message] = []
    roots = batch.roots
    for pk in changes.changed:
        message = read.get(pk)
        at = batch.index.get(pk)
        if message is None:
            return None  # streamed text (not read), or gone since
        if at is not None:
            old = spliced[at]
            if (old.tool_call_id, old.parent_tool_call_id) != (
                message.tool_call_id,
                message.parent_tool_call_id,
            ):
                return None  # its nesting may move other entries
            roots += _is_root(message) - _is_root(old)
            spliced[at] = message
        elif pk in changes.created:
            new.append(message)
            roots += _is_root(message)
        else:
            return None  # before the batch: an earlier batch's, or its part not loaded
        fresh.append(message)
    if any(map(breaks_batch, fresh)):
        return None  # the batch ended (text, a user message)
    spliced, index = _appended(spliced, batch.index, new)
    if not _holds_latest(spliced, index, latest):
        return None
    if batch.is_flat and not all(map(is_flat, fresh)):
        batch = replace(batch, is_flat=False, flat=None)
    return _windowed(batch, last_seq, spliced, index, roots, changes)


def follow(
    conversation_id, first_seq: int, last_seq: int, changes: ChangeSet, key: tuple | None = None
) -> None:
    """A frame that changed no message of the kept batch (the conversation's status,
    text streamed into a message before it): the batch is as new as `last_seq`.
    `key`: the conversation's `key_of`, when the frame has it already."""
    key = key or key_of(conversation_id)
    batch = BATCHES.get(key)
    if batch is None or not leads_on(batch, first_seq, changes) or changes.removed:
        return
    if any(pk in batch.index or pk in changes.created for pk in changes.changed):
        return
    BATCHES.put(key, replace(batch, seq=last_seq))


def _appended(
    rows: list[Message], index: dict[int, int], new: list[Message]
) -> tuple[list[Message], dict[int, int]]:
    """`rows` with the `new` messages in position order, and their index (a copy)."""
    if not new:
        return rows, index
    new.sort(key=lambda message: message.position)
    if rows and new[0].position < rows[-1].position:  # a newer write was read already
        rows = sorted(rows + new, key=lambda message: message.position)
        return rows, {message.pk: n for n, message in enumerate(rows)}
    index = dict(index)
    index.update((message.pk, len(rows) + n) for n, message in enumerate(new))
    return rows + new, index


def _holds_latest(spliced: list[Message], index: dict[int, int], latest) -> bool:
    """Does the batch hold every one of the frame's latest messages from its start on?
    Not when another process rebuilt the projection (new pks), nor when a newer write
    than this frame's committed already (the frame then reads the batch as it is)."""
    if not spliced or not latest.messages:
        return False
    start = spliced[0].position
    return all(
        message.pk in index and spliced[index[message.pk]].position == message.position
        for message in latest.messages
        if message.position >= start
    )


def _windowed(
    batch: KeptBatch,
    seq: int,
    spliced: list[Message],
    index: dict[int, int],
    roots: int,
    changes: ChangeSet,
) -> KeptBatch | None:
    """The batch cut to its latest BATCH_WINDOW top-level entries
    (docs/rendering.md#long-transcripts), as
    `batch_slice` cuts it: the entries that leave the window are counted in its head."""
    head = batch.head
    if roots < BATCH_WINDOW and head is not None:
        return None
    dirty = batch.dirty | frozenset(changes.changed)
    if roots <= BATCH_WINDOW and (roots < BATCH_WINDOW or _is_root(spliced[0])):
        return replace(batch, seq=seq, rows=tuple(spliced), index=index, roots=roots, dirty=dirty)
    cut = 0
    while roots > BATCH_WINDOW or not _is_root(spliced[cut]):
        roots -= _is_root(spliced[cut])
        cut += 1
    dropped = [message for message in spliced[:cut] if message.role == Role.TOOL]
    if head is None and any(map(_is_root, dropped)):
        return None  # first crossing: the part before is counted by query once
    if head is not None:
        head = _counted(head, dropped)
    rows = tuple(spliced[cut:])
    index = {message.pk: n for n, message in enumerate(rows)}
    return replace(batch, seq=seq, rows=rows, head=head, index=index, roots=roots, dirty=dirty)


def _counted(head: BatchHead, tools: list[Message]) -> BatchHead:
    """`head` with `tools` (leaving the window) counted as `selectors._batch_head`
    counts a batch's part that is not loaded, from the same columns."""
    failed, skipped, running, updated_seq = count_unpresented(tools)
    return replace(
        head,
        roots=head.roots + sum(map(_is_root, tools)),
        failed=head.failed + failed,
        skipped=head.skipped + skipped,
        running=head.running + running,
        updated_seq=max(head.updated_seq, updated_seq),
    )


# -- the kept batches -------------------------------------------------------------------


class BatchCache(NewestKept[tuple, KeptBatch]):
    """Per process, thread-safe, least recently used out: built-in agents ingest from
    their own threads, the API and the ingest channel from writer threads."""

    def newness(self, value: KeptBatch) -> tuple:
        return (value.seq,)

    def texts(self, value: KeptBatch) -> list[str]:
        return [row.content or "" for row in value.rows]


BATCHES = BatchCache(SIZE, KEPT_TEXT)


def key_of(conversation_id) -> tuple:
    """The database too: tests and replay's scratch databases reuse primary keys."""
    connection = connections[DEFAULT_DB_ALIAS]
    return (DEFAULT_DB_ALIAS, connection.settings_dict["NAME"], str(conversation_id))
