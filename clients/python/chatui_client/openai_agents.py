"""Stream an OpenAI Agents SDK run into a chatui conversation, live
(docs/runtimes.md#openai-agents-sdk).

``pip install "chatui-client[openai-agents]"``, then, where the run starts::

    from chatui_client.openai_agents import stream_to_chatui

    result = await stream_to_chatui(chatui, conversation_id, Runner.run_streamed(agent, "Hi"))

``chatui`` is an `AsyncChatuiClient` (or a `ChatuiClient`, posting from a thread). The
run's text streams into an assistant message, each tool call is a card from the moment
it starts, a failed tool is an error entry, the tools of an agent used as a tool
(``agent.as_tool``) show inside that tool's card and the work of an agent handed off to
inside the handoff's card (G13), and the run's tokens are the SDK's usage (S4).
`relay` is the same as an async iterator that also yields each SDK stream event, for
an application that consumes them itself.

Which of the SDK's three hooks gives what, in 0.24 (found by running all three side by
side; docs/runtimes.md#openai-agents-sdk has the evidence):

- ``Runner.run_streamed`` events carry the model's text deltas as they arrive — the
  only hook that does. Their tool items come late: ``tool_output`` items of one turn
  arrive together after the slowest tool ends, a failed tool's item is an ordinary
  output (the text the model was told), and an agent used as a tool runs a separate,
  unstreamed run whose tools never appear.
- ``RunHooks`` see a tool start and end, with its call id, but no failure either, and
  ``as_tool`` runs the sub-agent without the parent's hooks.
- A ``TracingProcessor`` sees everything of the trace, live: a function span starts
  when its tool starts and ends when it ends, with ``error`` set when it failed; the
  sub-agent of an ``as_tool`` call runs in the same trace, its spans under the tool's
  function span; a handoff is a span naming both agents.

So the structure (tools, failures, nesting, handoffs) comes from a tracing processor,
the text and each model response's usage from the streamed events, and the run's total
tokens from ``result.context_wrapper.usage`` (which an ``as_tool`` sub-run adds to).
A tool's chatui ``tool_call_id`` is its span id: the model's call id is not on the span.

Everything goes out through one queue, in the order it happened, posted by one task:
whatever waits while a request is in flight goes in the next request, so a fast
stream costs a request per round trip, not one per token. Posting never stops the
agent: if chatui refuses or cannot be reached, the run goes on, nothing more is sent,
and the error is raised when the run has ended (a `ChatuiUnavailable` carries every
event not sent, with its event_id, to post again later).

Why it is long: it is the whole adapter — the queue, the span processor and the mapping
of spans and stream events to chatui's events — kept in one module a runtime can read
(or copy beside the client) in one place.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agents import RunResultStreaming
from agents.tracing import (
    AgentSpanData,
    FunctionSpanData,
    HandoffSpanData,
    Span,
    Trace,
    TracingProcessor,
    add_trace_processor,
    get_current_trace,
)

from . import (
    AsyncChatuiClient,
    ChatuiClient,
    ChatuiError,
    ChatuiUnavailable,
    make_event,
    new_event_id,
    with_event_ids,
)

__all__ = ["relay", "stream_to_chatui"]

logger = logging.getLogger("chatui_client.openai_agents")

#: Events per request (the server applies a request whole; smaller keeps a refusal small).
MAX_BATCH = 500
#: The native contract's limits (docs/events.md#agent-tool-started).
MAX_NAME = 200
#: The SDK's own id for a disabled trace.
NO_TRACE = "no-op"

Event = dict[str, Any]
#: What the queue holds: an event, or a function making events when they are sent. A
#: tool's start is made late on purpose: the SDK starts its function span first and
#: sets the span's arguments a few lines later, before its first await.
Item = Event | Callable[[], list[Event]]


async def stream_to_chatui(
    chatui: AsyncChatuiClient | ChatuiClient,
    conversation_id: str,
    result: RunResultStreaming,
    *,
    run_id: str | None = None,
    user_message: str | bool = True,
) -> RunResultStreaming:
    """Stream `result` into the conversation and return it once the run has ended.

    Call it right after ``Runner.run_streamed(…)``, before awaiting anything else: the
    run starts at the first await, and spans of a run not yet watched are not seen.
    ``user_message``: True posts the run's input as the user's message when it is text
    (or ends with the user's message), a string posts that text, False posts none.
    ``run_id`` defaults to a new uuid. If the run fails, it is failed in chatui with the
    SDK's reason, then the SDK's exception is raised."""
    async for _ in relay(chatui, conversation_id, result, run_id=run_id, user_message=user_message):
        pass
    return result


async def relay(
    chatui: AsyncChatuiClient | ChatuiClient,
    conversation_id: str,
    result: RunResultStreaming,
    *,
    run_id: str | None = None,
    user_message: str | bool = True,
) -> AsyncIterator[Any]:
    """`stream_to_chatui`, yielding each of the SDK's stream events as it passes.

    Keep the loop's body quick: the text is posted as the loop takes it, the tools as
    they run, so a body that waits long can let a tool's card come before the text the
    model wrote ahead of it."""
    outbox = _Outbox(chatui, conversation_id, asyncio.get_running_loop())
    recorder = _Recorder(run_id or new_event_id(), outbox)
    trace_id = _trace_id(result)
    if trace_id is None:
        logger.warning(
            "tracing is disabled for this run: chatui shows its text, not its tool calls"
        )
    else:
        _processor().watch(trace_id, recorder)
    failure: BaseException | None = None
    try:
        text = _user_text(result.input) if user_message is True else user_message
        if isinstance(text, str) and text.strip():
            outbox.put(recorder.event("user.message", content=text))
        outbox.put(recorder.event("agent.status", status="running"))
        try:
            async for event in result.stream_events():
                recorder.stream_event(event)
                yield event
        except BaseException as error:
            # Cancelled, a tripwire, max turns, a model error, or the caller stopped
            # iterating: the run is failed in chatui with the reason, then it goes on up.
            failure = error
            if isinstance(error, GeneratorExit | asyncio.CancelledError):
                result.cancel()
            recorder.finish(result, error=_reason(error))
            raise
        recorder.finish(result)
    finally:
        if trace_id is not None:
            _processor().unwatch(trace_id, recorder)
        try:
            await outbox.close()
        except ChatuiError as error:
            if failure is None:
                raise
            # The agent's own exception is the one to raise; chatui's is only logged.
            logger.warning("events of a failed run were not all sent to chatui: %s", error)


def _trace_id(result: RunResultStreaming) -> str | None:
    """The trace the run's spans are in: its own, or the caller's when the run was
    started inside ``with trace(…)`` (the SDK then makes none of its own)."""
    trace: Trace | None = result.trace or get_current_trace()
    if trace is None or trace.trace_id == NO_TRACE:
        return None
    return trace.trace_id


def _user_text(run_input: Any) -> str | None:
    """The run's input as the user's message: the text, or the text of the last item
    when it is the user's (a conversation carried on with ``to_input_list()``)."""
    if isinstance(run_input, str):
        return run_input
    if isinstance(run_input, list) and run_input:
        last = run_input[-1]
        if isinstance(last, dict) and last.get("role") == "user":
            content = last.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):  # [{"type": "input_text", "text": …}, …]
                texts = [part.get("text") for part in content if isinstance(part, dict)]
                return "\n".join(text for text in texts if isinstance(text, str)) or None
    return None


