"""Erasing events' content while keeping the log's proof (docs/auditing.md#erasing-content).

`erase_content` replaces the payloads of the events named with tombstones
(chatui.ingest.tombstones: who, when, why; what places each event kept, every text gone),
keeps their content hashes, and records the erasure as an `audit.erasure` event through
`ingest` — the erased seqs with their content hashes, the reason and who — so the chain
still verifies: the walk (chatui_client.proof.walk_chain) takes an erased event's content
hash as its erasure recorded it. Then the conversation is re-projected: its messages,
runs, notes and search index rows are rebuilt from the tombstones, and open pages get a
full frame. Exports, `?at=` and replay read the log, so they show the tombstones too.

The management command (`erase_content`) and the admin's action call `erase_content`; a
runtime cannot post `audit.erasure` (chatui.ingest.events.SERVER_ONLY_TYPES).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from chatui_client.proof import ERASURE_TYPE, erasure_claims
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from chatui.access import can_view
from chatui.models import Conversation, Event, Note
from chatui.text import isoformat

from . import attachments
from .service import ingest, reproject
from .tombstones import is_tombstone, tombstone
from .values import EventError

ERASE = "chatui.erase_content"
MAX_REASON_CHARS = 500


@dataclass(frozen=True)
class Erasure:
    #: The seq of the `audit.erasure` event that records it.
    seq: int
    #: The seqs whose content was erased.
    erased: list[int]


def erase_content(
    conversation: Conversation,
    user: AbstractBaseUser,
    seqs: Iterable[Any] | None,
    reason: str,
) -> Erasure:
    """Erase the content of `conversation`'s events at `seqs` (None: every event but the
    erasures), for `reason`, by `user`. EventError, nothing changed: 404 if `user` cannot
    see the conversation, 403 without chatui.erase_content, 400 naming the problem for a
    missing reason or a seq that is not an event of the conversation (or is erased
    already, or is an erasure)."""
    if not can_view(user, conversation):
        raise EventError("conversation not found", status=404)
    if not user.has_perm(ERASE):
        raise EventError("erasing content needs the chatui.erase_content permission", status=403)
    reason = reason.strip() if isinstance(reason, str) else ""
    if not reason:
        raise EventError("give the reason for the erasure", field="reason")
    if len(reason) > MAX_REASON_CHARS:
        raise EventError(
            f"the reason must be at most {MAX_REASON_CHARS} characters", field="reason"
        )
    wanted = _checked_seqs(seqs)
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        rows = _erasable(locked, wanted)
        by = user.get_username()[:200]
        recorded = ingest(
            locked,
            {
                "type": ERASURE_TYPE,
                "erased": [{"seq": row.seq, "content_hash": row.content_hash} for row in rows],
                "reason": reason,
                "by": by,
            },
        )
        at = isoformat(timezone.now())
        title_erased = bool(locked.title) and any(_holds_title(locked.title, row) for row in rows)
        for row in rows:
            erased = tombstone(
                row.payload, reason=reason, by=by, at=at, erasure_seq=recorded.last_seq
            )
            Event.objects.filter(pk=row.pk).update(payload=erased)
        # An erased note's row goes (re-projection keeps the rows it finds: one per seq).
        Note.objects.filter(conversation=locked, seq__in=[row.seq for row in rows]).delete()
        if title_erased:  # taken from an erased message: taken again from what is left
            Conversation.objects.filter(pk=locked.pk).update(title="")
        # An erased MCP result's images and files go too (docs/rendering.md#g21).
        attachments.release_unreferenced(locked.pk)
        reproject(locked)
    conversation.refresh_from_db()
    return Erasure(recorded.last_seq, [row.seq for row in rows])


def _checked_seqs(seqs: Iterable[Any] | None) -> list[int] | None:
    if seqs is None:
        return None
    wanted = list(seqs)
    for seq in wanted:
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
            raise EventError(f"not a seq: {str(seq)[:40]!r} (a whole number from 1)", field="seq")
    if not wanted:
        raise EventError("name the seqs to erase", field="seq")
    return sorted(set(wanted))


def _erasable(conversation: Conversation, wanted: list[int] | None) -> list[Event]:
    events = Event.objects.filter(conversation=conversation).order_by("seq")
    erased: dict[int, tuple[int, str]] = {}
    for seq, payload in events.filter(type=ERASURE_TYPE).values_list("seq", "payload"):
        erased.update(erasure_claims(seq, payload))
    if wanted is None:
        rows = [
            row
            for row in events.exclude(type=ERASURE_TYPE)
            if not (row.seq in erased and is_tombstone(row.payload))
        ]
        if not rows:
            raise EventError("nothing to erase: the conversation has no events left to erase")
        return rows
    rows = list(events.filter(seq__in=wanted))
    found = {row.seq for row in rows}
    for seq in wanted:
        if seq not in found:
            raise EventError(
                f"no event at seq {seq} in this conversation (its log runs from 1 to "
                f"{conversation.last_seq})",
                field="seq",
            )
    for row in rows:
        if row.type == ERASURE_TYPE:
            raise EventError(f"seq {row.seq} is an erasure's record: it is not erased", field="seq")
        if row.seq in erased:
            raise EventError(f"seq {row.seq} is erased already", field="seq")
    return rows


def _holds_title(title: str, row: Event) -> bool:
    shown = title.removesuffix("…").strip()
    return bool(shown) and any(shown in " ".join(text.split()) for text in _texts(row.payload))


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for child in value.values():
            yield from _texts(child)
    elif isinstance(value, list):
        for child in value:
            yield from _texts(child)
