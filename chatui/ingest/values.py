"""What an event's fields may hold: the bad-input error, the limits the columns and
renderers set, one checker per kind of value, strict JSON decoding, and how a tool's
result and failure read. Shared by the native contract (`events`) and every dialect.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

#: Fields every event may carry, whatever its type or dialect.
COMMON_FIELDS = ("type", "event_id", "timestamp", "run_id")


class EventError(Exception):
    """Bad input: `status` is the HTTP status the API answers with."""

    def __init__(
        self, message: str, *, index: int | None = None, field: str | None = None, status: int = 400
    ):
        super().__init__(message)
        self.message = message
        self.index = index
        self.field = field
        self.status = status

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.message}
        if self.index is not None:
            body["index"] = self.index
        if self.field is not None:
            body["field"] = self.field
        return body


# --- limits: what the columns (chatui.models) and the renderers can hold ---------

#: Ids (`event_id`, `run_id`, `message_id`, `tool_call_id`, `parent_tool_call_id`,
#: `tool_calls[].id`) live in 200-character columns. A message id is 250 wide, but
#: the projection derives tool message ids from it (`tool_<id>_<n>`), so 200 here too.
MAX_ID_CHARS = 200
#: `tool_name` and `tool_calls[].name`: Message.tool_name is 200 characters.
MAX_TOOL_NAME_CHARS = 200
#: Conversation.title is 200 characters.
MAX_TITLE_CHARS = 200
MAX_DURATION_MS = 10 * 365 * 24 * 60 * 60 * 1000  # 10 years
MAX_TOKENS = 10**12
MAX_ATTEMPTS = 1000
#: Seqs and positions are 64-bit signed integers in SQLite and PostgreSQL.
MAX_SEQ = 2**63 - 1


# --- field checkers: each returns an error phrase, or None when the value fits ---

Checker = Callable[[Any], str | None]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def string(value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def nonempty_string(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    return None if value.strip() else "must not be empty"


def obj(value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be an object"


def boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _is_finite(value: int | float) -> bool:
    return isinstance(value, int) or math.isfinite(value)


def number_up_to(limit: int, meaning: str = "") -> Checker:
    """A finite number in 0..limit; `meaning` says what the limit is, for the message."""
    suffix = f" ({meaning})" if meaning else ""

    def check(value: Any) -> str | None:
        if not _is_number(value):
            return "must be a number"
        if not _is_finite(value):
            return "must be a finite number"
        if value < 0:
            return "must not be negative"
        return None if value <= limit else f"must be at most {limit}{suffix}"

    return check


def integer_up_to(limit: int) -> Checker:
    def check(value: Any) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool):
            return "must be an integer"
        if value < 0:
            return "must not be negative"
        return None if value <= limit else f"must be at most {limit}"

    return check


def fraction(value: Any) -> str | None:
    if not _is_number(value):
        return "must be a number"
    if _is_finite(value) and 0 <= value <= 1:
        return None
    return "must be between 0 and 1"


def id_string(value: Any) -> str | None:
    """A non-empty id that fits its column."""
    problem = nonempty_string(value)
    if problem is None and len(value) > MAX_ID_CHARS:
        return f"must be at most {MAX_ID_CHARS} characters"
    return problem


def short_name(value: Any) -> str | None:
    """A tool name that fits its column."""
    problem = nonempty_string(value)
    if problem is None and len(value) > MAX_TOOL_NAME_CHARS:
        return f"must be at most {MAX_TOOL_NAME_CHARS} characters"
    return problem


def optional_id(value: Any) -> str | None:
    """`tool_calls[].id`: "" means "no id" (matched by name), else an id that fits."""
    if not isinstance(value, str):
        return "must be a string"
    return None if len(value) <= MAX_ID_CHARS else f"must be at most {MAX_ID_CHARS} characters"


duration = number_up_to(MAX_DURATION_MS, "10 years in ms")
token_count = integer_up_to(MAX_TOKENS)
attempt_count = integer_up_to(MAX_ATTEMPTS)


def anything(value: Any) -> str | None:
    return None


def one_of(*choices: str) -> Checker:
    def check(value: Any) -> str | None:
        if value in choices:
            return None
        return "must be one of " + ", ".join(choices)

    return check


#: S4 (docs/events.md#agent-step-completed): what chatui reads of a step's `usage`; other keys
#: stay in the log, unread.
USAGE_COUNTS = ("input_tokens", "output_tokens")


def token_usage(value: Any) -> str | None:
    """`usage` `{input_tokens, output_tokens, model}`: counts within MAX_TOKENS, a model
    name that fits a tool name's column; every key optional."""
    if not isinstance(value, dict):
        return "must be an object {input_tokens, output_tokens, model}"
    for key in USAGE_COUNTS:
        if key in value and (problem := token_count(value[key])) is not None:
            return f"{key} {problem}"
    if "model" in value and (problem := short_name(value["model"])) is not None:
        return f"model {problem}"
    return None


def tool_call_list(value: Any) -> str | None:
    return None if isinstance(value, list) else "must be an array"


def contract_number(value: Any, limit: int, *, integral: bool = False) -> int | float | None:
    """`value` if ingest would accept it today (finite, 0..limit), else None.

    For readers of stored data: rows written before these limits existed (or by
    hand) must render as "—", never crash a page, an export or a replay.
    """
    if not _is_number(value) or (integral and not isinstance(value, int)):
        return None
    if not _is_finite(value) or not 0 <= value <= limit:
        return None
    return value