def _reason(error: BaseException) -> str:
    if isinstance(error, GeneratorExit | asyncio.CancelledError):
        return "cancelled"
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


# -- the queue ----------------------------------------------------------------------------


class _Outbox:
    """Events in order, posted by one task (see the module docstring)."""

    def __init__(
        self,
        chatui: AsyncChatuiClient | ChatuiClient,
        conversation_id: str,
        loop: asyncio.AbstractEventLoop,
    ):
        self._chatui = chatui
        self._conversation_id = conversation_id
        self._loop = loop
        self._items: list[Item] = []
        self._lock = threading.Lock()  # span callbacks may come from a tool's thread
        self._wake = asyncio.Event()
        self._closing = False
        self.error: ChatuiError | None = None
        self.unsent: list[Event] = []
        self._task = loop.create_task(self._send_forever())

    def put(self, item: Item) -> None:
        with self._lock:
            self._items.append(item)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._wake.set()
        else:
            self._loop.call_soon_threadsafe(self._wake.set)

    async def close(self) -> None:
        """Send what waits; raise what went wrong on the way."""
        self._closing = True
        self._wake.set()
        await asyncio.shield(self._task)
        if isinstance(self.error, ChatuiUnavailable):
            raise ChatuiUnavailable(
                str(self.error),
                status=self.error.status,
                attempts=self.error.attempts,
                events=self.unsent,
            ) from self.error
        if self.error is not None:
            raise self.error

    async def _send_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while True:
                with self._lock:
                    items, self._items = self._items, []
                if not items:
                    break
                events: list[Event] = []
                for item in items:
                    try:
                        events.extend(item() if callable(item) else [item])
                    except Exception:  # a span the SDK filled unexpectedly: skip, go on
                        logger.exception("could not turn an SDK span into chatui events")
                for start in range(0, len(events), MAX_BATCH):
                    await self._post(with_event_ids(events[start : start + MAX_BATCH]))
            if self._closing:
                return

    async def _post(self, batch: list[Event]) -> None:
        while batch and self.error is None:
            try:
                if isinstance(self._chatui, AsyncChatuiClient):
                    await self._chatui.post_events(self._conversation_id, batch)
                else:
                    await asyncio.to_thread(self._chatui.post_events, self._conversation_id, batch)
                return
            except ChatuiError as error:
                refused = error.index if not isinstance(error, ChatuiUnavailable) else None
                if refused is None or not 0 <= refused < len(batch):
                    logger.warning("chatui is unreachable or refused, no more sent: %s", error)
                    self.error = error
                    break
                # One event chatui will not store (a result over its size limit, say):
                # the rest go on, and a tool's result becomes an error saying why.
                logger.warning("chatui refused an event of this run: %s", error)
                batch = [
                    *batch[:refused],
                    *_instead_of(batch[refused], error),
                    *batch[refused + 1 :],
                ]
            except Exception as error:  # not chatui's answer: a closed client, say
                logger.warning("could not post to chatui, no more sent: %r", error)
                self.error = ChatuiError(f"could not post events: {error!r}")
        self.unsent.extend(batch)


