"""The agent protocol and the run context agents emit their events through.

An agent is any object with a name, an `accepts_interjections` flag and an
async `run(ctx)`. It never builds event dicts by hand: `RunContext` and the
handles it gives out (`AssistantTurn`, `ToolCall`) are the only places where
the shapes of docs/events.md#event-types are written, and every event they make goes through the
run's sink, which is `chatui.ingest.service.ingest` (run in a thread by the runner).

Ids are derived from the run id and counters — never from the clock — so a
deterministic agent produces the same ids, event ids and messages every time:
`{run_id}.e{n}` for event ids (the idempotency keys), `{run_id}.m{n}` for
assistant messages and `{run_id}.t{n}` for tool calls.

Why it is long: it is the one place where docs/events.md#event-types's event shapes are written for
agents (every handle and its events), which is the point of having it.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

from django.conf import settings

from chatui.text import clip, is_invisible

if TYPE_CHECKING:
    import httpx

Event = dict[str, Any]
#: Receives a batch of events of this run (already stamped) and persists them.
EventSink = Callable[[list[Event]], Awaitable[Any]]


class AgentError(Exception):
    """A failure the user should read: the run ends `failed` with this text."""


class RunInProgress(Exception):
    """`start_run` refused: a run is going and the agent takes no interjections."""

    def __init__(self, run_id: str):
        super().__init__(
            "The agent is still working on the previous message. "
            "Wait for it to finish, or press Stop."
        )
        self.run_id = run_id


class RunEnded(Exception):
    """An event was emitted after the run's completed/failed status."""


@runtime_checkable
class Agent(Protocol):
    """What the runner drives. One instance may serve many runs."""

    name: str
    #: May the user send messages while a run is going? They reach the run
    #: through `RunContext.take_interjections()`.
    accepts_interjections: bool

    async def run(self, ctx: RunContext) -> None:
        """Do the work of one run. Return normally to complete it (the runner
        emits `completed` unless the agent ended the run itself), raise
        `AgentError` to fail it with a message. Cancellation stops it."""
        ...


def setting(name: str, default: Any = None, cast: Callable[[Any], Any] | None = None) -> Any:
    """A Django setting, else the environment variable of the same name, else `default`."""
    value = getattr(settings, name, None)
    if value is None or value == "":
        value = os.environ.get(name)
    if value is None or value == "":
        return default
    return cast(value) if cast else value


def demo_delay() -> float:
    """Seconds between the demo's steps (`CHATUI_DEMO_DELAY`, default 0.35)."""
    return setting("CHATUI_DEMO_DELAY", 0.35, float)


# -- what a failure message may say about a remote endpoint --------------------------
#
# Failure messages become the run's `error_message`: shown in the red banner,
# stored in the event log, exported. So they name an endpoint by its origin only,
# and quote a remote body as a short, one-line, masked excerpt.

#: Characters of a remote body quoted in a failure message.
EXCERPT_CHARS = 200
#: Bytes of a failed response's body read at most (the rest is never downloaded).
REMOTE_BODY_BYTES = 8 * 1024
#: "user:password@" inside a URL quoted by a remote body.
_USERINFO = re.compile(r"(?<=://)[^/\s@]+@")


def endpoint_origin(url: str) -> str:
    """scheme://host[:port] of an endpoint: never its user:password, path or query
    string, any of which may carry a key."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if not host or parts.scheme not in ("http", "https"):
        return "(an invalid URL)"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def url_secrets(url: str) -> list[str]:
    """The password a URL carries, as written and decoded, to mask in remote text."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return []
    return [password, unquote(password)] if password else []


def remote_excerpt(text: str, *, secrets: Iterable[str] = (), limit: int = EXCERPT_CHARS) -> str:
    """Remote text fit for a failure message: known secrets (tokens, keys, passwords
    the remote may echo) and URL credentials masked, control and invisible
    characters turned to spaces, on one line, at most `limit` characters."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = _USERINFO.sub("***@", text)
    text = "".join(" " if is_invisible(char) else char for char in text)
    return clip(" ".join(text.split()), limit)


async def read_prefix(response: httpx.Response, limit: int = REMOTE_BODY_BYTES) -> str:
    """The first `limit` bytes of a streamed response's body, as text."""
    data = b""
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) >= limit:
            break
    return data[:limit].decode("utf-8", errors="replace")


def estimate_tokens(*texts: str) -> int:
    """A deterministic stand-in for a tokenizer: about four characters a token."""
    return max(1, round(sum(len(text) for text in texts) / 4))


def _ms_since(start: float) -> int:
    return max(0, round((time.monotonic() - start) * 1000))