_ASCII_DIGITS = re.compile(r"[0-9]{1,19}")


def parse_seq(text: str) -> int | None:
    """A query parameter such as `after=`/`before=`: ASCII digits only (`"²".isdigit()`
    is true, and int() refuses it) and at most MAX_SEQ (a bigger one overflows the
    database's integers). None when it is anything else."""
    if not _ASCII_DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if value <= MAX_SEQ else None


# --- text and numbers no column can hold (SEC6) ------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")
#: Above this many bits an int may exceed Python's int↔str digit limit (4300 digits):
#: such ints are checked exactly, the cheap test keeps ordinary ones fast.
_BIG_INT_BITS = 1000


def text_problem(text: str) -> str | None:
    """Why `text` cannot be stored and shown, or None. PostgreSQL refuses NUL in text
    and jsonb, and a lone surrogate cannot be encoded as UTF-8 at all: both are
    rejected (not silently replaced), so what is stored is what was sent."""
    if "\x00" in text:
        return "must not contain the NUL character (\\u0000)"
    found = _SURROGATE.search(text)
    if found:
        return (
            f"must not contain a lone surrogate (U+{ord(found.group()):04X}); "
            "text must be valid Unicode"
        )
    return None


def _number_problem(value: int | float) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number (1e999 overflows to infinity)"
    if isinstance(value, int) and value.bit_length() > _BIG_INT_BITS:
        try:
            str(value)
        except ValueError:
            return f"must have at most {sys.get_int_max_str_digits()} digits"
    return None


def _shown_key(key: str) -> str:
    """A key as it may appear in an error's field path: escaped and short."""
    shown = key.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\u0000")
    return shown if len(shown) <= 40 else shown[:39] + "…"


def unstorable(value: Any) -> tuple[str, str] | None:
    """The first string, key or number in decoded JSON that cannot be stored or
    rendered, as (field path, problem), or None. Iterative, like `json_depth`."""
    stack = [(value, "")]
    while stack:
        item, where = stack.pop()
        problem = None
        if isinstance(item, str):
            problem = text_problem(item)
        elif _is_number(item):
            problem = _number_problem(item)
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                name = key if isinstance(key, str) else str(key)
                child_path = f"{where}.{_shown_key(name)}" if where else _shown_key(name)
                key_problem = text_problem(name)
                if key_problem:
                    return child_path, f"has an invalid key: it {key_problem}"
                children.append((child, child_path))
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{where}[{i}]") for i, child in reversed(list(enumerate(item))))
        if problem:
            return where, problem
    return None


def json_depth(value: Any) -> int:
    """Nesting depth of decoded JSON, computed without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def decode_json(text: str, subject: str, *, max_depth: int) -> Any:
    """`text` as JSON, refusing NaN and infinities and nesting deeper than `max_depth`;
    errors name `subject` ("request body", "message"). The API and the ingest channel
    read their input through this one function."""
    try:
        if text.startswith("\ufeff"):  # as json.loads refuses it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        body = _DECODER.decode(text)
    except RecursionError:
        raise _too_deep(max_depth) from None
    except ValueError as problem:
        raise EventError(f"{subject} is not valid JSON: {problem}") from None
    if json_depth(body) > max_depth:
        raise _too_deep(max_depth)
    return body


def _too_deep(max_depth: int) -> EventError:
    return EventError(f"JSON is nested deeper than {max_depth} levels")


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


# Made once: `json.loads` given a keyword builds a decoder on every call, about half of
# decoding a small event's body (on the event loop for the ingest channel).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def canonical_json(value: Any) -> str:
    """Raises ValueError for NaN, infinities and ints over Python's digit limit."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


# -- failures that are only text or details (docs/events.md#agentspine, docs/rendering.md#g15)
# ------------------------

_EXIT_CODE = re.compile(r"\[exit code: (-?\d{1,10})\]\s*\Z")


def text_failure(text: str) -> str | None:
    """AgentSpine's failures are text: the error text when `text` says it failed.

    `Error:` / `[Tool Error]` prefixes and an `[exit code: N]` suffix (N ≠ 0). The
    suffix regex is anchored and bounded, so it costs one pass over the tail.
    """
    stripped = text.lstrip()
    if stripped.startswith(("Error:", "[Tool Error]")):
        return text.strip()
    found = _EXIT_CODE.search(text[-64:])
    if found and int(found.group(1)) != 0:
        return text.strip()
    return None


def details_failure(details: Any) -> str | None:
    """G15: details saying a command exited non-zero or a fetch got HTTP ≥ 400."""
    if not isinstance(details, dict):
        return None
    code = _whole_number(details.get("exit_code"))
    if code is not None and code != 0:
        return f"exit code {code}"
    status = _whole_number(details.get("status_code"))
    if status is not None and status >= 400:
        return f"HTTP {status}"
    return None


def _whole_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,10}", value.strip()):
        return int(value.strip())
    return None


def result_text(result: Any) -> str:
    """The human-readable text of a tool result (docs/events.md#canonical-messages `content`)."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if is_tool_execution_result(result):
        return result["text"]
    return json.dumps(result, separators=(",", ":"), ensure_ascii=False)


def is_tool_execution_result(result: Any) -> bool:
    """[001] `{"text": str, "details"?: any}` and nothing else."""
    return (
        isinstance(result, dict)
        and isinstance(result.get("text"), str)
        and set(result) <= {"text", "details"}
    )
