"""What every importer shares: reading the file, ids, timestamps, errors.

An importer turns a file into a list of chatui events (`Draft`); `chatui.importers`
then hands them to `ingest`, the only writer. Everything here is a pure
function of the file's bytes, so importing the same file twice gives the same
events, with the same `event_id`s: the second import is all duplicates.

Ids (`<p>` is `import:` + the first 12 hex digits of the file's sha256):

- `event_id`  `<p>:<n>`, n = 1, 2, … in the order the events are ingested;
- `run_id`    `<p>` (each import is one run, ended by `agent.status completed`);
- message ids `<p>:m<i>` (i = the message's index or line in the file), with a
  `.k` suffix when one source message becomes several chatui messages;
- tool call ids come from the file; where the file has none, `<p>:t<n>`.

Timestamps: an event takes the timestamp of the source item (message, line)
it came from: `timestamp` or `created_at` (ISO 8601 or unix time), or
`created` (unix time; above 1e11 read as milliseconds). The events of an
undated item share one time, one second after the events before them. The
run's opening `agent.status running` is stamped with the first timestamp found
in the file, or `IMPORT_EPOCH` (2000-01-01T00:00:00Z) when the file has none,
so an undated file always imports at the same times; the closing `agent.status
completed` comes one second after the last event.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import IO, Any

from django.utils.dateparse import parse_datetime

IMPORT_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
STEP = timedelta(seconds=1)
DIGEST_CHARS = 12
# Unix times above this are taken as milliseconds (it is 5138 AD in seconds).
MILLISECONDS_FROM = 100_000_000_000


class TranscriptError(ValueError):
    """A file that cannot be imported; `where` names the line or message at fault."""

    def __init__(self, message: str, *, where: str | None = None):
        super().__init__(f"{where}: {message}" if where else message)
        self.message = message
        self.where = where


Source = str | bytes | IO[str] | IO[bytes]


def read_source(source: Source) -> bytes:
    """The file's bytes, from text, bytes, or a text or binary file object."""
    if isinstance(source, bytes):
        return source
    if isinstance(source, str):
        return source.encode("utf-8")
    data = source.read()
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise TranscriptError("expected text, bytes or a file object")