class RunContext:
    """One run of one agent in one conversation, and the typed ways to report it."""

    def __init__(
        self,
        conversation: Any,
        run_id: str,
        user_text: str,
        *,
        sink: EventSink,
        delay: float = 0.0,
    ):
        self.conversation = conversation
        self.conversation_id = conversation.pk
        self.run_id = run_id
        self.user_text = user_text
        self.delay = delay
        self.started = time.monotonic()
        self.ended = False
        self.end_status: str | None = None
        self._sink = sink
        self._event_counter = 0
        self._id_counters: dict[str, int] = {}
        self._interjections: list[str] = []

    # -- ids ------------------------------------------------------------------

    def new_id(self, kind: str) -> str:
        """`{run_id}.{kind}{n}`: deterministic, unique within the run."""
        count = self._id_counters.get(kind, 0) + 1
        self._id_counters[kind] = count
        return f"{self.run_id}.{kind}{count}"

    # -- the one way out ------------------------------------------------------

    async def emit(self, *events: Event) -> Any:
        """Stamp events with this run's id and deterministic event ids, and ingest them."""
        if self.ended:
            raise RunEnded(f"run {self.run_id} has ended; no more events")
        batch = []
        for event in events:
            self._event_counter += 1
            batch.append(
                {
                    **event,
                    "run_id": self.run_id,
                    "event_id": f"{self.run_id}.e{self._event_counter}",
                }
            )
        return await self._sink(batch)

    # -- run status -----------------------------------------------------------

    async def running(self) -> None:
        await self.emit({"type": "agent.status", "status": "running"})

    async def thinking(self, message: str = "Thinking…") -> None:
        await self.emit({"type": "agent.status", "status": "thinking", "message": message})

    async def info(self, message: str) -> None:
        await self.emit({"type": "agent.status", "status": "info", "message": message})

    async def continuation(self, *, should_continue: bool, stop_reason: str, resolved_by: str):
        await self.emit(
            {
                "type": "agent.continuation",
                "should_continue": should_continue,
                "stop_reason": stop_reason,
                "resolved_by": resolved_by,
            }
        )

    async def complete(self) -> None:
        """End the run successfully (the runner does this when `run` returns)."""
        await self.emit({"type": "agent.status", "status": "completed"})
        self.mark_ended("completed")

    async def fail(self, error_message: str) -> None:
        await self.emit(
            {"type": "agent.status", "status": "failed", "error_message": error_message}
        )
        self.mark_ended("failed")

    def mark_ended(self, status: str) -> None:
        """The run has ended (by our event, or by a remote runtime's — see webhook)."""
        self.ended = True
        self.end_status = status

    async def user_message(self, content: str) -> str:
        """Post a user message as part of a scripted run (the showcase does)."""
        message_id = self.new_id("u")
        await self.emit({"type": "user.message", "message_id": message_id, "content": content})
        return message_id

    # -- handles --------------------------------------------------------------

    def assistant(self) -> AssistantTurn:
        """A new assistant message: stream deltas into it, then complete it."""
        return AssistantTurn(self, self.new_id("m"))

    def tool(
        self,
        name: str,
        args: dict[str, Any] | None = None,
        *,
        args_summary: str | None = None,
        parent: ToolCall | None = None,
        attempt: int | None = None,
        max_attempts: int | None = None,
        call_id: str | None = None,
    ) -> ToolCall:
        return ToolCall(
            self,
            call_id or self.new_id("t"),
            name,
            dict(args or {}),
            args_summary=args_summary,
            parent=parent,
            attempt=attempt,
            max_attempts=max_attempts,
        )

    # -- pacing and input -----------------------------------------------------

    async def pause(self, factor: float = 1.0) -> None:
        """Wait between steps (0 in tests); always a cancellation point."""
        seconds = self.delay * factor
        await asyncio.sleep(seconds if seconds > 0 else 0)

    def interject(self, text: str) -> None:
        """Called by the runner when the user sends a message during the run."""
        self._interjections.append(text)

    def take_interjections(self) -> list[str]:
        taken, self._interjections = self._interjections, []
        return taken


