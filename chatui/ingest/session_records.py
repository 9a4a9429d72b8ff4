"""A coding agent's session records, posted live (docs/events.md#sessions): `chatui-tail`
posts the raw lines of a Claude Code or Codex session file to the events endpoint as

    {"dialect": "claude-code" | "codex", "records": [...], "state": {...}, "end": false}

and they are translated here, by the same translator an import of the file uses
(chatui.ingest.dialects.claude_code / codex), then ingested like any events. The answer
adds the translator's `state` for the next request (the server keeps nothing per session)
and the number of `records` read. `end: true` (the tail moved on to a newer session) ends
the session's open run.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from chatui.models import Conversation

from .dialects import claude_code, codex
from .dialects.sessions import MAX_RECORDS_PER_REQUEST, SessionTranslator
from .service import CONVERSATION_ROW, ingest, refuse_before_the_body
from .values import EventError

TRANSLATORS: dict[str, type[SessionTranslator]] = {
    claude_code.DIALECT: claude_code.ClaudeCodeTranslator,
    codex.DIALECT: codex.CodexTranslator,
}
#: The keys of a session request body; anything else is refused, so a typo is not lost.
BODY_KEYS = frozenset({"dialect", "records", "state", "end"})


def is_session_body(body: Any) -> bool:
    """A body in a session dialect, told apart from events by having no `type` and no
    `events` of its own."""
    return isinstance(body, dict) and "dialect" in body and "type" not in body


def ingest_records(
    conversation: Conversation, body: dict[str, Any], *, check_writer: AbstractBaseUser | None
) -> dict[str, Any]:
    """Translate and ingest one request's records; the answer of the events POST."""
    dialect = body.get("dialect")
    if dialect not in TRANSLATORS:
        raise EventError(
            f"unknown dialect {str(dialect)[:40]!r}; the session dialects are: "
            + ", ".join(TRANSLATORS),
            field="dialect",
        )
    unknown = sorted(set(body) - BODY_KEYS)
    if unknown:
        raise EventError(f"unknown field '{unknown[0][:40]}'", field=unknown[0][:40])
    records = body.get("records", [])
    if not isinstance(records, list):
        raise EventError("'records' must be an array of records", field="records")
    if len(records) > MAX_RECORDS_PER_REQUEST:
        raise EventError(
            f"at most {MAX_RECORDS_PER_REQUEST} records per request", field="records", status=413
        )
    if body.get("state") is not None and not isinstance(body["state"], dict):
        raise EventError("'state' must be the object the last answer gave", field="state")
    translator = TRANSLATORS[dialect](body.get("state"))
    events: list[dict[str, Any]] = []
    origins: list[int] = []
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise EventError("each record must be a JSON object", index=index, field="records")
        made = translator.translate(record)
        events += made
        origins += [index] * len(made)
    if body.get("end") is True:
        made = translator.finish()
        events += made
        origins += [len(records)] * len(made)
    if events:
        try:
            result = ingest(conversation, events, from_runtime=True, check_writer=check_writer)
        except EventError as problem:
            # Named by the record it came from, not by the event chatui made of it.
            if problem.index is not None and problem.index < len(origins):
                problem.message = f"record {origins[problem.index]}: {problem.message}"
                problem.index = origins[problem.index]
            raise
        answer = result.as_dict()
    else:
        refuse_before_the_body(conversation, check_writer=check_writer)
        row = CONVERSATION_ROW.one(pk=conversation.pk)
        answer = {"accepted": 0, "duplicates": 0, "last_seq": row.last_seq if row else 0}
    return {**answer, "records": len(records), "state": translator.dump_state()}
