"""Full-text search over transcripts (docs/rendering.md#search) through the database's own index.

What is searchable: conversation titles, and of every message what a reader can see of
it — user and assistant text, status lines, and a tool call's name, arguments, result,
error and details. Transient things are not: an answer still streaming (indexed when
its step completes or its run ends, so streaming stays linear), ephemeral statuses
("Thinking…", removed when the run ends) and assistant text R3 hides.

One definition of a word serves documents, queries and the `<mark>`s of snippets:
runs of Unicode letters and digits, case-folded, Latin diacritics removed. Documents
are stored as those words joined by spaces, so the database's tokenizer only splits on
spaces and SQLite (FTS5) and PostgreSQL (`tsvector`, GIN) agree on every match.
Queries are built from the same words, never from the user's syntax: every word of
the input becomes a quoted phrase of its words, so `"`, `*`, `NEAR`, `-`, `:` or
parentheses in the input are plain text. The last word also matches as a prefix once
it has PREFIX_MIN characters (and is not followed by a space).

The index is two tables beside the data, written by ingest in its own transaction
(chatui.ingest.search_index, which also decides what of a message is searchable). Every
query joins back to the live rows, so a stale row can never surface.

Hits are ordered newest first (by message id): cheap at any size, since the index
walks its rowids in order and stops at the page's end, and what a person looking
for "that run yesterday" wants. Snippets are computed here, in Python, from the
message itself, as (text, is_match) parts: the template escapes every part and wraps
matches in `<mark>`; no markup is ever built from user text.

Why it is long: querying, snippets and the admin's search boxes for two databases,
all on the one definition of a word the index is written with.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.expressions import RawSQL

from chatui.access import VIEW_ANY
from chatui.ingest.search_index import DOCUMENT_CHARS, Field, message_fields, words
from chatui.models import Conversation, Message, Role, Run
from chatui.secrets import mask_text
from chatui.text import ELLIPSIS, neutralise

from .previews import plain_blocks

PREFIX_MIN = 3
QUERY_WORDS = 16
PAGE_SIZE = 50
TITLE_HITS = 20
HITS_SHOWN = 5  # per conversation on a page; the rest are counted
SNIPPET_BEFORE = 60
SNIPPET_CHARS = 220

# -- words -------------------------------------------------------------------------

_SPAN = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")
_SPACES = re.compile(r"\s+")


# -- queries -------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    phrases: tuple[tuple[str, ...], ...]  # one per word of the input, in order
    prefix: bool  # the last phrase's last word matches as a prefix
    terms: frozenset[str] = field(init=False)
    prefix_term: str = field(init=False)  # "" without prefix matching

    def __post_init__(self) -> None:
        words_in = frozenset(word for phrase in self.phrases for word in phrase)
        object.__setattr__(self, "terms", words_in)
        object.__setattr__(self, "prefix_term", self.phrases[-1][-1] if self.prefix else "")

    def matches(self, span: str) -> bool:
        """Does a word of the original text (a `_SPAN`) match this query?"""
        if span.isascii():  # the common case: letters and digits, folding is lowering
            word = span.lower()
            return word in self.terms or bool(
                self.prefix_term and word.startswith(self.prefix_term)
            )
        return any(
            w in self.terms or (self.prefix_term and w.startswith(self.prefix_term))
            for w in words(span)
        )

    def fts5(self) -> str:
        """An FTS5 expression: quoted phrases (words are letters and digits only)."""
        parts = ['"' + " ".join(phrase) + '"' for phrase in self.phrases]
        if self.prefix:
            parts[-1] += " *"
        return " ".join(parts)

    def tsquery(self) -> str:
        """A `to_tsquery('simple', …)` expression: quoted lexemes, `<->` within a phrase."""
        parts = [[f"'{word}'" for word in phrase] for phrase in self.phrases]
        if self.prefix:
            parts[-1][-1] += ":*"
        return " & ".join("(" + " <-> ".join(phrase) + ")" for phrase in parts)


def parse_query(text: str) -> Query | None:
    """The user's words as a Query; None when there is no word to look for."""
    phrases = tuple(tuple(found) for raw in text.split() if (found := words(raw)))
    phrases = phrases[:QUERY_WORDS]
    if not phrases:
        return None
    ends_in_word = not text[-1:].isspace()
    last = phrases[-1][-1]
    return Query(phrases, prefix=ends_in_word and len(last) >= PREFIX_MIN)


