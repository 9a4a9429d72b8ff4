"""The search index's writes: what of a message a reader can search, and keeping the
two index tables current inside ingest's own transaction (docs/rendering.md#search).

What is searchable: conversation titles, and of every message what a reader can see of
it — user and assistant text, status lines, and a tool call's name, arguments, result,
error and details — masked first (T3): a secret's value never enters the index, so no
query, snippet or admin search can find by it. Transient things are not indexed: an
answer still streaming (indexed when its step completes or its run ends, so streaming
stays linear), ephemeral statuses ("Thinking…", removed when the run ends) and assistant
text R3 hides.

One definition of a word serves documents, queries and the `<mark>`s of snippets
(chatui.read.search): runs of Unicode letters and digits, case-folded, Latin diacritics
removed. Documents are stored as those words joined by spaces, so the database's
tokenizer only splits on spaces and SQLite (FTS5) and PostgreSQL (`tsvector`, GIN)
agree on every match.

The index is two tables beside the data (see migration 0006): one row per message,
keyed by the message's primary key, and one per titled conversation. A delete trigger
in the database removes a message's row with the message, whoever deletes it
(reconciliation, re-projection, a cascade).
"""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, connections

from chatui.db.prepared import cursor_for
from chatui.models import Conversation, Message, Role, StatusType, ToolStatus
from chatui.secrets import MASKED_ROLES, mask_text, masked_fields
from chatui.text import without_escapes

from .values import is_tool_execution_result
from .visibility import is_assistant_shown

# A document beyond this many characters is indexed up to here: a multi-megabyte tool
# output would cost more to index on every write than it is worth to find.
DOCUMENT_CHARS = 100_000

_WORD = re.compile(r"[^\W_]+")
# A word as it stands in the original text: letters, digits and Latin combining marks.
_LATIN_MARKS = re.compile(r"[\u0300-\u036f]+")


def fold(text: str) -> str:
    """Case-folded, without Latin diacritics: "Crème BRÛLÉE" → "creme brulee"."""
    return _LATIN_MARKS.sub("", unicodedata.normalize("NFD", text)).casefold()


def words(text: str) -> list[str]:
    return _WORD.findall(fold(text))


# -- what a message offers to search -------------------------------------------------


@dataclass(frozen=True)
class Field:
    name: str  # "text", "tool", "args", "result", "error", "details"
    text: str


