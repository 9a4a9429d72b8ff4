"""Auditors' notes (docs/sharing.md#notes): written as `audit.note` events through
`ingest`, so every note is in the log — who, when, in seq order — and never edited (a
correction is a new note whose `refers_to` is the seq of the note it corrects).

The admin, the conversation page and the API all call `add_note`; a runtime cannot post
the type (chatui.ingest.events.SERVER_ONLY_TYPES)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from chatui.access import can_view
from chatui.models import Conversation, Message, Note, Role, Run

from .events import NOTE_TARGETS, normalise_event
from .service import ingest
from .values import EventError

ANNOTATE = "chatui.annotate"
#: What a note's body may hold; the rest is chatui's (author, type).
NOTE_FIELDS = ("target", "text", "label", "refers_to")


def can_annotate(user: AbstractBaseUser, conversation: Conversation) -> bool:
    return can_view(user, conversation) and user.has_perm(ANNOTATE)


def notes_shown_to(user: AbstractBaseUser, conversation: Conversation) -> bool:
    """Auditors see a conversation's notes; its owner too unless
    CHATUI_NOTES_VISIBLE_TO_OWNER is off."""
    if user.has_perm(ANNOTATE) or user.has_perm("chatui.view_conversation"):
        return True
    return settings.CHATUI_NOTES_VISIBLE_TO_OWNER and conversation.owner_id == user.pk


def add_note(conversation: Conversation, user: AbstractBaseUser, body: Any) -> Note:
    """Append `user`'s note to `conversation` and return its row. EventError (nothing
    written): 404 if `user` cannot see the conversation, 403 without chatui.annotate,
    400 naming the field for a bad body or a target that is not in the conversation."""
    if not can_view(user, conversation):
        raise EventError("conversation not found", status=404)
    if not user.has_perm(ANNOTATE):
        raise EventError("adding a note needs the chatui.annotate permission", status=403)
    if not isinstance(body, dict):
        raise EventError("expected a JSON object {target, text, label?, refers_to?}")
    unknown = sorted(set(body) - set(NOTE_FIELDS))
    if unknown:
        raise EventError(
            f"unknown field '{unknown[0][:80]}'; a note has {', '.join(NOTE_FIELDS)}",
            field=unknown[0][:80],
        )
    raw = {key: body[key] for key in NOTE_FIELDS if body.get(key) not in (None, "")}
    raw = {"type": "audit.note", **raw, "author": user.get_username()[:200]}
    event = normalise_event(raw)  # checked here first: the target must exist
    _require_target(conversation, event.payload["target"])
    refers_to = event.payload.get("refers_to")
    if (
        refers_to is not None
        and not Note.objects.filter(conversation=conversation, seq=refers_to).exists()
    ):
        raise EventError(f"no note at seq {refers_to} in this conversation", field="refers_to")
    result = ingest(conversation, raw)  # the one way in: the log, its seq, its projection
    return Note.objects.get(conversation=conversation, seq=result.last_seq)


def _require_target(conversation: Conversation, target: dict[str, str]) -> None:
    (kind, target_id), *_ = target.items()
    if kind == "run_id":
        found = Run.objects.filter(conversation=conversation, run_id=target_id).exists()
    elif kind == "tool_call_id":
        found = Message.objects.filter(
            conversation=conversation, role=Role.TOOL, tool_call_id=target_id
        ).exists()
    else:
        found = Message.objects.filter(conversation=conversation, message_id=target_id).exists()
    if not found:
        what = {"run_id": "run", "tool_call_id": "tool call", "message_id": "message"}[kind]
        raise EventError(
            f"no {what} '{target_id[:80]}' in this conversation", field=f"target.{kind}"
        )


def note_targets(
    conversation: Conversation, limit: int = 300, shown: Callable[[str], str] = str
) -> list[tuple[str, str]]:
    """The choices of the page's and the admin's note form: (value, label) for the
    conversation's runs and its latest tool calls, `kind:id` as the value; `shown` makes
    each label's ids and names readable (the admin shows invisible characters)."""
    choices = [
        (f"run_id:{run_id}", shown(f"Run {run_id}"))
        for run_id in Run.objects.filter(conversation=conversation)
        .order_by("started_seq")
        .values_list("run_id", flat=True)[:limit]
    ]
    tools = (
        Message.objects.filter(conversation=conversation, role=Role.TOOL)
        .exclude(tool_call_id="")
        .order_by("-position")
        .values_list("tool_call_id", "tool_name")[:limit]
    )
    choices += [(f"tool_call_id:{call}", shown(f"Tool {name} ({call})")) for call, name in tools]
    return choices


def target_from_form(value: str) -> dict[str, str]:
    """`kind:id` (a form's choice) → the note's target; EventError naming the field."""
    kind, _, target_id = value.partition(":")
    if kind not in NOTE_TARGETS or not target_id:
        raise EventError(
            "choose what the note is about (a run, a tool call or a message)", field="target"
        )
    return {kind: target_id}
