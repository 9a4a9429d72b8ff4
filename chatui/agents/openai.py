"""An agent backed by any OpenAI-compatible chat-completions endpoint (`CHATUI_AGENT=openai`).

Configuration (settings, else environment): `OPENAI_BASE_URL` (default
https://api.openai.com/v1), `OPENAI_MODEL` (default gpt-4o-mini), `OPENAI_API_KEY`
(optional for local servers), `CHATUI_OPENAI_MAX_STEPS` (model calls per run,
default 8), `CHATUI_OPENAI_TIMEOUT` (seconds, default 120).

Each step is one streaming request (`stream: true`, SSE `data:` lines ending
with `[DONE]`). Assistant text is forwarded as `agent.message.delta`s as it
arrives; `tool_calls` deltas are accumulated by index; the step ends with
`agent.step.completed` carrying the tool calls, the step's duration and its
token usage. The tools (the same set as the demo's, over the sandbox) run and
their results go back to the model until it answers without tool calls; that
final message carries the whole run's duration (S1). Each step carries its own tokens
and `usage` (in, out, and the configured model, which CHATUI_PRICES prices: S4), so
the meta line's sum over the steps is the run's. Anything wrong
with the endpoint — HTTP errors, connection refused, timeouts, a malformed or
truncated stream — fails the run with an error message that says which. That
message lands in the event log and exports: it names the endpoint by its origin
only (never the URL's credentials, path or query) and quotes at most a short,
one-line excerpt of what the endpoint said, with the API key masked.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from chatui.ingest.values import MAX_TOKENS
from chatui.models import Message, Role

from .base import (
    REMOTE_BODY_BYTES,
    AgentError,
    AssistantTurn,
    RunContext,
    ToolCall,
    demo_delay,
    endpoint_origin,
    read_prefix,
    remote_excerpt,
    setting,
    url_secrets,
)
from .runs import db
from .tools import Sandbox, Toolbox

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
#: Streamed text is forwarded in pieces at most this often (seconds).
DELTA_FLUSH_SECONDS = 0.05
HISTORY_MESSAGES = 40
#: A longer SSE line is not a chunk a model sends; parsing it would only stall the loop.
MAX_SSE_LINE_CHARS = 1024 * 1024

SYSTEM_PROMPT = (
    "You are the assistant of chatui, a web app where people watch agents use tools. "
    "You can use tools over a small read-only sandbox folder of sample files "
    "(list, read and search files, a calculator, a simulated shell and web fetch, "
    "a sub-agent, and a few demonstration tools). Use them when they help, then "
    "answer briefly in Markdown."
)


@dataclass
class _PendingCall:
    """One tool call as its deltas arrive (OpenAI sends pieces by `index`)."""

    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class _Step:
    turn: AssistantTurn
    text: str = ""
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    tokens: int | None = None
    usage: dict[str, Any] | None = None  # S4: {input_tokens, output_tokens}
    duration_ms: int = 0


class OpenAIAgent:
    name = "openai"
    #: Messages sent during a run are given to the model before its next call.
    accepts_interjections = True

    def __init__(
        self,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        max_steps: int | None = None,
        timeout: float | None = None,
        delay: float | None = None,
        sandbox: Sandbox | None = None,
    ):
        self.base_url = (base_url or setting("OPENAI_BASE_URL", DEFAULT_BASE_URL)).rstrip("/")
        self.model = model or setting("OPENAI_MODEL", DEFAULT_MODEL)
        self.api_key = setting("OPENAI_API_KEY", "") if api_key is None else api_key
        self.max_steps = max_steps or setting("CHATUI_OPENAI_MAX_STEPS", 8, int)
        self.timeout = timeout or setting("CHATUI_OPENAI_TIMEOUT", 120.0, float)
        # Paces the demonstration tools (slow_task…) only; the model sets its own pace.
        self.delay = demo_delay() if delay is None else delay
        self.toolbox = Toolbox(sandbox)

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def origin(self) -> str:
        """How failure messages name the endpoint: scheme://host[:port]."""
        return endpoint_origin(self.base_url)

    @property
    def secrets(self) -> list[str]:
        """What the endpoint's answers must never carry into a message."""
        return [self.api_key, *url_secrets(self.base_url)]

    def excerpt(self, text: str) -> str:
        return remote_excerpt(text, secrets=self.secrets)

    def _decode_chunk(self, data: str) -> dict[str, Any]:
        if len(data) > MAX_SSE_LINE_CHARS:
            raise AgentError(
                f"Malformed stream from the model endpoint: a line of over "
                f"{MAX_SSE_LINE_CHARS} characters"
            )
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            raise AgentError(
                "Malformed stream from the model endpoint: not JSON: "
                + repr(remote_excerpt(data[:REMOTE_BODY_BYTES], secrets=self.secrets, limit=80))
            ) from None
        if not isinstance(chunk, dict):
            raise AgentError("Malformed stream from the model endpoint: a chunk is not an object")
        if chunk.get("error"):
            raise AgentError(
                f"The model endpoint reported an error: {self.excerpt(_error_detail(chunk))}"
            )
        return chunk

    async def run(self, ctx: RunContext) -> None:
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        messages += await load_history(ctx.conversation_id, ctx.user_text)
        await ctx.thinking(f"Asking {self.model}…")
        timeout = httpx.Timeout(self.timeout, connect=min(10.0, self.timeout))
        async with httpx.AsyncClient(timeout=timeout) as client:
            for _ in range(self.max_steps):
                for note in ctx.take_interjections():
                    messages.append({"role": "user", "content": note})
                step = await self._step(client, ctx, messages)
                if not step.calls:
                    # S1 sums the run's steps: each sends its own time, the last too.
                    await step.turn.complete(
                        step.text,
                        duration_ms=step.duration_ms,
                        tokens=step.tokens,
                        usage=self._usage(step),
                    )
                    return
                await self._use_tools(ctx, step, messages)
        await ctx.continuation(
            should_continue=False, stop_reason="steps_limit", resolved_by="StepsLimit"
        )

    def _usage(self, step: _Step) -> dict[str, Any] | None:
        """S4: the step's tokens in and out, named by the model as configured (the name
        CHATUI_PRICES is written with), not as the endpoint spells its version."""
        if step.usage is None:
            return None
        return {**step.usage, "model": self.model[:200]} if self.model else step.usage

    async def _use_tools(
        self, ctx: RunContext, step: _Step, messages: list[dict[str, Any]]
    ) -> None:
        pending = [step.calls[index] for index in sorted(step.calls)]
        calls: list[tuple[_PendingCall, ToolCall, str | None]] = []
        for item in pending:
            args, problem = _parse_arguments(item.arguments)
            calls.append((item, self.toolbox.call(ctx, item.name or "unnamed_tool", args), problem))
        await step.turn.complete(
            step.text,
            tool_calls=[call for _, call, _ in calls],
            duration_ms=step.duration_ms,
            tokens=step.tokens,
            usage=self._usage(step),
        )
        messages.append(
            {
                "role": "assistant",
                "content": step.text or None,
                "tool_calls": [
                    {
                        "id": item.id or call.id,
                        "type": "function",
                        "function": {"name": item.name, "arguments": item.arguments or "{}"},
                    }
                    for item, call, _ in calls
                ],
            }
        )
        for item, call, problem in calls:
            if problem is not None:
                await call.start()
                await call.fail(problem)
                content = f"Error: {problem}"
            else:
                outcome = await self.toolbox.execute_with_retry(call)
                content = outcome.text if outcome.ok else f"Error: {outcome.error}"
            messages.append(
                {"role": "tool", "tool_call_id": item.id or call.id, "content": content}
            )

    async def _step(
        self, client: httpx.AsyncClient, ctx: RunContext, messages: list[dict[str, Any]]
    ) -> _Step:
        """One streaming model call; text deltas are forwarded as they arrive."""
        step = _Step(ctx.assistant())
        started = time.monotonic()
        body = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "tools": self.toolbox.schemas(),
        }
        headers = {"Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        unsent, last_flush, done = "", time.monotonic(), False
        try:
            async with client.stream("POST", self.endpoint, json=body, headers=headers) as response:
                if response.status_code >= 400:
                    detail = self.excerpt(_error_detail(await read_prefix(response)))
                    raise AgentError(
                        f"The model endpoint answered HTTP {response.status_code}"
                        + (f": {detail}" if detail else "")
                    )
                async for line in response.aiter_lines():
                    data = _sse_data(line)
                    if data is None:
                        continue
                    if data == "[DONE]":
                        done = True
                        break
                    unsent += _apply_chunk(step, self._decode_chunk(data))
                    if unsent and time.monotonic() - last_flush >= DELTA_FLUSH_SECONDS:
                        await step.turn.delta(unsent)
                        unsent, last_flush = "", time.monotonic()
        except httpx.ConnectError as problem:
            raise AgentError(
                f"Cannot reach the model endpoint at {self.origin}: "
                f"{self.excerpt(str(problem)) or 'connection failed'}"
            ) from None
        except httpx.TimeoutException:
            raise AgentError(
                f"The model endpoint at {self.origin} did not answer within {self.timeout:g} s"
            ) from None
        except httpx.HTTPError as problem:
            raise AgentError(
                f"The connection to the model endpoint at {self.origin} failed: "
                f"{type(problem).__name__}: {self.excerpt(str(problem))}"
            ) from None
        except httpx.InvalidURL:
            raise AgentError(
                "OPENAI_BASE_URL is not a valid http(s) URL; check the setting."
            ) from None
        if unsent:
            await step.turn.delta(unsent)
        if not done and step.finish_reason is None:
            raise AgentError(
                "Malformed stream from the model endpoint: it ended before [DONE] "
                "or a finish_reason"
            )
        step.duration_ms = round((time.monotonic() - started) * 1000)
        return step


def _sse_data(line: str) -> str | None:
    """The payload of an SSE `data:` line; None for blank lines, comments, other fields."""
    if not line.startswith("data:"):
        return None
    data = line[5:]
    return data[1:] if data.startswith(" ") else data


def _apply_chunk(step: _Step, chunk: dict[str, Any]) -> str:
    """Fold one chunk into the step; returns its new assistant text."""
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        total = usage.get("total_tokens")
        if not isinstance(total, int):
            total = (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)
        step.tokens = total if isinstance(total, int) and total >= 0 else step.tokens
        counts = {
            ours: value
            for ours, theirs in (
                ("input_tokens", "prompt_tokens"),
                ("output_tokens", "completion_tokens"),
            )
            if isinstance(value := usage.get(theirs), int) and 0 <= value <= MAX_TOKENS
        }
        step.usage = counts if len(counts) == 2 else step.usage
    choices = chunk.get("choices") or []
    if not isinstance(choices, list):
        raise AgentError("Malformed stream from the model endpoint: 'choices' is not a list")
    text = ""
    for choice in choices:
        if not isinstance(choice, dict):
            raise AgentError("Malformed stream from the model endpoint: a choice is not an object")
        if choice.get("finish_reason"):
            step.finish_reason = choice["finish_reason"]
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            raise AgentError("Malformed stream from the model endpoint: a delta is not an object")
        content = delta.get("content")
        if isinstance(content, str):
            text += content
        for piece in delta.get("tool_calls") or []:
            index = piece.get("index", len(step.calls)) if isinstance(piece, dict) else None
            if not isinstance(index, int):
                raise AgentError("Malformed stream from the model endpoint: a bad tool call delta")
            pending = step.calls.setdefault(index, _PendingCall())
            pending.id = piece.get("id") or pending.id
            function = piece.get("function") or {}
            if not isinstance(function, dict):
                raise AgentError("Malformed stream from the model endpoint: a bad tool call delta")
            pending.name += function.get("name") or ""
            pending.arguments += function.get("arguments") or ""
    step.text += text
    return text


def _parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    if not raw.strip():
        return {}, None
    try:
        args = json.loads(raw, parse_constant=_not_json)
    except (ValueError, RecursionError):  # also NaN, too deep, too many digits
        return {"arguments": raw[:500]}, f"the model sent arguments that are not JSON: {raw[:80]}"
    if not isinstance(args, dict):
        return {"arguments": args}, "the model sent arguments that are not a JSON object"
    return args, None


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _error_detail(raw: str | dict[str, Any]) -> str:
    """The endpoint's own words, from {"error": {"message"}} or the body text (to be
    passed through `remote_excerpt` before it goes into a message)."""
    body: Any = raw
    if isinstance(raw, str):
        text = raw[:REMOTE_BODY_BYTES].strip()
        try:
            body = json.loads(text)
        except (ValueError, RecursionError):
            return text
    if isinstance(body, str):
        return body
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body))
        if isinstance(error, dict):
            error = error.get("message") or error.get("detail") or error
        return error if isinstance(error, str) else _json_text(error)
    return _json_text(body)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)[:REMOTE_BODY_BYTES]
    except (ValueError, RecursionError):
        return str(type(value).__name__)


def _history(conversation_id: Any, user_text: str) -> list[dict[str, Any]]:
    """Earlier user and assistant text of the conversation, oldest first."""
    rows = list(
        Message.objects.filter(
            conversation_id=conversation_id, role__in=[Role.USER, Role.ASSISTANT], is_final=True
        )
        .exclude(content="")
        .order_by("-position")[:HISTORY_MESSAGES]
    )
    history = []
    for message in reversed(rows):
        content = message.content
        calls = message.role == Role.ASSISTANT and message.metadata.get("tool_calls")
        if calls and content.strip()[:1] in ("{", "["):
            continue  # tool-call JSON, not conversation (R3)
        history.append({"role": message.role, "content": content})
    if not history or history[-1] != {"role": "user", "content": user_text}:
        history.append({"role": "user", "content": user_text})
    return history


load_history = db(_history)