# -- the two index backends ----------------------------------------------------------


class _SQLiteIndex:
    """FTS5 tables: chatui_message_search(document), rowid = message id;
    chatui_title_search(title, conversation), the conversation's id as a token."""

    def message_hits(
        self, query: Query, owner_id: int | None, before: int | None, limit: int
    ) -> list[tuple[int, uuid.UUID]]:
        sql = (
            "SELECT s.rowid, m.conversation_id FROM chatui_message_search s"
            " JOIN chatui_message m ON m.id = s.rowid"
            " JOIN chatui_conversation c ON c.id = m.conversation_id"
            " WHERE s.document MATCH %s"
        )
        found = _newest(sql, [query.fts5()], "s.rowid", owner_id, before, limit)
        return [(pk, uuid.UUID(conversation)) for pk, conversation in found]

    def title_hits(self, query: Query, owner_id: int | None, limit: int) -> list[uuid.UUID]:
        sql = (
            "SELECT c.id FROM chatui_title_search t"
            " JOIN chatui_conversation c ON c.id = t.conversation WHERE t.title MATCH %s"
        )
        found = _newest(sql, [query.fts5()], "c.updated_at", owner_id, None, limit)
        return [uuid.UUID(pk) for (pk,) in found]

    def message_ids(self, query: Query) -> RawSQL:
        return RawSQL(
            "SELECT s.rowid FROM chatui_message_search s WHERE s.document MATCH %s",
            [query.fts5()],
        )

    def conversation_ids(self, query: Query) -> RawSQL:
        return RawSQL(
            "SELECT m.conversation_id FROM chatui_message_search s"
            " JOIN chatui_message m ON m.id = s.rowid WHERE s.document MATCH %s"
            " UNION SELECT t.conversation FROM chatui_title_search t WHERE t.title MATCH %s",
            [query.fts5(), query.fts5()],
        )


class _PostgresIndex:
    """chatui_message_search(message_id, document tsvector) and
    chatui_title_search(conversation_id, document tsvector), each with a GIN index."""

    def message_hits(
        self, query: Query, owner_id: int | None, before: int | None, limit: int
    ) -> list[tuple[int, uuid.UUID]]:
        sql = (
            "SELECT s.message_id, m.conversation_id FROM chatui_message_search s"
            " JOIN chatui_message m ON m.id = s.message_id"
            " JOIN chatui_conversation c ON c.id = m.conversation_id"
            " WHERE s.document @@ to_tsquery('simple', %s)"
        )
        return [
            tuple(row)
            for row in _newest(sql, [query.tsquery()], "s.message_id", owner_id, before, limit)
        ]

    def title_hits(self, query: Query, owner_id: int | None, limit: int) -> list[uuid.UUID]:
        sql = (
            "SELECT c.id FROM chatui_title_search t"
            " JOIN chatui_conversation c ON c.id = t.conversation_id"
            " WHERE t.document @@ to_tsquery('simple', %s)"
        )
        return [
            pk for (pk,) in _newest(sql, [query.tsquery()], "c.updated_at", owner_id, None, limit)
        ]

    def message_ids(self, query: Query) -> RawSQL:
        return RawSQL(
            "SELECT s.message_id FROM chatui_message_search s"
            " WHERE s.document @@ to_tsquery('simple', %s)",
            [query.tsquery()],
        )

    def conversation_ids(self, query: Query) -> RawSQL:
        return RawSQL(
            "SELECT m.conversation_id FROM chatui_message_search s"
            " JOIN chatui_message m ON m.id = s.message_id"
            " WHERE s.document @@ to_tsquery('simple', %s)"
            " UNION SELECT t.conversation_id FROM chatui_title_search t"
            " WHERE t.document @@ to_tsquery('simple', %s)",
            [query.tsquery(), query.tsquery()],
        )


def _newest(
    sql: str, params: list[Any], key: str, owner_id: int | None, before: int | None, limit: int
) -> list[tuple[Any, ...]]:
    """`sql`'s rows readable by `owner_id` (None: by anyone), with `key` below `before`,
    `key` descending, at most `limit`."""
    if owner_id is not None:
        sql += " AND c.owner_id = %s"
        params.append(owner_id)
    if before is not None:
        sql += f" AND {key} < %s"
        params.append(before)
    sql += f" ORDER BY {key} DESC LIMIT %s"
    params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _index() -> _SQLiteIndex | _PostgresIndex:
    if connection.vendor == "sqlite":
        return _SQLiteIndex()
    if connection.vendor == "postgresql":
        return _PostgresIndex()
    raise NotImplementedError(f"search needs SQLite or PostgreSQL, not {connection.vendor}")