def json_text(value: Any) -> str:
    """A JSON value as readable text with the same words it holds: keys and values,
    strings unescaped (JSON's escapes would glue "\\n" onto the next word)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return ", ".join(f"{key}: {json_text(item)}" for key, item in value.items())
    if isinstance(value, list):
        return ", ".join(json_text(item) for item in value)
    return "" if value is None else json.dumps(value)


def message_fields(message: Message) -> list[Field]:
    """What a reader sees of `message`, field by field, secrets masked (T3); [] for what
    is not searchable. The index holds these words and snippets show this text, so a
    secret's value is never indexed: nobody can find a message by it, letter by letter.
    A tool's text and a status line are masked as the page shows them
    (`secrets.masked_fields`); a person's or the assistant's words are masked here too
    (`mask_text`), as the conversation list masks them, though the page shows them as
    written."""
    if message.role == Role.TOOL:
        # A tool's output as a terminal shows it (docs/rendering.md#g17), escapes removed
        # *before* masking: after a colour code a secret has no word boundary before it,
        # so masking would miss it and the index would hold it.
        content, meta = masked_fields(
            message.role, without_escapes(message.content), _without_escapes(message.metadata)
        )
        return _tool_fields(message, content, meta)
    content, meta = masked_fields(message.role, message.content, message.metadata)
    if message.role == Role.ASSISTANT and not is_assistant_shown(message):
        return []  # R3's hidden JSON, blank text
    if message.role in MASKED_ROLES:
        return [Field("text", content)]
    return [Field("text", mask_text(content))]


def _without_escapes(value: Any) -> Any:
    """`value` (JSON data) with terminal escapes removed from every string in it."""
    if isinstance(value, str):
        return without_escapes(value)
    if isinstance(value, dict):
        return {key: _without_escapes(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_escapes(item) for item in value]
    return value


def _tool_fields(message: Message, content: str, meta: dict[str, Any]) -> list[Field]:
    fields = [Field("tool", message.tool_name)]
    args = " ".join(
        text for text in (json_text(meta.get("args")), json_text(meta.get("args_summary"))) if text
    )
    fields.append(Field("args", args))
    if message.tool_status == ToolStatus.ERROR:
        fields.append(Field("error", meta.get("tool_error") or content))
    else:
        result = meta.get("tool_result")
        structured = isinstance(result, dict | list) and not is_tool_execution_result(result)
        fields.append(Field("result", json_text(result) if structured else content))
    if meta.get("details") is not None:
        fields.append(Field("details", json_text(meta["details"])))
    return [item for item in fields if item.text]


def document(message: Message) -> str:
    """The words the index holds for `message` ("" when nothing is searchable)."""
    text = "\n".join(item.text for item in message_fields(message))
    return " ".join(words(text[:DOCUMENT_CHARS]))


def is_indexable(message: Message) -> bool:
    """Streaming text is indexed once, when it ends (its final step, or its run's end:
    the projection saves it final then, and indexes what it saved);
    ephemeral statuses never are. Anything else gets a row, empty when it shows no
    words (R3's hidden JSON), so a message that stops showing text loses its words."""
    if message.role == Role.STATUS:
        return message.status_type not in StatusType.EPHEMERAL
    return message.is_final or message.role != Role.ASSISTANT


# -- the two index backends' writes -------------------------------------------------


class _SQLiteWrites:
    """FTS5 tables: chatui_message_search(document), rowid = message id;
    chatui_title_search(title, conversation), the conversation's id as a token."""

    def index_messages(self, rows: Sequence[tuple[int, str]]) -> None:
        cursor_for(connections["default"]).executemany(  # the ingest transaction's
            "INSERT OR REPLACE INTO chatui_message_search (rowid, document) VALUES (%s, %s)",
            rows,
        )

    def index_title(self, conversation_id: uuid.UUID, text: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM chatui_title_search WHERE rowid IN (SELECT rowid FROM"
                " chatui_title_search WHERE conversation MATCH %s)",
                [f'"{conversation_id.hex}"'],
            )
            if text:
                cursor.execute(
                    "INSERT INTO chatui_title_search (title, conversation) VALUES (%s, %s)",
                    [text, conversation_id.hex],
                )


class _PostgresWrites:
    """chatui_message_search(message_id, document tsvector) and
    chatui_title_search(conversation_id, document tsvector), each with a GIN index."""

    def index_messages(self, rows: Sequence[tuple[int, str]]) -> None:
        cursor_for(connections["default"]).executemany(  # the ingest transaction's
            "INSERT INTO chatui_message_search (message_id, document)"
            " VALUES (%s, to_tsvector('simple', %s))"
            " ON CONFLICT (message_id) DO UPDATE SET document = EXCLUDED.document",
            rows,
        )

    def index_title(self, conversation_id: uuid.UUID, text: str) -> None:
        with connection.cursor() as cursor:
            if not text:
                cursor.execute(
                    "DELETE FROM chatui_title_search WHERE conversation_id = %s", [conversation_id]
                )
                return
            cursor.execute(
                "INSERT INTO chatui_title_search (conversation_id, document)"
                " VALUES (%s, to_tsvector('simple', %s))"
                " ON CONFLICT (conversation_id) DO UPDATE SET document = EXCLUDED.document",
                [conversation_id, text],
            )


def _writes() -> _SQLiteWrites | _PostgresWrites:
    if connection.vendor == "sqlite":
        return _SQLiteWrites()
    if connection.vendor == "postgresql":
        return _PostgresWrites()
    raise NotImplementedError(f"search needs SQLite or PostgreSQL, not {connection.vendor}")


# -- keeping the index -------------------------------------------------------------


def index_messages(messages: Iterable[Message]) -> None:
    """(Re)index saved messages: one statement for the batch, O(messages given).
    Called by the projector inside the ingest transaction."""
    rows = [(message.pk, document(message)) for message in messages if is_indexable(message)]
    if rows:
        _writes().index_messages(rows)


def index_title(conversation: Conversation) -> None:
    """T3: a title taken from a first message may quote a secret; its words are masked,
    as every message's are (the title itself is shown as written)."""
    _writes().index_title(conversation.pk, " ".join(words(mask_text(conversation.title))))


def rebuild(message_model=Message, conversation_model=Conversation) -> None:
    """Index everything (the migration's backfill; models may be historical ones)."""
    batch: list[Message] = []
    for message in message_model.objects.order_by("pk").iterator(chunk_size=2000):
        batch.append(message)
        if len(batch) == 2000:
            index_messages(batch)
            batch = []
    index_messages(batch)
    for conversation in conversation_model.objects.exclude(title="").iterator():
        index_title(conversation)
