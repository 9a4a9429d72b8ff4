"""A conversation's log checked against its own hashes and signed checkpoints
(docs/auditing.md#checking-a-log).

Every event's content hash is recomputed from its columns (`chain.event_content`), its
chain hash from the one before, in seq order from 1 with no gap; every checkpoint's
signature is checked with this deployment's key, and the chain hash it signed against the
log's at its size. The first thing that does not hold is the verdict: an event edited,
deleted or moved fails at its seq; hashes recomputed without the key fail at a checkpoint.
`manage.py verify_log` and the admin's audit page show the same `Verdict`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chatui_client.proof import (
    ERASURE_TYPE,
    Link,
    Verifier,
    erasure_claims,
    open_note,
    walk_chain,
)
from chatui_client.proof import (
    Checkpoint as CheckpointText,
)
from django.utils.dateparse import parse_datetime

from chatui.db.lru import BoundedLRU
from chatui.ingest import signing
from chatui.ingest.chain import event_content
from chatui.models import Checkpoint, Conversation, Event


@dataclass(frozen=True)
class Verdict:
    #: The last seq whose chain holds (0: none).
    through: int
    #: The first seq that fails, with why; None when the whole log holds.
    failed_at: int | None = None
    reason: str = ""
    #: The last checkpoint whose signature and chain hash hold.
    signed_through: int = 0
    signed_at: datetime | None = None

    @property
    def ok(self) -> bool:
        return self.failed_at is None

    def __str__(self) -> str:
        if not self.ok:
            return f"fails at seq {self.failed_at}: {self.reason}"
        if not self.signed_at:
            return f"ok through seq {self.through}, not signed yet"
        return (
            f"ok through seq {self.through}, signed through seq {self.signed_through} "
            f"at {self.signed_at.isoformat().replace('+00:00', 'Z')}"
        )


def verify(conversation: Conversation, verifier: Verifier | None = None) -> Verdict:
    """The verdict on `conversation`'s whole log; `verifier` defaults to this deployment's
    key. What `verify_log` runs."""
    verdict, held = _verify(conversation, verifier, None)
    if held is not None:
        _HELD.put(_held_key(conversation), held)
    else:
        _HELD.discard(_held_key(conversation))
    return verdict


def verify_since_held(conversation: Conversation, verifier: Verifier | None = None) -> Verdict:
    """The admin's verdict: the log checked from where this process last found it whole
    (its seq and chain hash there, and the checkpoints it checked), not re-hashed from
    seq 1 at every view — the events since, the chain hash where it held, and the new
    checkpoints. An event before that point changed since is caught by `verify` (and
    `verify_log`), not here, unless its chain hashes were recomputed up to that point
    (docs/auditing.md#checking-a-log)."""
    key = _held_key(conversation)
    held = _HELD.get(key)
    if held is not None:
        stored = Event.objects.filter(conversation=conversation, seq=held.through)
        if list(stored.values_list("chain_hash", flat=True)) != [held.chain_hash]:
            held = None  # changed where it held: from the start
    verdict, now_held = _verify(conversation, verifier, held)
    if now_held is not None:
        _HELD.put(key, now_held)
    else:
        _HELD.discard(key)
    return verdict


@dataclass(frozen=True)
class _Held:
    """A log as last found whole: through `through`, whose chain hash is `chain_hash`,
    with the checkpoints `checked` (ids) verified, the last through `signed_through`."""

    through: int
    chain_hash: str
    checked: frozenset[int]
    signed_through: int
    signed_at: datetime | None


#: (database, conversation) -> where its log last held, in this process.
_HELD: BoundedLRU[tuple[str, Any], _Held] = BoundedLRU(4096)


def _held_key(conversation: Conversation) -> tuple[str, Any]:
    return (conversation._state.db or "default", conversation.pk)


def _verify(
    conversation: Conversation, verifier: Verifier | None, held: _Held | None
) -> tuple[Verdict, _Held | None]:
    """The verdict, checking only what `held` has not (all of it without), and where the
    log holds now (None when it does not)."""
    verifier = verifier or Verifier.parse(signing.verifier_key())
    checkpoints = list(Checkpoint.objects.filter(conversation=conversation).order_by("size", "id"))
    unchecked = [c for c in checkpoints if held is None or c.id not in held.checked]
    wanted = {checkpoint.size for checkpoint in unchecked} | {conversation.last_seq}
    after = held.through if held else 0
    events = Event.objects.filter(conversation=conversation, seq__gt=after).order_by("seq")
    walk = walk_chain(
        (
            Link(event.seq, event_content(event), event.content_hash, event.chain_hash)
            for event in events.iterator(chunk_size=2000)
        ),
        erased=erased_in(conversation),
        keep=wanted.__contains__,
        after=after,
        previous_hex=held.chain_hash if held else "",
    )
    if not walk.ok:
        return Verdict(walk.through, walk.failed_at, walk.reason), None
    seq = walk.through
    if conversation.last_seq > seq:
        missing = f"missing: the conversation counts {conversation.last_seq}"
        return Verdict(seq, seq + 1, missing), None
    chain_at = walk.chain_at or {}
    if held is not None:
        chain_at[held.through] = held.chain_hash
        earlier = {c.size for c in unchecked if c.size < held.through}
        if earlier:  # a checkpoint new to this process, of a size checked before
            stored = Event.objects.filter(conversation=conversation, seq__in=earlier)
            chain_at.update(stored.values_list("seq", "chain_hash"))
    signed = (held.signed_through, held.signed_at) if held else (0, None)
    verdict = _checked_signatures(conversation, unchecked, chain_at, seq, verifier, signed)
    if not verdict.ok:
        return verdict, None
    head = chain_at.get(seq, "") if seq else ""
    checked = frozenset(checkpoint.id for checkpoint in checkpoints)
    return verdict, _Held(seq, head, checked, verdict.signed_through, verdict.signed_at)


def erased_in(conversation: Conversation) -> dict[int, tuple[int, str]]:
    """What the conversation's `audit.erasure` events say they erased (erased seq ->
    (the erasure's seq, the content hash it recorded)); the walk checks each claim."""
    claims: dict[int, tuple[int, str]] = {}
    erasures = Event.objects.filter(conversation=conversation, type=ERASURE_TYPE).order_by("seq")
    for seq, payload in erasures.values_list("seq", "payload"):
        claims.update(erasure_claims(seq, payload))
    return claims


def _checked_signatures(
    conversation: Conversation,
    checkpoints: list[Checkpoint],
    chain_at: dict[int, str],
    through: int,
    verifier: Verifier,
    signed: tuple[int, datetime | None] = (0, None),
) -> Verdict:
    signed_through, signed_at = signed
    for checkpoint in checkpoints:
        try:
            text = CheckpointText.parse(open_note(checkpoint.note, verifier))
        except ValueError as problem:
            return Verdict(
                through, checkpoint.size, f"the checkpoint through it is not signed: {problem}"
            )
        if text.conversation_id != str(conversation.pk):
            return Verdict(through, text.size, "its checkpoint is another conversation's")
        if text.size > through:
            return Verdict(
                through, through + 1, f"missing: a checkpoint was signed through seq {text.size}"
            )
        if chain_at.get(text.size) != text.chain_hash:
            return Verdict(
                through,
                text.size,
                "the log differs from what was signed here (hashes recomputed after signing)",
            )
        signed_through, signed_at = text.size, parse_datetime(text.time)
    return Verdict(through, signed_through=signed_through, signed_at=signed_at)