# -- reading: the selector -------------------------------------------------------------

Part = tuple[str, bool]  # (text, is_match): the template escapes text, marks matches


@dataclass(frozen=True)
class MessageHit:
    pk: int
    dom_id: str  # "m-<pk>", as the transcript renders it
    role: str
    tool_name: str
    field: str  # which part of the message matched: text, tool, args, result, error, details
    snippet: list[Part]
    url: str  # opens the conversation at this message

    @property
    def label(self) -> str:
        if self.role == Role.TOOL:
            return f"{self.tool_name} · {self.field}" if self.field != "tool" else self.tool_name
        return Role(self.role).label


@dataclass
class ConversationHits:
    conversation: Conversation
    title: list[Part]  # the title, its matching words marked
    hits: list[MessageHit] = field(default_factory=list)  # at most HITS_SHOWN, newest first
    more: int = 0  # further hits in this conversation on this page


@dataclass
class SearchResults:
    groups: list[ConversationHits]
    next_before: int | None  # pass as `before` for the next page; None on the last


NO_RESULTS = SearchResults(groups=[], next_before=None)


def search(
    user: AbstractBaseUser | AnonymousUser,
    text: str,
    *,
    before: int | None = None,
    limit: int = PAGE_SIZE,
) -> SearchResults:
    """Conversations and messages matching `text` that `user` may read: owners their own,
    holders of `chatui.view_conversation` (auditors) everyone's. Newest message first,
    grouped by conversation; conversations whose title matches lead the first page."""
    query = parse_query(text)
    if query is None or not user.is_authenticated:
        return NO_RESULTS
    owner_id = None if user.has_perm(VIEW_ANY) else user.pk
    index = _index()
    found = index.message_hits(query, owner_id, before, limit + 1)
    next_before = found[limit - 1][0] if len(found) > limit else None
    titled = [] if before is not None else index.title_hits(query, owner_id, TITLE_HITS)
    return SearchResults(_group(query, titled, found[:limit]), next_before)


def _group(
    query: Query, titled: list[uuid.UUID], found: list[tuple[int, uuid.UUID]]
) -> list[ConversationHits]:
    """Title matches first, then conversations in the order of their newest hit. Only
    the hits shown are read and given a snippet (HITS_SHOWN per conversation)."""
    order = list(dict.fromkeys([*titled, *(conversation for _, conversation in found)]))
    shown: dict[uuid.UUID, list[int]] = {pk: [] for pk in order}
    more = dict.fromkeys(order, 0)
    for pk, conversation in found:
        if len(shown[conversation]) < HITS_SHOWN:
            shown[conversation].append(pk)
        else:
            more[conversation] += 1
    conversations = Conversation.objects.select_related("owner").in_bulk(order)
    messages = Message.objects.in_bulk([pk for pks in shown.values() for pk in pks])
    groups = []
    for pk in order:
        if pk not in conversations:
            continue  # deleted since the index was read
        conversation = conversations[pk]
        hits = [_hit(messages[m], conversation, query) for m in shown[pk] if m in messages]
        groups.append(
            ConversationHits(conversation, mark_all(conversation.title, query), hits, more[pk])
        )
    return groups


def _hit(message: Message, conversation: Conversation, query: Query) -> MessageHit:
    fields = [(item.name, _plain(message, item)) for item in message_fields(message)]
    name, snippet = "text", []
    for field_name, text in fields:
        found = snippet_parts(text, query)
        if found is not None:
            name, snippet = field_name, found
            break
    else:
        if fields:  # matched by a word our marks cannot see (a link's URL); show the start
            shown = mask_text(fields[0][1][:DOCUMENT_CHARS])[:SNIPPET_CHARS]
            name, snippet = fields[0][0], [(_squeeze(shown), False)]
    return MessageHit(
        pk=message.pk,
        dom_id=message.dom_id,
        role=message.role,
        tool_name=message.tool_name,
        field=name,
        snippet=snippet,
        url=f"{conversation.get_absolute_url()}?{_hit_query(message, query)}#{message.dom_id}",
    )