def _instead_of(event: Event, error: ChatuiError) -> list[Event]:
    """A refused tool result becomes an error saying why; anything else (this error
    refused too, included) is left out."""
    if event.get("type") != "agent.tool.completed" or "result" not in event:
        return []
    replacement = {
        key: event[key] for key in ("type", "run_id", "timestamp", "tool_call_id") if key in event
    }
    replacement["error"] = f"chatui refused this result: {error.message}"[:2000]
    return with_event_ids([replacement])


# -- the tracing processor: one per process, routing spans to the run they belong to ----


class _Spans(TracingProcessor):
    """Registered once (``add_trace_processor``, beside the SDK's own exporter); spans
    of traces no relay watches cost one dictionary lookup."""

    def __init__(self) -> None:
        self._runs: dict[str, _Recorder] = {}
        self._lock = threading.Lock()

    def watch(self, trace_id: str, recorder: _Recorder) -> None:
        with self._lock:
            self._runs[trace_id] = recorder

    def unwatch(self, trace_id: str, recorder: _Recorder) -> None:
        with self._lock:
            if self._runs.get(trace_id) is recorder:
                del self._runs[trace_id]

    def on_span_start(self, span: Span[Any]) -> None:
        recorder = self._runs.get(span.trace_id)
        if recorder is not None:
            try:
                recorder.span_started(span)
            except Exception:  # never into the agent's run
                logger.exception("chatui could not record a span's start")

    def on_span_end(self, span: Span[Any]) -> None:
        recorder = self._runs.get(span.trace_id)
        if recorder is not None:
            try:
                recorder.span_ended(span)
            except Exception:
                logger.exception("chatui could not record a span's end")

    def on_trace_start(self, trace: Trace) -> None:
        pass

    def on_trace_end(self, trace: Trace) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


_SPANS: _Spans | None = None
_SPANS_LOCK = threading.Lock()


def _processor() -> _Spans:
    global _SPANS
    with _SPANS_LOCK:
        if _SPANS is None:
            _SPANS = _Spans()
            add_trace_processor(_SPANS)
        return _SPANS


# -- one run: spans and stream events become chatui events --------------------------------


@dataclass
class _Step:
    """One model response: one assistant message."""

    message_id: str
    started: float = field(default_factory=time.monotonic)
    text: list[str] = field(default_factory=list)


