"""What the coding agents' session dialects share (docs/events.md#sessions): Claude Code's
(`claude_code`) and OpenAI Codex's (`codex`) JSONL session files, imported
(`import_transcript --format claude-code|codex`) or followed live (`chatui-tail`, which posts
the raw records to `POST …/events` as `{"dialect", "records", "state"}`).

One translator per dialect turns records into chatui's own events, one record at a time, so
a file imported whole and the same file posted line by line while it grows give the very
same events:

- Event ids derive from the record's own id (Claude Code's `uuid`, Codex's `call_id`; a
  record with none is named by the SHA-256 of its canonical JSON): `<prefix>:<key>` for the
  record's first event, `<prefix>:<key>:<n>` for the next ones. Re-importing a file, or a
  tail resuming after a restart, sends ids the conversation already holds: duplicates.
- Timestamps are the records' own; an undated record takes the time of the record before it.
- Each user prompt starts a run (`<prefix>:<key of the prompt>`) and ends the one before
  (work before any prompt gets a run named after its first record); the end of an imported
  file, or a tail moving on to the next session, ends the last.
- What the translator must remember between records (the open run, the pending tool calls,
  which sub-agent a sidechain record belongs to) is its `state`: a small JSON object. The
  tail keeps it between requests — the server hands it back with each answer — so the
  server keeps nothing per session, and the state is checked like any other input.
- Records the page does not show (metadata, token counts, record types this version does
  not know) are kept in the log as `session.record` events, never dropped. A model's
  reasoning is a reasoning block (`agent.reasoning.delta`, R6) on the message it belongs to.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from django.conf import settings
from django.utils.dateparse import parse_datetime

from chatui.ingest.values import (
    MAX_ID_CHARS,
    MAX_TOOL_NAME_CHARS,
    Checker,
    anything,
    boolean,
    canonical_json,
    id_string,
    short_name,
    string,
)

from .files import Draft, TranscriptError, decode, decode_json

#: The event type that keeps a record the page does not show (docs/events.md#sessions).
SESSION_RECORD = "session.record"
SESSION_SCHEMAS: dict[str, dict[str, tuple[Checker, bool]]] = {
    SESSION_RECORD: {
        "dialect": (short_name, True),
        "kind": (short_name, False),
        "record": (anything, False),
        "message_id": (id_string, False),
        "parent_tool_call_id": (id_string, False),
        "text": (string, False),
        "encrypted": (boolean, False),
    }
}

#: A text longer than this (a huge command output, a file written whole) is cut, so one
#: record never makes an event over CHATUI_MAX_EVENT_BYTES (1 MiB by default).
MAX_TEXT_CHARS = 100_000
#: Records in one `POST …/events` of a session dialect.
MAX_RECORDS_PER_REQUEST = 1000
#: Entries the translator's state may hold per table: pending calls, sub-agent chains.
MAX_STATE_ENTRIES = 2000
#: A record key longer than this is replaced by its digest, so event ids stay short.
MAX_KEY_CHARS = 120
#: Nesting kept in a `session.record`'s record; deeper records are kept as their JSON text.
MAX_RECORD_DEPTH = 24
#: How a checklist line marks each item's status.
CHECK_MARKS = {"completed": "☑", "in_progress": "◐", "pending": "☐"}

_UNSAFE = re.compile("[\x00\ud800-\udfff]")


# -- values -------------------------------------------------------------------------


def clean(value: Any, depth: int = 0) -> Any:
    """Decoded JSON made storable: NUL and lone surrogates become U+FFFD (a shell's output
    may hold NUL; no database column stores it), strings are cut at MAX_TEXT_CHARS, and
    nesting deeper than MAX_RECORD_DEPTH is kept as its JSON text."""
    if isinstance(value, str):
        return cut(_UNSAFE.sub("\ufffd", value))
    if isinstance(value, float) and not math.isfinite(value):  # NaN, 1e999: not JSON
        return None
    if isinstance(value, dict | list) and depth >= MAX_RECORD_DEPTH:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (RecursionError, ValueError):
            text = "[nested too deeply to keep]"
        return cut(_UNSAFE.sub("\ufffd", text))
    if isinstance(value, dict):
        return {clean(str(k), depth): clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(item, depth + 1) for item in value]
    return value


def cut(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… (cut by chatui: {len(text) - limit} more characters)"


def text_of(content: Any) -> str:
    """Text of a string or a list of content blocks ({type: text|input_text|output_text})."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            if isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif block.get("type") in ("image", "input_image"):
                parts.append("[image]")
    return "\n".join(part for part in parts if part)


def checklist_line(items: list[tuple[str, str]]) -> str:
    """A todo list as one line: "☑ done · ◐ doing · ☐ to do"."""
    return " · ".join(f"{CHECK_MARKS.get(status, '☐')} {text.strip()}" for text, status in items)


def tool_name(value: Any) -> str:
    name = value if isinstance(value, str) and value.strip() else "tool"
    return name[:MAX_TOOL_NAME_CHARS]