def _hit_query(message: Message, query: Query) -> str:
    """`m` opens the window around the message; `hl` names the words chatui.js marks in
    it (W9): the query's words as folded here, the prefix one ending in "*"."""
    marked = sorted(query.terms - {query.prefix_term})
    if query.prefix_term:
        marked.append(query.prefix_term + "*")
    return urlencode({"m": message.pk, "hl": " ".join(marked)})


# -- snippets ---------------------------------------------------------------------------


def _plain(message: Message, item: Field) -> str:
    """W9: a snippet is plain text. A person's or the assistant's words are Markdown,
    read as the page shows them: syntax stripped by the page's own parser (a link's
    label, not its brackets; code's text, not its backticks). A tool's text is shown as
    indexed: terminal escapes are already gone (chatui.ingest.search_index)."""
    if item.name == "text" and message.role in (Role.USER, Role.ASSISTANT):
        return " ".join(plain_blocks(item.text[:DOCUMENT_CHARS], code=True))
    return item.text


def snippet_parts(text: str, query: Query) -> list[Part] | None:
    """A window of `text` around its first match, matching words marked; None when no
    word of `text` matches. Text parts are plain: escaping is the template's job.
    T3: the text is masked first and then searched, so every mark sits on the
    masked text (a secret that matched is not marked, nor shown)."""
    text = mask_text(text[:DOCUMENT_CHARS])
    first = next((m for m in _SPAN.finditer(text) if query.matches(m.group())), None)
    if first is None:
        return None
    start = max(0, first.start() - SNIPPET_BEFORE)
    if start:  # begin at a word's start, not in its middle
        space = text.find(" ", start, first.start())
        start = space + 1 if space != -1 else start
    end = min(len(text), start + SNIPPET_CHARS)
    end = max(end, first.end())
    parts = _marked(text[start:end], query)
    if start:
        parts.insert(0, (ELLIPSIS, False))
    if end < len(text):
        parts.append((ELLIPSIS, False))
    return parts


def mark_all(text: str, query: Query) -> list[Part]:
    """All of `text` (a title), its matching words marked."""
    return _marked(text, query)


def _marked(text: str, query: Query) -> list[Part]:
    parts: list[Part] = []
    done = 0
    for span in _SPAN.finditer(text):
        if query.matches(span.group()):
            if span.start() > done:
                parts.append((_squeeze(text[done : span.start()]), False))
            parts.append((neutralise(span.group()), True))
            done = span.end()
    if done < len(text):
        parts.append((_squeeze(text[done:]), False))
    return parts


def _squeeze(text: str) -> str:
    """One line: runs of whitespace become one space; "@" cannot mention (T1)."""
    return neutralise(_SPACES.sub(" ", text))


# -- the admin's search box -----------------------------------------------------------------


def filter_messages(queryset: QuerySet[Message], text: str) -> QuerySet[Message]:
    """The admin's message search: messages matching `text` through the index (their
    masked text, T3: never by a secret's value, as a `LIKE` over content would), or
    whose message id or tool call id is exactly `text`."""
    text = text.strip()
    if not text:
        return queryset
    exact = Q(message_id=text) | Q(tool_call_id=text)
    query = parse_query(text)
    if query is None:
        return queryset.filter(exact)
    return queryset.filter(Q(pk__in=_index().message_ids(query)) | exact)


def filter_runs(queryset: QuerySet[Run], text: str) -> QuerySet[Run]:
    """The admin's run search: runs whose id is exactly `text`, or whose error line
    (the run's red banner, a status message) matches it through the index: masked
    (T3), so a run is never found by a secret in its `error_message`."""
    text = text.strip()
    if not text:
        return queryset
    exact = Q(run_id=text)
    query = parse_query(text)
    if query is None:
        return queryset.filter(exact)
    banner = Message.objects.filter(
        pk__in=_index().message_ids(query),
        conversation_id=OuterRef("conversation_id"),
        run_id=OuterRef("run_id"),
        role=Role.STATUS,
        status_type="error",
    )
    return queryset.filter(exact | Exists(banner))


def filter_conversations(queryset: QuerySet[Conversation], text: str) -> QuerySet[Conversation]:
    """The admin's search: conversations with a title or a message matching `text`
    through the index, or an owner whose username contains it."""
    text = text.strip()
    query = parse_query(text)
    if query is None:
        return queryset if not text else queryset.filter(owner__username__icontains=text)
    return queryset.filter(
        Q(pk__in=_index().conversation_ids(query)) | Q(owner__username__icontains=text)
    )