class AssistantTurn:
    """One assistant message: `agent.message.delta`s, then `agent.step.completed`."""

    def __init__(self, ctx: RunContext, message_id: str):
        self.ctx = ctx
        self.message_id = message_id
        self.text = ""
        self.started = time.monotonic()
        self.completed = False

    async def delta(self, text: str) -> None:
        if not text:
            return
        self.text += text
        await self.ctx.emit(
            {"type": "agent.message.delta", "message_id": self.message_id, "delta": text}
        )

    async def stream(self, text: str, *, words_per_chunk: int = 4, pause: float = 0.15) -> None:
        """Stream `text` in chunks of a few words, pausing `pause` × the run's delay."""
        for chunk in chunk_words(text, words_per_chunk):
            await self.delta(chunk)
            await self.ctx.pause(pause)

    async def complete(
        self,
        content: str | None = None,
        *,
        tool_calls: list[ToolCall] | None = None,
        duration_ms: int | None = None,
        tokens: int | None = None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        """Finalise the message. `content` defaults to the streamed text; the
        duration defaults to the time since the turn began."""
        event: Event = {
            "type": "agent.step.completed",
            "message_id": self.message_id,
            "content": self.text if content is None else content,
            "duration_ms": _ms_since(self.started) if duration_ms is None else duration_ms,
        }
        if tool_calls:
            event["tool_calls"] = [call.as_call_info() for call in tool_calls]
        if tokens is not None:
            event["tokens"] = tokens
        if usage:
            event["usage"] = usage  # S4 (docs/rendering.md#s4)
        await self.ctx.emit(event)
        self.completed = True


class ToolCall:
    """One tool call: `agent.tool.started`, `…progress`*, `…completed`."""

    def __init__(
        self,
        ctx: RunContext,
        call_id: str,
        name: str,
        args: dict[str, Any],
        *,
        args_summary: str | None = None,
        parent: ToolCall | None = None,
        attempt: int | None = None,
        max_attempts: int | None = None,
    ):
        self.ctx = ctx
        self.id = call_id
        self.name = name
        self.args = args
        self.args_summary = args_summary
        self.parent = parent
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.started: float | None = None
        self.finished = False

    @property
    def depth(self) -> int:
        return 0 if self.parent is None else self.parent.depth + 1

    def as_call_info(self) -> dict[str, Any]:
        """The `tool_calls[]` entry of an assistant step [000]."""
        info: dict[str, Any] = {"id": self.id, "name": self.name, "args": self.args}
        if self.args_summary:
            info["args_summary"] = self.args_summary
        return info

    def child(self, name: str, args: dict[str, Any] | None = None, **options: Any) -> ToolCall:
        """A call made on behalf of this one (a sub-agent's tools): G13 nesting."""
        return self.ctx.tool(name, args, parent=self, **options)

    def retry(self) -> ToolCall:
        """The next attempt: a new tool_call_id, `attempt` + 1 (G14)."""
        return self.ctx.tool(
            self.name,
            self.args,
            args_summary=self.args_summary,
            parent=self.parent,
            attempt=(self.attempt or 1) + 1,
            max_attempts=self.max_attempts,
        )

    async def start(self) -> None:
        event: Event = {
            "type": "agent.tool.started",
            "tool_call_id": self.id,
            "tool_name": self.name,
            "args": self.args,
        }
        if self.args_summary:
            event["args_summary"] = self.args_summary
        if self.parent is not None:
            event["parent_tool_call_id"] = self.parent.id
        if self.attempt is not None:
            event["attempt"] = self.attempt
        if self.max_attempts is not None:
            event["max_attempts"] = self.max_attempts
        self.started = time.monotonic()
        await self.ctx.emit(event)

    async def progress(
        self,
        progress: float | None = None,
        *,
        output: str | None = None,
        message: str | None = None,
    ) -> None:
        """`progress` in 0..1 (G12), an `output` chunk for the live tail, and/or
        the current progress line (`message`, by convention starting "→ ", G11)."""
        event: Event = {"type": "agent.tool.progress", "tool_call_id": self.id}
        if progress is not None:
            event["progress"] = min(1.0, max(0.0, float(progress)))
        if output:
            event["output"] = output
        if message is not None:
            event["message"] = message
        await self.ctx.emit(event)

    async def succeed(
        self, result: Any, *, details: dict[str, Any] | None = None, duration_ms: int | None = None
    ) -> None:
        """`result` is a string, a `{"text", "details"}` result [001], or any JSON."""
        event = self._completed(duration_ms)
        event["result"] = result
        if details is not None:
            event["details"] = details
        await self.ctx.emit(event)
        self.finished = True

    async def fail(self, error: str, *, duration_ms: int | None = None) -> None:
        await self.ctx.emit(
            tool_failed_event(self.id, self.name, error, self._duration(duration_ms))
        )
        self.finished = True

    def _duration(self, duration_ms: int | None) -> int:
        if duration_ms is not None:
            return duration_ms
        return _ms_since(self.started) if self.started is not None else 0

    def _completed(self, duration_ms: int | None) -> Event:
        return {
            "type": "agent.tool.completed",
            "tool_call_id": self.id,
            "tool_name": self.name,
            "duration_ms": self._duration(duration_ms),
        }


def tool_failed_event(
    tool_call_id: str, tool_name: str, error: str, duration_ms: int | None = None
) -> Event:
    """`agent.tool.completed` with an error (also used to close a stopped run's tools)."""
    event: Event = {
        "type": "agent.tool.completed",
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
        "error": error or "tool failed",
    }
    if duration_ms is not None:
        event["duration_ms"] = duration_ms
    return event


def chunk_words(text: str, words_per_chunk: int = 4) -> list[str]:
    """Split text into chunks of a few words, keeping every character (spaces,
    newlines), so that joining the chunks gives the text back exactly."""
    chunks: list[str] = []
    current = ""
    words = 0
    for piece in _split_keep_space(text):
        current += piece
        if not piece.isspace():
            words += 1
            if words >= words_per_chunk:
                chunks.append(current)
                current, words = "", 0
    if current:
        chunks.append(current)
    return chunks


def _split_keep_space(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for index in range(1, len(text) + 1):
        if index == len(text) or text[index].isspace() != text[start].isspace():
            pieces.append(text[start:index])
            start = index
    return pieces
