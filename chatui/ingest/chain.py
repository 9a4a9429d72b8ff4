"""The hash chain and the signed checkpoints, written in ingest's transaction
(docs/auditing.md#verifying-a-log).

Each event's `content_hash` is SHA-256 of the RFC 8785 form of the event as the events API
serves it (`event_content`), its `chain_hash` SHA-256(previous chain hash ‖ content hash),
per conversation: each conversation is its own log, signed by checkpoints of its own
(`Checkpoint`: origin, conversation, size, chain hash, time, a C2SP signed note). The
arithmetic is `chatui_client.proof`'s, which `chatui-verify` runs offline.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from chatui_client.proof import GENESIS, chain_hash, content_hash
from chatui_client.proof import Checkpoint as CheckpointText

from chatui.db.prepared import PreparedInsert
from chatui.fields import EncodedJSON
from chatui.models import Checkpoint, Conversation, Event
from chatui.text import isoformat

from . import signing

logger = logging.getLogger(__name__)

#: While events arrive, a conversation's log is signed at most this often (and at each
#: run's end).
CHECKPOINT_EVERY = timedelta(minutes=1)
# Compiled once (chatui.db.prepared): `objects.create` cost P2's batches, which end a run
# every ~60 events, 7 µs an event (docs/PERFORMANCE.md#p9-chain).
CHECKPOINT_INSERT = PreparedInsert(Checkpoint)


def event_content(event: Event) -> dict[str, Any]:
    """The event as the events API serves it, which its content hash is of."""
    return {
        "seq": event.seq,
        "type": event.type,
        "event_id": event.event_id,
        "run_id": event.run_id or None,
        "timestamp": isoformat(event.timestamp),
        "payload": event.payload,
    }


def chain(rows: Iterable[Event], previous_hex: str) -> str:
    """Give each new row its hashes, chained from `previous_hex` (the conversation's
    `chain_hash`, "" before its first event); returns the last chain hash."""
    previous = bytes.fromhex(previous_hex) if previous_hex else GENESIS
    # The events of a batch mostly share one time (received_at, when the runtime gave
    # none): written once, not once an event (~1.8 µs each, docs/PERFORMANCE.md#p9-chain).
    written_at: tuple[datetime | None, str] = (None, "")
    for row in rows:
        if row.timestamp != written_at[0]:
            written_at = (row.timestamp, isoformat(row.timestamp))
        payload = row.payload
        content = content_hash(
            {
                "seq": row.seq,
                "type": row.type,
                "event_id": row.event_id,
                "run_id": row.run_id or None,
                "timestamp": written_at[1],
                "payload": payload,
            },
            # An OTLP span's payload comes with its canonical text: not encoded again.
            payload_text=payload.text
            if type(payload) is EncodedJSON and payload.canonical
            else None,
        )
        previous = chain_hash(previous, content)
        row.content_hash, row.chain_hash = content.hex(), previous.hex()
    return previous.hex()


def checkpoint_due(conversation: Conversation, now: datetime, *, run_ended: bool) -> bool:
    signed_at = conversation.signed_at
    return run_ended or signed_at is None or now - signed_at >= CHECKPOINT_EVERY


def sign_checkpoint(conversation: Conversation, now: datetime) -> Checkpoint | None:
    """A signed checkpoint of the conversation's log as it stands (its `last_seq` and
    `chain_hash`), saved; None, logged, when the signing key cannot be had: the events
    are kept, and verify_log shows the log unsigned since."""
    try:
        signer = signing.signer()
    except (OSError, ValueError):
        logger.exception("no checkpoint for conversation %s: the signing key", conversation.pk)
        return None
    text = CheckpointText(
        origin=signer.name,
        conversation_id=str(conversation.pk),
        size=conversation.last_seq,
        chain_hash=conversation.chain_hash,
        time=isoformat(now.replace(microsecond=0)),
    ).text()
    conversation.signed_at = now
    checkpoint = Checkpoint(
        conversation_id=conversation.pk,
        size=conversation.last_seq,
        chain_hash=conversation.chain_hash,
        signed_at=now,
        note=signer.sign(text),
    )
    CHECKPOINT_INSERT.run([checkpoint])
    return checkpoint
