"""What a span says, whatever convention it speaks: the reading the conventions'
translators (`otel_genai`, `openinference`) give and the projector applies
(chatui.ingest.otel_projection), and what every span says the same way — its times,
its outcome, whether it is a trace's root (docs/events.md#otlp).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from chatui.ingest.values import MAX_ID_CHARS, MAX_TOOL_NAME_CHARS

#: OTLP's Status.code for an error.
STATUS_ERROR = 2
#: An attribute's text past this is cut (a tool's arguments as text, say): the whole
#: span is in the log.
MAX_TEXT = 200_000


@dataclass
class ToolCall:
    call_id: str
    name: str
    args: Any = None
    result: Any = None
    has_result: bool = False
    error: str = ""
    duration_ms: int | None = None
    #: False when the span names no call id (`call_id` is then its span id): the entry
    #: is the model's queued call of that name, if one waits.
    id_known: bool = True


@dataclass
class Reading:
    """What one span adds to a transcript. Empty for spans no convention reads
    (an HTTP request, a framework's inner step): they stay in the log."""

    #: (message id, text) of the user messages its model call was given, each once:
    #: the id is the same in every model call that repeats the message.
    users: list[tuple[str, str]] = field(default_factory=list)
    #: The assistant's turn its model call answered: an `agent.step.completed` payload.
    step: dict[str, Any] | None = None
    tool: ToolCall | None = None


def times(span: dict[str, Any]) -> tuple[int, int]:
    return int(span.get("startTimeUnixNano") or 0), int(span.get("endTimeUnixNano") or 0)


def duration_ms(span: dict[str, Any]) -> int | None:
    start, end = times(span)
    return max(0, (end - start) // 1_000_000) if start and end else None


def at(nanoseconds: int) -> datetime | None:
    if nanoseconds <= 0:
        return None
    try:
        return datetime.fromtimestamp(nanoseconds / 1e9, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def is_root(span: dict[str, Any]) -> bool:
    return not span.get("parentSpanId")


def failure(span: dict[str, Any]) -> str:
    """The span's error, or "": status ERROR (its message, else an `exception` event's
    message), or an `error.type` attribute."""
    status = span.get("status") or {}
    attrs = span.get("attributes") or {}
    error_type = attrs.get("error.type")
    if status.get("code") != STATUS_ERROR and not error_type:
        return ""
    for event in span.get("events") or ():
        if event.get("name") == "exception":
            message = (event.get("attributes") or {}).get("exception.message")
            if isinstance(message, str) and message.strip():
                return message
    return status.get("message") or (str(error_type) if error_type else "") or "failed"


def text(value: Any) -> str:
    if isinstance(value, str):
        return value[:MAX_TEXT]
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)[:MAX_TEXT]


def short_id(value: Any) -> str:
    return text(value)[:MAX_ID_CHARS] if value not in (None, "") else ""


def tool_name(value: Any) -> str:
    return (text(value).strip() or "tool")[:MAX_TOOL_NAME_CHARS]


def json_or_text(value: Any) -> Any:
    """Arguments or a result as the span holds them: JSON text read as JSON, else as is."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[", '"') or stripped in ("true", "false", "null"):
            try:
                return json.loads(stripped)
            except ValueError:
                pass
        return value[:MAX_TEXT]
    return value


class History:
    """Message ids for a model call's input, the same in every call that repeats it:
    each id digests the message and every message before it, so the first prompt of a
    conversation is one message however many calls (or runs, given the history) send it."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()
        self.users: list[tuple[str, str]] = []

    def add(self, role: str, content: str, calls: list[dict[str, Any]] | None = None) -> None:
        # Role, text and the ids of its calls: enough to tell messages apart, and no
        # JSON encoding of each message of a long history for every model call.
        ids = ",".join(str(call.get("id", call.get("name", ""))) for call in calls or ())
        self._digest.update(f"{len(role)}:{role}{len(content)}:{content}{ids}\x00".encode())
        if role == "user" and content.strip():
            self.users.append(("otel-user-" + self._digest.hexdigest()[:32], content))


def flattened(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Attributes flattened with indices (`llm.input_messages.0.message.role`, as
    OpenInference and OpenLLMetry write lists) as a list of nested objects."""
    items: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        index, _, rest = key[len(start) :].partition(".")
        if not index.isdigit() or not rest:
            continue
        node = items.setdefault(int(index), {})
        parts = rest.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value
    return [items[index] for index in sorted(items)]


def as_list(node: Any) -> list[Any]:
    """A flattened list's nested list (`tool_calls.0.…` read as {"0": …})."""
    if isinstance(node, list):
        return node
    if isinstance(node, dict):
        keys = sorted((int(key), key) for key in node if str(key).isdigit())
        return [node[key] for _, key in keys]
    return []


def token_sum(*values: Any) -> int | None:
    numbers = [int(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return sum(numbers) if numbers else None