def decode(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise TranscriptError("the file is not valid UTF-8", where=f"line {line}") from None
    return text.removeprefix("\ufeff")


def load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise TranscriptError(
            f"not valid JSON: {error.msg} (column {error.colno})", where=f"line {error.lineno}"
        ) from None


def jsonl_lines(text: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line.

    Lines are split on "\\n" only: JSON written with ensure_ascii=False may hold
    U+2028 and friends inside strings, which str.splitlines() would split on.
    """
    objects = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.strip().removesuffix("\r")
        if not line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise TranscriptError(
                f"not valid JSON: {error.msg} (column {error.colno})", where=f"line {number}"
            ) from None
        if not isinstance(value, dict):
            raise TranscriptError("each line must be a JSON object", where=f"line {number}")
        objects.append((number, value))
    if not objects:
        raise TranscriptError("the file holds no events")
    return objects


def message_list(document: Any) -> list[Any]:
    """A JSON list of messages, or an object with a "messages" list (a request body)."""
    if isinstance(document, list):
        messages = document
    elif isinstance(document, dict) and isinstance(document.get("messages"), list):
        messages = document["messages"]
    else:
        raise TranscriptError('expected a JSON list of messages or {"messages": [...]}')
    if not messages:
        raise TranscriptError("the file holds no messages")
    return messages


def source_time(item: dict[str, Any], where: str) -> datetime | None:
    """An item's own time: `timestamp`/`created_at` (ISO 8601 or unix), `created` (unix)."""
    for key in ("timestamp", "created_at", "created"):
        value = item.get(key)
        if value is None:
            continue
        moment = _parse_time(value)
        if moment is None:
            raise TranscriptError(
                f"'{key}' must be an ISO 8601 date-time or unix seconds", where=where
            )
        return moment
    return None


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value >= MILLISECONDS_FROM else value
        try:
            return UNIX_EPOCH + timedelta(seconds=seconds)
        except (OverflowError, ValueError):
            return None
    if isinstance(value, str):
        try:
            moment = parse_datetime(value.strip())
        except ValueError:
            return None
        if moment is not None and moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment
    return None


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def require(item: dict[str, Any], key: str, where: str, kind: type = str) -> Any:
    value = item.get(key)
    if not isinstance(value, kind) or (kind is str and not value.strip()):
        described = "a non-empty string" if kind is str else f"a {kind.__name__}"
        raise TranscriptError(f"'{key}' must be {described}", where=where)
    return value


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool arguments as sent (a JSON string, or an object) → `args`/`args_summary`.

    An object becomes `args`. Anything else — a JSON string that is not an
    object, or not JSON at all (models do write broken JSON) — is kept verbatim
    as `args_summary`, so nothing the model sent is lost.
    """
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return {"args": raw}
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            decoded = json.loads(raw)
        except json.JSONDecodeError:
            return {"args_summary": raw}
        if isinstance(decoded, dict):
            return {"args": decoded}
        return {"args_summary": raw}
    return {"args_summary": json.dumps(raw, ensure_ascii=False)}


@dataclass
class _Pending:
    event: dict[str, Any]
    where: str
    at: datetime | None


@dataclass
class Draft:
    """The events an import will ingest, in order, each with where it came from."""

    digest: str
    events: list[dict[str, Any]] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    run_id: str = ""
    #: Tool call ids this import creates (checked against the target conversation).
    tool_call_ids: list[str] = field(default_factory=list)


class Builder:
    """Collects events in order; `finish` stamps ids and timestamps deterministically."""

    def __init__(self, raw: bytes, *, one_run: bool = True):
        self.digest = hashlib.sha256(raw).hexdigest()
        self.prefix = f"import:{self.digest[:DIGEST_CHARS]}"
        self.run_id = self.prefix if one_run else ""
        self.one_run = one_run
        self.skipped: Counter[str] = Counter()
        self._pending: list[_Pending] = []
        self._tool_serial = 0
        self._tool_ids: list[str] = []

    # -- ids ---------------------------------------------------------------

    def message_id(self, index: int | str, part: int = 0) -> str:
        return f"{self.prefix}:m{index}" + (f".{part}" if part else "")

    def new_tool_call_id(self) -> str:
        self._tool_serial += 1
        return f"{self.prefix}:t{self._tool_serial}"

    # -- events ------------------------------------------------------------

    def add(self, event: dict[str, Any], *, where: str, at: datetime | None = None) -> None:
        call_id = event.get("tool_call_id")
        if event["type"] in ("agent.tool.started", "tool_execution_start") and call_id:
            self._tool_ids.append(call_id)
        self._pending.append(_Pending(event, where, at))

    def skip(self, what: str, count: int = 1) -> None:
        self.skipped[what] += count

    def finish(self, *, keep_ids: bool = False) -> Draft:
        """Stamp event ids, run ids and timestamps; wrap one-run imports in a run.

        `keep_ids` (the chatui format) keeps an event's own `event_id`,
        `run_id` and `timestamp` where it has them.
        """
        if not self._pending:
            raise TranscriptError("the file holds nothing to import")
        pending = list(self._pending)
        first_time = next((item.at for item in pending if item.at is not None), None)
        if self.one_run:
            start = first_time or IMPORT_EPOCH
            pending.insert(
                0, _Pending({"type": "agent.status", "status": "running"}, "start of run", start)
            )
            pending.append(_Pending({"type": "agent.status", "status": "completed"}, "end", None))
        draft = Draft(digest=self.digest, run_id=self.run_id, skipped=self.skipped)
        previous: datetime | None = None
        previous_where = None
        for number, item in enumerate(pending, start=1):
            if item.at is not None:
                at = item.at
            elif previous is None:
                at = IMPORT_EPOCH
            elif item.where == previous_where:
                at = previous  # events from one source item share its time
            else:
                at = previous + STEP
            event = dict(item.event)
            stamped: dict[str, Any] = {"type": event.pop("type")}
            own_id = event.pop("event_id", None) if keep_ids else None
            stamped["event_id"] = own_id or f"{self.prefix}:{number}"
            if self.run_id:
                stamped["run_id"] = self.run_id
            if not keep_ids or "timestamp" not in event:
                stamped["timestamp"] = iso(at)
            stamped.update(event)
            draft.events.append(stamped)
            draft.origins.append(item.where)
            previous, previous_where = at, item.where
        draft.tool_call_ids = list(dict.fromkeys(self._tool_ids))
        return draft


# -- text helpers ------------------------------------------------------------

PLACEHOLDERS = {
    "image": "[image]",
    "image_url": "[image]",
    "input_image": "[image]",
    "input_audio": "[audio]",
    "audio": "[audio]",
    "file": "[file]",
    "document": "[document]",
}


def join_text(parts: list[str], separator: str = "\n\n") -> str:
    return separator.join(part for part in parts if part)
