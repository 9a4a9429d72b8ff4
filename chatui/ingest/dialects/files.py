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

Hostile files get a `TranscriptError`, never another exception: a file is at
most `CHATUI_IMPORT_MAX_BYTES` and makes at most `CHATUI_IMPORT_MAX_EVENTS`
events; JSON nested deeper than `CHATUI_MAX_JSON_DEPTH`, numbers that are not
finite (`NaN`, `1e999`) or too long for Python, lone surrogates (`"\\ud800"`,
which no database can store) and times outside 1970–9000 are refused with the
place they were found. Parsing is linear in the file's size and touches no
database, so an import parses before it opens a transaction.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import IO, Any

from django.conf import settings
from django.utils.dateparse import parse_datetime

from chatui.ingest.values import json_depth
from chatui.text import human_size

IMPORT_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
STEP = timedelta(seconds=1)
DIGEST_CHARS = 12
# Unix times above this are taken as milliseconds (it is 5138 AD in seconds).
MILLISECONDS_FROM = 100_000_000_000
#: Times an import accepts. Later ones leave room for the one-second steps of
#: undated items and for any time zone, which year 9999 would overflow.
EARLIEST = UNIX_EPOCH
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
#: Skipped kinds are named in the import's summary: cut to this.
SKIPPED_NAME_CHARS = 80
_SURROGATE = re.compile("[\ud800-\udfff]")


class TranscriptError(ValueError):
    """A file that cannot be imported; `where` names the line or message at fault."""

    def __init__(self, message: str, *, where: str | None = None):
        super().__init__(f"{where}: {message}" if where else message)
        self.message = message
        self.where = where


Source = str | bytes | IO[str] | IO[bytes]


def max_import_bytes() -> int:
    return settings.CHATUI_IMPORT_MAX_BYTES


def read_source(source: Source) -> bytes:
    """The file's bytes, from text, bytes, or a text or binary file object; a file
    object is read no further than the size limit."""
    limit = max_import_bytes()
    if isinstance(source, str):
        source = source.encode("utf-8")
    if isinstance(source, bytes):
        data: Any = source
    else:
        data = source.read(limit + 1)
        if isinstance(data, str):
            data = data.encode("utf-8")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TranscriptError("expected text, bytes or a file object")
    if len(data) > limit:
        raise TranscriptError(
            f"the file is larger than {human_size(limit)} (CHATUI_IMPORT_MAX_BYTES)"
        )
    return bytes(data)


def decode(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise TranscriptError("the file is not valid UTF-8", where=f"line {line}") from None
    return text.removeprefix("\ufeff")


def load_json(text: str) -> Any:
    """A JSON document; problems inside a message name it (`messages[i]`)."""
    document = decode_json(text)
    if isinstance(document, list):
        for index, item in enumerate(document):
            check_json(item, where=f"messages[{index}]", depth=2)
    elif isinstance(document, dict):
        messages = document.get("messages")
        for key, value in document.items():
            if key == "messages" and isinstance(messages, list):
                for index, item in enumerate(messages):
                    check_json(item, where=f"messages[{index}]", depth=3)
            else:
                check_json({key: value}, where=None)
    return document


def decode_json(text: str, *, where: str | None = None) -> Any:
    """`json.loads`, with every way it can fail as a TranscriptError: syntax,
    nesting too deep for the parser, NaN/Infinity (not JSON), integers too long
    for Python (a ValueError of its own). `where` names the text (a line of a
    JSONL file); without it, a syntax error names its line in the file."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise TranscriptError(
            f"not valid JSON: {error.msg} (column {error.colno})",
            where=where or f"line {error.lineno}",
        ) from None
    except RecursionError:
        raise TranscriptError(_too_deep(), where=where) from None
    except ValueError as error:
        raise TranscriptError(f"not valid JSON: {_value_problem(error)}", where=where) from None


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _value_problem(error: ValueError) -> str:
    text = str(error)
    if "integer string conversion" in text:
        return "a number has too many digits"
    return text[:200]


def _too_deep() -> str:
    return f"the JSON is nested deeper than {settings.CHATUI_MAX_JSON_DEPTH} levels"


def check_json(value: Any, *, where: str | None, depth: int = 1) -> None:
    """Refuse what decoded JSON may hold but chatui cannot store or show: nesting
    deeper than the API accepts, numbers that are not finite, lone surrogates."""
    if json_depth(value) + depth - 1 > settings.CHATUI_MAX_JSON_DEPTH:
        raise TranscriptError(_too_deep(), where=where)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            _check_text(item, where)
        elif isinstance(item, float) and not math.isfinite(item):
            raise TranscriptError("a number is too large to be finite", where=where)
        elif isinstance(item, dict):
            stack.extend(item)  # the keys
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _check_text(text: str, where: str | None) -> None:
    if not text.isascii() and (found := _SURROGATE.search(text)) is not None:
        raise TranscriptError(
            f"a string holds a lone surrogate (\\u{ord(found.group()):04x}), "
            "which is not valid Unicode",
            where=where,
        )


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
        where = f"line {number}"
        value = decode_json(line, where=where)
        if not isinstance(value, dict):
            raise TranscriptError("each line must be a JSON object", where=where)
        check_json(value, where=where)
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
                f"'{key}' must be an ISO 8601 date-time or unix seconds "
                f"between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}",
                where=where,
            )
        return moment
    return None


def _parse_time(value: Any) -> datetime | None:
    """An aware datetime within EARLIEST..LATEST, or None."""
    moment = None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = value / 1000 if value >= MILLISECONDS_FROM else value
            moment = UNIX_EPOCH + timedelta(seconds=seconds)
        elif isinstance(value, str):
            moment = parse_datetime(value.strip())
            if moment is not None and moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            if moment is not None:
                moment = moment.astimezone(UTC)
    except (OverflowError, ValueError):  # out of datetime's range, bad offsets
        return None
    if moment is None or not EARLIEST <= moment < LATEST:
        return None
    return moment


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
            decoded = decode_json(raw, where="arguments")
            check_json(decoded, where="arguments")
        except TranscriptError:  # not JSON, or JSON chatui cannot store: kept as text
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
        self.max_events = settings.CHATUI_IMPORT_MAX_EVENTS
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
        if len(self._pending) >= self.max_events:
            raise TranscriptError(
                f"the file makes more than {self.max_events} events "
                "(CHATUI_IMPORT_MAX_EVENTS); split it",
                where=where,
            )
        call_id = event.get("tool_call_id")
        if event["type"] in ("agent.tool.started", "tool_execution_start") and call_id:
            self._tool_ids.append(call_id)
        self._pending.append(_Pending(event, where, at))

    def skip(self, what: str, count: int = 1) -> None:
        self.skipped[what[:SKIPPED_NAME_CHARS]] += count

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
