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
    """The verdict on `conversation`'s log; `verifier` defaults to this deployment's key."""
    verifier = verifier or Verifier.parse(signing.verifier_key())
    checkpoints = list(Checkpoint.objects.filter(conversation=conversation).order_by("size", "id"))
    signed_sizes = {checkpoint.size for checkpoint in checkpoints}
    events = Event.objects.filter(conversation=conversation).order_by("seq")
    walk = walk_chain(
        (
            Link(event.seq, event_content(event), event.content_hash, event.chain_hash)
            for event in events.iterator(chunk_size=2000)
        ),
        erased=erased_in(conversation),
        keep=signed_sizes.__contains__,
    )
    if not walk.ok:
        return Verdict(walk.through, walk.failed_at, walk.reason)
    seq = walk.through
    if conversation.last_seq > seq:
        return Verdict(seq, seq + 1, f"missing: the conversation counts {conversation.last_seq}")
    return _checked_signatures(conversation, checkpoints, walk.chain_at or {}, seq, verifier)


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
) -> Verdict:
    signed_through, signed_at = 0, None
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
