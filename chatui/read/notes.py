"""Auditors' notes as the pages show them (docs/sharing.md#notes): one list, in seq
order, each note naming its target and linking to it in the transcript. The page and
the admin render it with the same partial (chatui/_notes.html); every text in it is
escaped there."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chatui.models import Conversation, Message, Note

TARGET_NAMES = {"tool_call_id": "tool call", "message_id": "message", "run_id": "run"}
LABEL_NAMES = {
    "ok": "OK",
    "wrong_result": "Wrong result",
    "unsafe": "Unsafe",
    "policy_violation": "Policy violation",
    "needs_review": "Needs review",
}


@dataclass(frozen=True)
class NoteView:
    seq: int
    target_kind: str  # "tool_call_id", "message_id" or "run_id"
    target_id: str
    target: str  # "tool call c1"
    anchor: str | None  # "#m-12": the target's element in the transcript, when shown
    text: str
    label: str
    label_name: str
    author: str
    at: datetime
    refers_to: int | None


def present_notes(conversation: Conversation) -> list[NoteView]:
    notes = list(Note.objects.filter(conversation=conversation).order_by("seq"))
    anchors = _anchors(conversation, notes)
    return [
        NoteView(
            seq=note.seq,
            target_kind=note.target_kind,
            target_id=note.target_id,
            target=f"{TARGET_NAMES.get(note.target_kind, note.target_kind)} {note.target_id}",
            anchor=anchors.get((note.target_kind, note.target_id)),
            text=note.text,
            label=note.label,
            label_name=LABEL_NAMES.get(note.label, note.label),
            author=note.author,
            at=note.at,
            refers_to=note.refers_to,
        )
        for note in notes
    ]


def by_target(notes: list[NoteView]) -> dict[tuple[str, str], list[NoteView]]:
    """(kind, id) → the notes on that target, in seq order: to show them beside it."""
    found: dict[tuple[str, str], list[NoteView]] = {}
    for note in notes:
        found.setdefault((note.target_kind, note.target_id), []).append(note)
    return found


def _anchors(conversation: Conversation, notes: list[Note]) -> dict[tuple[str, str], str]:
    """(kind, id) → `#m-<pk>` of the message that shows the target: the tool's entry,
    the message, a run's first message. Ids are our own keys: nothing untrusted."""
    wanted: dict[str, set[str]] = {}
    for note in notes:
        wanted.setdefault(note.target_kind, set()).add(note.target_id)
    anchors: dict[tuple[str, str], str] = {}
    messages = Message.objects.filter(conversation=conversation).order_by("position")
    for field in ("tool_call_id", "message_id", "run_id"):
        ids = wanted.get(field)
        if not ids:
            continue
        for pk, key in messages.filter(**{f"{field}__in": ids}).values_list("pk", field):
            anchors.setdefault((field, key), f"#m-{pk}")
    return anchors
