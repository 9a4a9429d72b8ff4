"""Transcript importers (docs/events.md#importers): a file → chatui events → `ingest`.

Imports go through `ingest` like every other writer, so an imported
conversation has an event log (audited, re-projectable) like a live one.

    result = import_transcript(upload, "openai", conversation)

or, where the target is created in a transaction (the admin, the command), parse
first, with no transaction open, so a slow or bad file never holds the database's
write lock:

    draft = parse_transcript(upload, "openai")       # pure: no database
    with transaction.atomic():
        conversation = create_conversation(...)
        result = import_draft(draft, "openai", conversation)   # one ingest

Formats (`IMPORT_FORMATS`), each parsed by its translator in chatui.ingest.dialects (the
same one live ingest uses where the format also arrives live, as AgentSpine's does):

- `openai`      OpenAI chat messages (dialects/openai_chat.py)
- `anthropic`   Anthropic messages (dialects/anthropic_messages.py)
- `agentspine`  AgentSpine event JSONL [001] (dialects/agentspine.py)
- `chatui`      chatui event JSONL, as `export_transcript --format events` writes
                (dialects/chatui_events.py)
- `agui`        AG-UI events, JSONL or the SSE text an agent streamed (dialects/agui.py,
                the translator of the live events endpoint too)
- `legacy`      legacy text with `<tool>`/`<validation>` blocks and Markdown pairs [003]
                (dialects/legacy.py)
- `claude-code` a Claude Code session file (dialects/claude_code.py)
- `codex`       an OpenAI Codex session file (dialects/codex.py)

The two session formats are the exception to what follows: their ids, runs and times come
from the records themselves, as `chatui-tail` posts them live (dialects/sessions.py), so a
file imported after (or before) it was followed adds nothing twice.

Imports are deterministic (ids and timestamps derive from the file: dialects/files.py),
so importing a file twice into one conversation is all duplicates. Every
format but `chatui` and `agui` (whose runs are in the file) is one run (`run_id`
`import:<digest>`) that starts with `agent.status running` and ends with
`agent.status completed`. A bad file
raises `TranscriptError` naming the line or message at fault; nothing is
written then (the ingest batch is applied whole or not at all). Files are
bounded (`CHATUI_IMPORT_MAX_BYTES`, `CHATUI_IMPORT_MAX_EVENTS`) and parsed in
time linear in their size (dialects/files.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from chatui.ingest.dialects import (
    agentspine,
    agui,
    anthropic_messages,
    chatui_events,
    claude_code,
    codex,
    legacy,
    openai_chat,
)
from chatui.ingest.dialects.files import Draft, Source, TranscriptError, read_source
from chatui.ingest.service import ingest
from chatui.ingest.values import EventError
from chatui.models import Conversation, Message, Role

__all__ = [
    "IMPORT_FORMATS",
    "ImportResult",
    "TranscriptError",
    "import_draft",
    "import_transcript",
    "parse_transcript",
]

PARSERS: dict[str, Callable[[bytes], Draft]] = {
    "openai": openai_chat.parse,
    "anthropic": anthropic_messages.parse,
    "agentspine": agentspine.parse,
    "chatui": chatui_events.parse,
    "legacy": legacy.parse,
    "claude-code": claude_code.parse,
    "codex": codex.parse,
    "agui": agui.parse,
}
IMPORT_FORMATS = tuple(PARSERS)
#: Formats whose runs (and tool call ids) are the file's own, not one run per import.
FILE_RUNS = ("chatui", "agui")
_ID_CHUNK = 500


@dataclass
class ImportResult:
    conversation: Conversation
    format: str
    run_id: str  # "" for the chatui format, whose runs come from the file
    events: int
    accepted: int
    duplicates: int
    #: What the file held that chatui does not show, by kind (system prompts…).
    skipped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        line = (
            f"imported {self.events} events ({self.format} format): "
            f"{self.accepted} new, {self.duplicates} already there"
        )
        if self.skipped:
            line += "; skipped " + ", ".join(
                f"{count} × {what}" for what, count in sorted(self.skipped.items())
            )
        return line


def parse_transcript(source: Source, format: str) -> Draft:
    """The events a file would import as, without touching the database."""
    parser = PARSERS.get(format)
    if parser is None:
        raise TranscriptError(
            f"unknown format '{format}'; the formats are: {', '.join(IMPORT_FORMATS)}"
        )
    return parser(read_source(source))


def import_transcript(
    fileobj_or_text: Source, format: str, conversation: Conversation
) -> ImportResult:
    """Import a transcript into `conversation` (appended after what it holds).

    `fileobj_or_text`: the file's text or bytes, or a text or binary file object
    (an uploaded file does). Raises `TranscriptError` for a file that cannot be
    imported, and changes nothing then.
    """
    return import_draft(parse_transcript(fileobj_or_text, format), format, conversation)


def import_draft(draft: Draft, format: str, conversation: Conversation) -> ImportResult:
    """Ingest a parsed file (`parse_transcript`) into `conversation`, in one
    `ingest` batch. Raises `TranscriptError` and changes nothing when the events
    do not fit the conversation."""
    if format not in FILE_RUNS:
        _check_tool_ids_are_free(conversation, draft)
    try:
        result = ingest(conversation, draft.events)
    except EventError as error:
        where = draft.origins[error.index] if error.index is not None else None
        raise TranscriptError(_event_error_text(error), where=where) from error
    return ImportResult(
        conversation=conversation,
        format=format,
        run_id=draft.run_id,
        events=len(draft.events),
        accepted=result.accepted,
        duplicates=result.duplicates,
        skipped=dict(draft.skipped),
    )


def _event_error_text(error: EventError) -> str:
    if error.status == 409:
        return (
            f"{error.message}: this conversation already holds another import "
            "with the same event ids; import into a new conversation"
        )
    return error.message


def _check_tool_ids_are_free(conversation: Conversation, draft: Draft) -> None:
    """Tool entries are matched by tool_call_id within a conversation: one from an
    earlier import with the same id would swallow this import's call silently. An id
    holding NUL is in no conversation (ingest refuses it, naming it) and is not asked
    for: PostgreSQL cannot even compare text holding NUL."""
    ids = [call_id for call_id in draft.tool_call_ids if "\x00" not in call_id]
    for start in range(0, len(ids), _ID_CHUNK):
        taken = (
            Message.objects.filter(
                conversation=conversation,
                role=Role.TOOL,
                tool_call_id__in=ids[start : start + _ID_CHUNK],
            )
            .exclude(run_id=draft.run_id)
            .values_list("tool_call_id", flat=True)
            .first()
        )
        if taken is not None:
            raise TranscriptError(
                f"tool call id '{taken}' is already used in this conversation by another "
                "run; import this file into a new conversation"
            )
