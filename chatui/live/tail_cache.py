"""A conversation's latest messages kept from one live frame to the next (docs/PERFORMANCE.md#p2,
issue 12).

Every live frame starts from the conversation's newest messages (`selectors.Tail`,
`latest_messages`): the changed messages, their tool batch and their run's thinking
lines are usually among them. Reading them (16 rows: JSON, datetimes, a UUID each) was
about a quarter of a single event's frame, though an event changes one or two of them.
Each process keeps, per conversation, the tail its last live frame used, stamped with a
seq S such that its rows are at least as new as S, and with the conversation's
`rebuilds`.

Seqs are gap-free and a frame's ChangeSet names every message its seqs changed, so a
frame for S+1..L reads only those rows, by pk (`advance`), and splices them in: a
changed row is replaced, a new one appended (a message's position comes from the seq
that created it, so a new one is never before a kept one) and the oldest trimmed
beyond the tail's size. Anything else reads the tail afresh, as before, and keeps what
it read: a gap (this process did not render a frame: nobody watched, another process
or thread wrote), a removed message (a run's end), a frame wanting more messages than
are kept (a batched ingest, `frames._tail_size`), a changed row gone or not where it
should be.

An ingest's own on-commit frame reads not even those: its ChangeSet carries the rows
as the projection wrote them (`ChangeSet.written`, chatui.ingest.service `_announced`), each
equal to the row read back, but for rows whose text was appended in SQL.

Frames that change no message but by streamed text (`changes.appended`: the frame
carries the text, reads nothing) keep the tail following (`follow`), with those rows
marked `stale`: their `content` is older than the seq. The next frame that reads the
tail reads them again. A replay's frame (`live=False`, its ChangeSet names no removed
message) neither uses nor keeps a tail.

Only the projection writes Message rows, and every write comes with a seq and its
ChangeSet but a rebuild (`ingest.reproject`: new rows under the same seqs). Its own
frame drops the kept tail (`full_refresh`); a rebuild in another process bumps
`Conversation.rebuilds`, which each ingest reads under the conversation's row lock
and hands on in its ChangeSet: a kept tail of another count is not used.

Kept values are frozen and replaced whole, never changed in place: writer threads
render frames of one conversation at the same time, and only a newer one replaces
one kept (TailCache.put).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from chatui.db.lru import NewestKept
from chatui.ingest.projection import ChangeSet
from chatui.models import Message
from chatui.read.selectors import Tail, latest_messages, read_by_pk

from .batch_cache import key_of

#: Conversations kept per process: those with a run going, and more.
SIZE = 128
#: A tail whose rows hold more text than this is not kept (its frames read it): a
#: runtime posting huge results costs no memory here (as chatui.live.batch_cache.KEPT_TEXT).
KEPT_TEXT = 256 * 1024


@dataclass(frozen=True)
class KeptTail:
    """What `latest_messages(limit)` gave (or would give) once seq `seq` was committed."""

    seq: int  # the rows are at least as new as this seq
    rebuilds: int  # the conversation's rebuilds they are of
    limit: int
    messages: tuple[Message, ...]  # in position order; all of them when `complete`
    complete: bool
    stale: frozenset[int] = frozenset()  # pks whose text was streamed since read

    @classmethod
    def of(cls, seq: int, rebuilds: int, limit: int, tail: Tail) -> KeptTail:
        return cls(seq, rebuilds, limit, tuple(tail.messages), tail.complete)

    def tail(self, limit: int) -> Tail | None:
        """What `latest_messages(limit)` returns, if this holds it."""
        if self.stale or (limit > self.limit and not self.complete):
            return None
        rows = self.messages[-limit:]
        return Tail(list(rows), complete=self.complete and len(self.messages) < limit)


@dataclass(frozen=True)
class FrameTail:
    """A live frame's tail, and the rows it read by pk for it (changed ones older than
    the tail too: `selectors.messages_by_pk` does not read them again)."""

    tail: Tail
    read: dict[int, Message]


def frame_tail(
    conversation_id, limit: int, span: tuple[int, int, ChangeSet] | None, key: tuple | None = None
) -> FrameTail:
    """The tail of a frame for `span` (first seq, last seq, changes; None for a replay's
    frame): from the kept one when it leads on to the span, else read; kept after.
    `key`: the conversation's `key_of`, when the frame has it already."""
    if span is None:
        return FrameTail(latest_messages(conversation_id, limit), {})
    first, last, changes = span
    if changes.rebuilds is None or changes.full_refresh:
        return FrameTail(latest_messages(conversation_id, limit), dict(changes.written))
    key = key or key_of(conversation_id)
    kept = TAILS.get(key)
    if kept is not None and _leads_on(kept, first, changes):
        found = advance(kept, last, changes, limit)
        tail = found[0].tail(limit) if found is not None else None
        if found is not None and tail is not None:
            TAILS.put(key, found[0])
            return FrameTail(tail, found[1])
    tail = latest_messages(conversation_id, limit)
    TAILS.put(key, KeptTail.of(last, changes.rebuilds, limit, tail))
    return FrameTail(tail, dict(changes.written))