def record_time(record: dict[str, Any]) -> str | None:
    """The record's own ISO 8601 `timestamp`, normalised to UTC, or None."""
    value = record.get("timestamp")
    if not isinstance(value, str):
        return None
    try:
        moment = parse_datetime(value.strip())
        if moment is None or not 1970 <= moment.year < 9000:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
    except (ValueError, OverflowError):  # bad offsets, times out of datetime's range
        return None


def digest_key(record: Any) -> str:
    return hashlib.sha256(canonical_json(record).encode()).hexdigest()[:24]


def own_key(value: Any, record: Any) -> str:
    """A record's key for its event ids: its own id when it has a usable one."""
    if isinstance(value, str) and value.strip() and len(value) <= MAX_KEY_CHARS:
        return value.strip()
    return digest_key(record)


# -- state --------------------------------------------------------------------------


def _table(value: Any, kind: type) -> dict[str, Any]:
    """A state table from the client, kept only where it holds what it should."""
    if not isinstance(value, dict):
        return {}
    kept = {
        key: item
        for key, item in value.items()
        if isinstance(key, str) and len(key) <= MAX_ID_CHARS and isinstance(item, kind)
    }
    return dict(list(kept.items())[-MAX_STATE_ENTRIES:])


def _short(value: Any) -> str:
    return value if isinstance(value, str) and len(value) <= MAX_ID_CHARS else ""


# -- the translator -------------------------------------------------------------------


@dataclass
class Translation:
    """A file's (or a request's) records as events, each with the record it came from."""

    events: list[dict[str, Any]] = field(default_factory=list)
    origins: list[int] = field(default_factory=list)