class _Recorder:
    def __init__(self, run_id: str, outbox: _Outbox):
        self.run_id = run_id
        self._outbox = outbox
        self._numbers = itertools.count(1)
        # G13: span id → the tool entry its children show in (None: top level), and the
        # entry each span itself sits in.
        self._entry_of: dict[str, str | None] = {}
        self._parent_of: dict[str, str | None] = {}
        # A handoff's entry, waiting for the agent it hands to: that agent's work nests in it.
        self._handed_to: dict[str, str] = {}
        # G14: (parent, tool, arguments) → (last attempt, whether it failed).
        self._attempts: dict[tuple[str | None, str, str], tuple[int, bool]] = {}
        self._attempt_of: dict[str, tuple[tuple[str | None, str, str], int]] = {}
        self._step: _Step | None = None
        self._held: Event | None = None  # the last text-only response: maybe the answer
        self._tokens_sent = 0

    def event(self, type: str, *, timestamp: str | None = None, **fields: Any) -> Event:
        moment = timestamp or datetime.now(UTC).isoformat().replace("+00:00", "Z")
        return make_event(type, run_id=self.run_id, timestamp=moment, **fields)

    # -- spans (on the SDK's side of the queue: only bookkeeping and `put`) --

    def span_started(self, span: Span[Any]) -> None:
        data = span.span_data
        parent = self._entry_of.get(span.parent_id) if span.parent_id else None
        self._parent_of[span.span_id] = parent
        if isinstance(data, FunctionSpanData):
            self._entry_of[span.span_id] = span.span_id
            self._outbox.put(lambda: [self._tool_started(span, parent)])
        elif isinstance(data, AgentSpanData) and data.name in self._handed_to:
            self._entry_of[span.span_id] = self._handed_to.pop(data.name)
        else:
            self._entry_of[span.span_id] = parent

    def span_ended(self, span: Span[Any]) -> None:
        data = span.span_data
        if isinstance(data, FunctionSpanData):
            self._outbox.put(lambda: [self._tool_completed(span)])
        elif isinstance(data, HandoffSpanData):
            # A card of its own; the agent handed to works inside it (G13).
            if data.to_agent:
                self._handed_to[data.to_agent] = span.span_id
            self._outbox.put(lambda: self._handoff(span, self._parent_of.get(span.span_id)))

    def _tool_started(self, span: Span[Any], parent: str | None) -> Event:
        data: FunctionSpanData = span.span_data
        name = _name(data.name)
        args, summary = _arguments(data.input)
        attempt = None
        if data.input is not None:
            # The SDK names no retry: a call of the same tool with the same arguments
            # right after a failed one is its next attempt (docs/rendering.md#g14).
            key = (parent, name, data.input)
            last, failed = self._attempts.get(key, (0, False))
            attempt = last + 1 if failed else 1
            self._attempt_of[span.span_id] = (key, attempt)
        return self.event(
            "agent.tool.started",
            timestamp=span.started_at,
            tool_call_id=span.span_id,
            tool_name=name,
            args=args,
            args_summary=summary,
            parent_tool_call_id=parent,
            attempt=attempt,
        )

    def _tool_completed(self, span: Span[Any]) -> Event:
        data: FunctionSpanData = span.span_data
        error = _error_text(span) if span.error else None
        key, attempt = self._attempt_of.pop(span.span_id, (None, 0))
        if key is not None:
            self._attempts[key] = (attempt, error is not None)
        return self.event(
            "agent.tool.completed",
            timestamp=span.ended_at,
            tool_call_id=span.span_id,
            tool_name=_name(data.name),
            result=_jsonable(data.output),
            error=error,
            duration_ms=_duration_ms(span),
        )

    def _handoff(self, span: Span[Any], parent: str | None) -> list[Event]:
        data: HandoffSpanData = span.span_data
        args = {"from": data.from_agent, "to": data.to_agent}
        error = _error_text(span) if span.error else None
        started = self.event(
            "agent.tool.started",
            timestamp=span.started_at,
            tool_call_id=span.span_id,
            tool_name="handoff",
            args={key: value for key, value in args.items() if value is not None},
            parent_tool_call_id=parent,
        )
        done = self.event(
            "agent.tool.completed",
            timestamp=span.ended_at,
            tool_call_id=span.span_id,
            result=f"{data.to_agent} takes over" if data.to_agent and not error else None,
            error=error,
            duration_ms=_duration_ms(span),
        )
        return [started, done]

    # -- streamed events (on the consumer's side: in the stream's order) --

    def stream_event(self, event: Any) -> None:
        if getattr(event, "type", None) != "raw_response_event":
            return  # run items repeat what the spans said, later (module docstring)
        data = event.data
        kind = getattr(data, "type", "")
        if kind == "response.created":
            self._release_held()
            self._step = _Step(self._message_id())
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            if self._step is None:
                self._step = _Step(self._message_id())
            self._step.text.append(data.delta)
            self._outbox.put(
                self.event(
                    "agent.message.delta", message_id=self._step.message_id, delta=data.delta
                )
            )
        elif kind == "response.completed":
            self._response_completed(data.response)

    def _message_id(self) -> str:
        return f"{self.run_id}.{next(self._numbers)}"

    def _response_completed(self, response: Any) -> None:
        step = self._step or _Step(self._message_id())
        self._step = None
        self._release_held()
        usage = getattr(response, "usage", None)
        tokens = (usage.input_tokens + usage.output_tokens) if usage is not None else None
        content = "".join(step.text) or _output_text(response)
        completed = self.event(
            "agent.step.completed",
            message_id=step.message_id,
            content=content,
            duration_ms=round((time.monotonic() - step.started) * 1000, 1),
            tokens=tokens or None,
        )
        self._tokens_sent += tokens or 0
        outputs = {getattr(item, "type", "") for item in getattr(response, "output", None) or []}
        if outputs <= {"message", "reasoning"}:
            self._held = completed  # text only: maybe the answer, which gets the rest (S4)
        else:
            self._outbox.put(completed)

    def _release_held(self) -> None:
        if self._held is not None:
            self._outbox.put(self._held)
            self._held = None

    def finish(self, result: RunResultStreaming, *, error: str | None = None) -> None:
        """The run's end: its answer's step carries the tokens no step counted (those
        of agents used as tools), so the run's total is the SDK's (S4)."""
        usage = result.context_wrapper.usage
        rest = max(0, (usage.total_tokens or 0) - self._tokens_sent)
        if self._step is not None and self._step.text:  # a response cut short
            self._outbox.put(
                self.event(
                    "agent.step.completed",
                    message_id=self._step.message_id,
                    content="".join(self._step.text),
                )
            )
        if self._held is not None:
            if rest:
                self._held["tokens"] = (self._held.get("tokens") or 0) + rest
            self._release_held()
        elif rest:
            self._outbox.put(
                self.event(
                    "agent.step.completed", message_id=self._message_id(), content="", tokens=rest
                )
            )
        if error is None:
            self._outbox.put(self.event("agent.status", status="completed"))
        else:
            self._outbox.put(self.event("agent.status", status="failed", error_message=error))