def _leads_on(kept: KeptTail, first: int, changes: ChangeSet) -> bool:
    return (
        kept.seq == first - 1
        and kept.rebuilds == changes.rebuilds
        and not changes.removed
        and not changes.full_refresh
    )


def advance(
    kept: KeptTail, last: int, changes: ChangeSet, limit: int
) -> tuple[KeptTail, dict[int, Message]] | None:
    """`kept` as of `last`, from the rows `changes` names (and its stale ones) read by
    pk, and those rows; None when they do not splice in (the frame reads the tail)."""
    if limit > kept.limit and not kept.complete:
        return None  # more wanted than kept: the part before is not known
    wanted = set(changes.changed) | kept.stale
    # The rows the frame's own ingest wrote are not read back (ChangeSet.written).
    read = {pk: changes.written[pk] for pk in wanted & changes.written.keys()}
    if unread := wanted - read.keys():
        read.update((message.pk, message) for message in read_by_pk(unread))
    if len(read) != len(wanted):
        return None  # gone since (a later write removed it, a rebuild elsewhere)
    rows = _spliced(kept, read.values(), changes.created)
    if rows is None:
        return None
    size = max(kept.limit, limit)
    complete = kept.complete and len(rows) < size
    rows = rows[-size:]
    return KeptTail(last, kept.rebuilds, size, tuple(rows), complete), read


def _spliced(kept: KeptTail, read: Iterable[Message], created: set[int]) -> list[Message] | None:
    """The kept rows with the `read` ones in their place, new ones in position order."""
    at = {message.pk: n for n, message in enumerate(kept.messages)}
    rows = list(kept.messages)
    first = rows[0].position if rows else None
    new: list[Message] = []
    for message in read:
        n = at.get(message.pk)
        if n is not None:
            if rows[n].position != message.position:
                return None  # not the row kept: a rebuild
            rows[n] = message
        elif message.pk in created:
            new.append(message)
        elif kept.complete or first is None or message.position > first:
            return None  # changed, not new, yet not kept where it should be
    if not new:
        return rows
    rows += new
    if first is not None and min(m.position for m in new) < first and not kept.complete:
        return None  # never: a new message's seq is after every kept one's
    rows.sort(key=lambda message: message.position)  # a newer write read already
    return rows


def follow(
    conversation_id, first: int, last: int, changes: ChangeSet, key: tuple | None = None
) -> None:
    """A frame that read no tail (it changed no message but by streamed text, or only
    the conversation): the kept tail is as new as `last`, but for the text of the
    messages streamed into, marked stale (read again by the next frame that reads)."""
    if changes.rebuilds is None:
        return
    key = key or key_of(conversation_id)
    kept = TAILS.get(key)
    if kept is None or not _leads_on(kept, first, changes) or changes.created:
        return
    if any(pk not in changes.appended for pk in changes.changed):
        return  # changed otherwise: not this function's case
    held = {message.pk for message in kept.messages}
    stale = kept.stale | {pk for pk in changes.appended if pk in held}
    TAILS.put(key, replace(kept, seq=last, stale=frozenset(stale)))


def discard(conversation_id) -> None:
    TAILS.discard(key_of(conversation_id))


class TailCache(NewestKept[tuple, KeptTail]):
    """Per process, thread-safe, least recently used out (as chatui.live.batch_cache)."""

    def newness(self, value: KeptTail) -> tuple:
        return (value.rebuilds, value.seq)

    def texts(self, value: KeptTail) -> list[str]:
        return [message.content or "" for message in value.messages]


TAILS = TailCache(SIZE, KEPT_TEXT)
