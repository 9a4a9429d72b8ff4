"""What an erased event's payload becomes (docs/auditing.md#erasing-content): a tombstone
that says who erased it, when and why, and keeps what places the event — its ids, tool
name, status, decision, numbers — with every text, argument and result gone. Strings
become ERASED_TEXT, so the pages, the search index and the exports show "content erased"
where the text was; objects and lists become empty.

The projector applies a tombstone like any event of its type (the structure it keeps is
what the handlers read); the event's content hash is kept, so the chain still verifies
(chatui_client.proof.walk_chain takes it as the `audit.erasure` event recorded it).
"""

from __future__ import annotations

from typing import Any

#: The tombstone's own key: {"reason", "by", "at", "erasure_seq"}.
TOMBSTONE_KEY = "erased"
#: What a page shows where erased text was.
ERASED_TEXT = "content erased"
#: What places an event and is no one's text: kept as it was.
STRUCTURE_KEYS = frozenset(
    {
        # native events (docs/events.md#event-types)
        "message_id",
        "tool_call_id",
        "parent_tool_call_id",
        "tool_name",
        "status",
        "decision",
        "decided_by",
        "decided_at",
        "should_continue",
        "stop_reason",
        "resolved_by",
        "attempt",
        "max_attempts",
        "duration_ms",
        "tokens",
        "usage",
        "progress",
        "skipped",
        "result_is_preview",
        "timeout_s",
        "encrypted",
        "target",
        "label",
        "refers_to",
        "author",
        # AgentSpine's and AG-UI's ids and markers, kept as sent
        "dialect",
        "role",
        "source",
        "round",
        "is_error",
        "type",
        "messageId",
        "toolCallId",
        "toolCallName",
        "parentMessageId",
        "runId",
        "threadId",
    }
)


def is_tombstone(payload: Any) -> bool:
    return isinstance(payload, dict) and isinstance(payload.get(TOMBSTONE_KEY), dict)


def tombstone(payload: dict[str, Any], *, reason: str, by: str, at: str, erasure_seq: int) -> dict:
    """The payload erased: structure kept, text gone, the erasure said."""
    erased: dict[str, Any] = {}
    for key, value in payload.items():
        if key == TOMBSTONE_KEY:
            continue
        if key in STRUCTURE_KEYS:
            erased[key] = value
        elif key == "tool_calls" and isinstance(value, list):
            # A step's calls keep their ids and names (their entries stay in place).
            erased[key] = [
                {k: call[k] for k in ("id", "name") if k in call}
                for call in value
                if isinstance(call, dict)
            ]
        elif isinstance(value, dict):
            erased[key] = {}
        elif isinstance(value, list):
            erased[key] = []
        elif value in ("", None):
            erased[key] = value
        else:
            erased[key] = ERASED_TEXT
    erased[TOMBSTONE_KEY] = {"reason": reason, "by": by, "at": at, "erasure_seq": erasure_seq}
    return erased