# -- values -------------------------------------------------------------------------------


def _name(name: Any) -> str:
    text = str(name or "tool").strip() or "tool"
    return text[:MAX_NAME]


def _arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The span's arguments (the JSON text the model wrote) as ``args`` when they are an
    object, else as text in ``args_summary``."""
    if raw is None or raw == "":
        return None, None
    if isinstance(raw, dict):
        return raw, None
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return None, str(raw)
    if isinstance(parsed, dict):
        try:
            json.dumps(parsed, allow_nan=False)  # Python reads NaN; JSON has none
        except ValueError:
            return None, str(raw)
        return parsed, None
    return None, raw if isinstance(raw, str) else json.dumps(raw)


def _jsonable(value: Any) -> Any:
    """A tool's output as JSON: as it is when it is JSON, a pydantic model dumped, else
    its text (the SDK's own way to show it to the model)."""
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int | float):
        return value if math.isfinite(value) else str(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json")
        except Exception:
            return str(value)
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return str(value)


def _error_text(span: Span[Any]) -> str:
    """G6: what the tool answered the model (the SDK's ``failure_error_function`` text),
    else the error the span recorded, else its message."""
    output = span.span_data.output if isinstance(span.span_data, FunctionSpanData) else None
    if isinstance(output, str) and output.strip():
        return output
    error = span.error or {}
    data = error.get("data") or {}
    detail = data.get("error") if isinstance(data, dict) else None
    return str(detail or error.get("message") or "the tool failed")


def _output_text(response: Any) -> str:
    texts = []
    for item in getattr(response, "output", None) or []:
        for part in getattr(item, "content", None) or []:
            text = getattr(part, "text", None) or getattr(part, "refusal", None)
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts)


def _duration_ms(span: Span[Any]) -> float | None:
    try:
        started = datetime.fromisoformat(span.started_at or "")
        ended = datetime.fromisoformat(span.ended_at or "")
    except ValueError:
        return None
    return max(0.0, round((ended - started).total_seconds() * 1000, 1))