class SessionTranslator:
    """Records in, events out; subclasses handle their dialect's records (`_record`)."""

    dialect = ""
    prefix = ""

    def __init__(self, state: Any = None):
        state = state if isinstance(state, dict) else {}
        #: The open run ("" when none), and the time of the last dated record.
        self.run: str = _short(state.get("run"))
        self.last_time: str | None = record_time({"timestamp": state.get("time")})
        #: The last record's key: the end of the session is named after it.
        self.last_key: str = _short(state.get("last"))
        #: Pending tool calls: id -> tool name.
        self.calls: dict[str, str] = _table(state.get("calls"), str)
        #: Sub-agents: a sidechain record's uuid -> the call it runs under, while it runs;
        #: an agent's id -> its call, for good (its records may come after its result).
        self.chains: dict[str, str] = _table(state.get("chains"), str)
        self.agents: dict[str, str] = _table(state.get("agents"), str)
        #: Open sub-agent calls: call id -> digest of their prompt.
        self.tasks: dict[str, str] = _table(state.get("tasks"), str)
        self.skipped: dict[str, int] = {}
        self._key = ""
        self._time: str | None = None
        self._count = 0
        self._out: list[dict[str, Any]] = []

    def dump_state(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "time": self.last_time,
            "last": self.last_key,
            "calls": self.calls,
            "chains": self.chains,
            "agents": self.agents,
            "tasks": self.tasks,
        }

    # -- records ------------------------------------------------------------

    def translate(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """The events one record makes (none for a duplicate the dialect writes twice)."""
        record = clean(record)
        self._time = record_time(record) or self.last_time
        if self._time:
            self.last_time = self._time
        self._out = []
        self._count = 0
        self._key = self.key_of(record)
        self._record(record)
        self.last_key = self._key
        return self._out

    def finish(self) -> list[dict[str, Any]]:
        """The end of the session (of an imported file, or a tail moving on): the open
        run ends."""
        self._out = []
        self._time = self.last_time
        if self.run:
            # Named after the last record: the same file ends the same way every time,
            # and a longer copy of it (the session went on) ends anew, later.
            self._key = f"{self.last_key or self.run.split(':', 1)[-1]}:end"
            self._count = 0
            self.emit("agent.status", status="completed")
            self.run = ""
        return self._out

    def key_of(self, record: dict[str, Any]) -> str:
        raise NotImplementedError

    def _record(self, record: dict[str, Any]) -> None:
        raise NotImplementedError

    # -- events -------------------------------------------------------------

    def emit(self, type: str, *, event_id: str | None = None, **fields: Any) -> dict[str, Any]:
        """An event of the record; its id the record's next (`next_id`) unless given."""
        if not self.run and type not in (SESSION_RECORD, "agent.status"):
            # Work before any prompt (a file that starts mid-session): a run of its own, so
            # that the end of the session ends it and no tool is left ticking (T2).
            self.run = f"{self.prefix}:{self._key}"[:MAX_ID_CHARS]
            self.emit("agent.status", status="running")
        event: dict[str, Any] = {"type": type, "event_id": event_id or self.next_id()}
        if self.run:
            event["run_id"] = self.run
        if self._time:
            event["timestamp"] = self._time
        event.update({key: value for key, value in fields.items() if value is not None})
        self._out.append(event)
        return event

    def next_id(self) -> str:
        """The record's next event id: `<prefix>:<key>`, then `<prefix>:<key>:<n>`."""
        event_id = f"{self.prefix}:{self._key}" + (f":{self._count}" if self._count else "")
        self._count += 1
        return event_id[:MAX_ID_CHARS]

    def keep(self, record: dict[str, Any], kind: str, **fields: Any) -> None:
        """A record the page does not show, kept in the log as it came."""
        self.emit(SESSION_RECORD, dialect=self.dialect, kind=kind, record=record, **fields)

    def skip(self, what: str) -> None:
        """A record the dialect writes twice (the copy is not logged again)."""
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def start_run(self) -> None:
        """A user prompt: the run before it ends, a new one (named after it) starts."""
        if self.run:
            self.emit("agent.status", status="completed")
        self.run = f"{self.prefix}:{self._key}"[:MAX_ID_CHARS]
        self.emit("agent.status", status="running")

    def call(self, call_id: str, name: str, *, message_id: str | None = None, **fields: Any):
        """A tool call: a step naming it (so it sits where the model made it) and its start;
        a sub-agent's call (`parent_tool_call_id`) only starts, nested in its parent."""
        self.calls[call_id] = name
        self.calls = dict(list(self.calls.items())[-MAX_STATE_ENTRIES:])
        if not fields.get("parent_tool_call_id"):
            tool_call = {"id": call_id, "name": name}
            for key in ("args", "args_summary"):
                if fields.get(key) is not None:
                    tool_call[key] = fields[key]
            self.emit(
                "agent.step.completed",
                message_id=message_id or f"{self.prefix}:{call_id}"[:MAX_ID_CHARS],
                content="",
                tool_calls=[tool_call],
            )
        self.emit("agent.tool.started", tool_call_id=call_id, tool_name=name, **fields)

    def reasoning(
        self, message_id: str, text: str, *, encrypted: bool = False, ends: bool = True
    ) -> None:
        """The model's reasoning (R6): a reasoning block on the message it belongs to
        (`agent.reasoning.delta`), ended at once by completing that message with no text —
        a record holds a whole thought, so the block says "Thought", not "Thinking…" until
        the run ends. `ends=False` when the same record completes the message itself
        (with its text): an empty completion after it, re-sent, would blank that text.

        Ids: the record's next id is taken, as when reasoning was kept as a
        `session.record` under it, and the two events are named after it
        (`…:reasoning`, `…:reasoned`): the record's later events keep their ids, and a
        tail re-sending a session that a conversation holds from before gets duplicates
        and these two new events, never a 409 for an id reused with another body.
        Reasoning with no text and not encrypted says nothing: kept as a record."""
        message_id = message_id[:MAX_ID_CHARS]
        if not text.strip() and not encrypted:
            self.reasoning_record(message_id, text)
            return
        slot = self.next_id()
        self.emit(
            "agent.reasoning.delta",
            event_id=f"{slot}:reasoning"[:MAX_ID_CHARS],
            message_id=message_id,
            delta=text,
            encrypted=encrypted or None,
        )
        if ends:
            self.emit(
                "agent.step.completed",
                event_id=f"{slot}:reasoned"[:MAX_ID_CHARS],
                message_id=message_id,
                content="",
            )

    def reasoning_record(self, message_id: str, text: str, *, encrypted: bool = False) -> None:
        """Reasoning kept in the log only, as a `session.record` of kind "reasoning": one
        that says nothing, or a sub-agent's (its work shows inside its call's entry)."""
        self.emit(
            SESSION_RECORD,
            dialect=self.dialect,
            kind="reasoning",
            message_id=message_id[:MAX_ID_CHARS],
            text=text,
            encrypted=encrypted or None,
        )


# -- files ----------------------------------------------------------------------------


def records_of(raw: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for each non-blank line of a JSONL file."""
    for number, line in enumerate(decode(raw).split("\n"), start=1):
        line = line.strip()
        if not line:
            continue
        where = f"line {number}"
        value = decode_json(line, where=where)
        if not isinstance(value, dict):
            raise TranscriptError("each line must be a JSON object", where=where)
        yield number, value


def parse_file(raw: bytes, translator: SessionTranslator) -> Draft:
    """A whole session file as one draft: the same events a tail would have posted, and
    the end of the file ends the last run."""
    draft = Draft(digest=hashlib.sha256(raw).hexdigest())
    limit = settings.CHATUI_IMPORT_MAX_EVENTS
    number = 0
    for number, record in records_of(raw):
        for event in translator.translate(record):
            draft.events.append(event)
            draft.origins.append(f"line {number}")
    for event in translator.finish():
        draft.events.append(event)
        draft.origins.append("end of file")
    if not draft.events:
        raise TranscriptError("the file holds no records")
    if len(draft.events) > limit:
        raise TranscriptError(
            f"the file makes more than {limit} events (CHATUI_IMPORT_MAX_EVENTS); split it"
        )
    draft.skipped.update(translator.skipped)
    # Tool call ids are the records' own: importing the file again into the same
    # conversation is all duplicates, never a clash (chatui.importers checks others).
    draft.tool_call_ids = []
    return draft
