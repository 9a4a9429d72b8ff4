"""Tool approval (docs/events.md#approvals): a person's decision, appended through ingest.

A runtime asks with `agent.tool.approval_requested`; the projection puts the entry in
`awaiting_approval` with its deadline (`metadata.approval.expires_at`). The decision is
a `tool.approval` event that only this module writes (the API refuses it from a
runtime), so it is in the log, re-projects, exports and is broadcast on commit like
every other event.

The first decision wins, atomically: every decision for one tool call carries the same
`event_id` (`decision_event_id`), so ingest's idempotency check — under the
conversation's row lock — lets exactly one body in. A second, different decision is a
409 that changes nothing; the same expiry recorded twice (by the sweep and a reader at
once) is a duplicate, since its body is fixed by the deadline, not by who noticed.

Expiry is decided by the server: at the deadline, by every serving process's clock
(chatui.live.approval_clock, which calls `expire_due`); whenever a conversation is read
(page, API, its events feed, long poll) its overdue requests are expired first
(`expire_overdue`); and a sweep (`expire_all_overdue`: the run worker's heartbeat,
`manage.py expire_approvals`) covers the rest — so a deadline that passed while no
process was up is recorded by the first one that looks.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from chatui.access import can_view
from chatui.models import Conversation, Event, Message, Role, ToolStatus

from .service import IngestResult, ingest
from .values import EventError

APPROVE_ANY = "chatui.approve_tool"
SYSTEM = "system"
#: What a person may choose; `expired` is the server's alone.
PERSON_DECISIONS = ("approved", "denied")
MAX_NOTE_CHARS = 2000


@dataclass(frozen=True)
class Decision:
    tool_call_id: str
    decision: str
    decided_by: str
    decided_at: str
    note: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def can_decide(user: AbstractBaseUser | AnonymousUser, conversation: Conversation) -> bool:
    """The owner, and holders of chatui.approve_tool who may see the conversation."""
    if not user.is_authenticated:
        return False
    if conversation.owner_id == user.pk:
        return True
    return user.has_perm(APPROVE_ANY) and can_view(user, conversation)


def decision_event_id(tool_call_id: str) -> str:
    """One id for every decision on a call: ingest lets the first body in, 409s the rest."""
    return "approval-" + hashlib.sha256(tool_call_id.encode()).hexdigest()[:40]


def awaiting(conversation: Conversation, tool_call_id: str) -> Message | None:
    """The tool entry, if approval was ever requested for it (decided or not)."""
    message = (
        Message.objects.filter(conversation=conversation, role=Role.TOOL, tool_call_id=tool_call_id)
        .order_by("position")
        .first()
    )
    if message is None or "approval" not in (message.metadata or {}):
        return None
    return message


def decision_for(conversation: Conversation, tool_call_id: str) -> Decision | None:
    """The recorded decision, read from the log (the truth), or None while pending."""
    event = (
        Event.objects.filter(
            conversation=conversation, type="tool.approval", tool_call_id=tool_call_id
        )
        .order_by("seq")
        .first()
    )
    if event is None:
        return None
    payload = event.payload
    return Decision(
        tool_call_id=tool_call_id,
        decision=payload["decision"],
        decided_by=payload.get("decided_by", ""),
        decided_at=payload.get("decided_at") or event.timestamp.isoformat(),
        note=payload.get("note", ""),
    )


def decide(
    conversation: Conversation,
    tool_call_id: str,
    decision: Any,
    user: AbstractBaseUser,
    note: Any = "",
) -> Decision:
    """Record a person's decision. EventError: 400 bad decision or note, 404 no such
    request, 409 already decided (by anyone, or expired). Callers check `can_decide`."""
    return decide_as(conversation, tool_call_id, decision, user.get_username(), note)


def decide_as(
    conversation: Conversation, tool_call_id: str, decision: Any, actor: str, note: Any = ""
) -> Decision:
    """`decide` in the name of `actor`: a username, or a scripted reviewer that says
    what it is (the showcase's "showcase script") — never a runtime's own verdict."""
    if decision not in PERSON_DECISIONS:
        raise EventError(
            "field 'decision' must be one of " + ", ".join(PERSON_DECISIONS), field="decision"
        )
    if not isinstance(note, str) or len(note) > MAX_NOTE_CHARS:
        raise EventError(
            f"field 'note' must be a string of at most {MAX_NOTE_CHARS} characters", field="note"
        )
    asked = awaiting(conversation, tool_call_id)
    if asked is None:
        raise EventError(
            f"no approval was requested for tool call '{tool_call_id[:200]}'", status=404
        )
    expire_overdue(conversation)
    event = {
        "type": "tool.approval",
        **_of_run(asked),
        "event_id": decision_event_id(tool_call_id),
        "tool_call_id": tool_call_id,
        "decision": decision,
        "note": note.strip(),
        "decided_by": actor,
        "decided_at": timezone.now().isoformat(),
    }
    try:
        result = ingest(conversation, event)
    except EventError as refused:
        if refused.status == 409:
            raise _already_decided(conversation, tool_call_id) from None
        raise
    if not result.accepted:  # a byte-identical decision already stands
        raise _already_decided(conversation, tool_call_id)
    found = decision_for(conversation, tool_call_id)
    assert found is not None
    return found


def _of_run(message: Message) -> dict[str, str]:
    """A decision belongs to the run that asked (a webhook agent forwards its run's)."""
    return {"run_id": message.run_id} if message.run_id else {}


def _already_decided(conversation: Conversation, tool_call_id: str) -> EventError:
    found = decision_for(conversation, tool_call_id)
    who = f" by {found.decided_by}" if found and found.decided_by else ""
    what = found.decision if found else "decided"
    return EventError(
        f"tool call '{tool_call_id[:200]}' was already decided: {what}{who}",
        field="decision",
        status=409,
    )


# -- expiry -------------------------------------------------------------------------------


def _deadline(message: Message) -> datetime | None:
    approval = (message.metadata or {}).get("approval") or {}
    raw = approval.get("expires_at")
    return parse_datetime(raw) if isinstance(raw, str) else None


def _expiry_events(messages: list[Message], now: datetime) -> list[dict[str, Any]]:
    events = []
    for message in messages:
        deadline = _deadline(message)
        if deadline is None or deadline > now:
            continue
        events.append(
            {
                "type": "tool.approval",
                **_of_run(message),
                "event_id": decision_event_id(message.tool_call_id),
                "tool_call_id": message.tool_call_id,
                "decision": "expired",
                "decided_by": SYSTEM,
                # The deadline, not the moment someone noticed: the same body however
                # often (and by whichever process) it is recorded.
                "decided_at": deadline.isoformat(),
                "timestamp": deadline.isoformat(),
            }
        )
    return events


def _pending(conversation: Conversation) -> list[Message]:
    return list(
        Message.objects.filter(
            conversation=conversation,
            role=Role.TOOL,
            tool_status=ToolStatus.AWAITING_APPROVAL,
        )
    )


def expire_overdue(conversation: Conversation, now: datetime | None = None) -> int:
    """Record `expired` for this conversation's requests past their deadline."""
    events = _expiry_events(_pending(conversation), now or timezone.now())
    if not events:
        return 0
    return _record_expiries(conversation, events).accepted


def deadline_of(message: Message) -> datetime | None:
    """When a request expires (None: no approval was asked)."""
    return _deadline(message)


def expire_due(conversation_id: Any) -> datetime | None:
    """The clock's call (chatui.live.approval_clock): expire what is due in the conversation;
    the earliest deadline still to come, if any."""
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None:
        return None  # deleted meanwhile
    now = timezone.now()
    pending = _pending(conversation)
    events = _expiry_events(pending, now)
    if events:
        _record_expiries(conversation, events)
    later = (deadline for message in pending if (deadline := _deadline(message)) is not None)
    return min((deadline for deadline in later if deadline > now), default=None)


def pending_deadlines() -> dict[str, datetime]:
    """Every conversation with a pending request, and its earliest deadline."""
    earliest: dict[str, datetime] = {}
    for message in Message.objects.filter(
        role=Role.TOOL, tool_status=ToolStatus.AWAITING_APPROVAL
    ).only("conversation_id", "metadata"):
        deadline = _deadline(message)
        key = str(message.conversation_id)
        if deadline is not None and (key not in earliest or deadline < earliest[key]):
            earliest[key] = deadline
    return earliest


def _record_expiries(conversation: Conversation, events: list[dict[str, Any]]) -> IngestResult:
    try:
        return ingest(conversation, events)
    except EventError as refused:
        if refused.status != 409:
            raise
        # A person decided one of them meanwhile: record the others one by one.
        accepted = 0
        for event in events:
            try:
                accepted += ingest(conversation, event).accepted
            except EventError as late:
                if late.status != 409:
                    raise
        return IngestResult(accepted=accepted, duplicates=0, last_seq=conversation.last_seq)


def current_decision(conversation_id: Any, tool_call_id: str) -> Decision | None:
    """What a waiting runtime in this process asks: expire if overdue, then read."""
    conversation = Conversation.objects.get(pk=conversation_id)
    expire_overdue(conversation)
    return decision_for(conversation, tool_call_id)


def expire_all_overdue(now: datetime | None = None) -> int:
    """The sweep: every conversation with a request past its deadline."""
    ids = (
        Message.objects.filter(role=Role.TOOL, tool_status=ToolStatus.AWAITING_APPROVAL)
        .values_list("conversation_id", flat=True)
        .distinct()
    )
    return sum(
        expire_overdue(conversation, now)
        for conversation in Conversation.objects.filter(pk__in=list(ids))
    )
