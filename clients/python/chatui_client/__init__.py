"""A small client for agent runtimes that push events into chatui (docs/events.md#event-types,
docs/events.md#http-api, docs/events.md#python-client).

It needs only httpx (no Django): ``pip install ./clients/python`` from a chatui
checkout, or copy this one file into a runtime. Inside chatui it is also importable
by its first name, ``chatui.client``.

Usage::

    from chatui_client import ChatuiClient, ToolCall

    # URL and token default to the CHATUI_URL and CHATUI_TOKEN environment variables.
    with ChatuiClient("http://127.0.0.1:8000", token="…") as chatui:
        conversation = chatui.create_conversation(title="Release check")
        run = chatui.run(conversation["id"], run_id="run_1")
        run.user_message("Can we ship 1.2?")
        run.status("thinking", "Reading the changelog…")
        run.say_delta("msg_a1", "Let me look ")
        run.say_delta("msg_a1", "at the changelog.")
        run.step_completed(
            "Let me look at the changelog.",
            message_id="msg_a1",
            tool_calls=[ToolCall("call_1", "read_file", {"path": "CHANGELOG.md"})],
        )
        run.tool_started("call_1", "read_file", {"path": "CHANGELOG.md"})
        run.tool_completed("call_1", result="## 1.2\\n- faster ingest")
        run.step_completed("Yes: 1.2 only speeds up ingest.", message_id="msg_a2")
        run.completed()
        print(chatui.web_url(conversation))

The async client has the same methods, awaited::

    async with AsyncChatuiClient() as chatui:
        conversation = await chatui.create_conversation()
        run = chatui.run(conversation["id"])
        await run.tool_started("call_1", "search", {"query": "chatui"})

Delivery guarantees (REL1, REL2)
    Every posted event gets an ``event_id`` (a uuid4, unless it already has one) *before*
    the first attempt. Timeouts, dropped connections, ``429`` and ``5xx`` answers are
    retried with the very same body, with exponential backoff and full jitter, a bounded
    number of attempts and a bounded total time (`RetryPolicy`). The server treats an
    event_id it already holds with the same body as a duplicate, so a retry after a
    request that was committed but whose answer was lost never duplicates anything.
    When the client gives up it raises `ChatuiUnavailable`, whose ``events`` are the
    stamped events: post them again later and what already arrived is not repeated.

Errors
    A ``4xx`` answer raises `ChatuiError` with the server's ``status``, ``message``
    (its ``error``), and ``index`` and ``field`` when the server named them. ``4xx``
    answers are never retried (a ``409`` means an event_id was reused with another
    body: retrying cannot help).

Creating a conversation is not idempotent in the API, so it is retried only when the
request cannot have been processed (the connection was refused, or the server answered
``429``/``503``); after a timeout or a dropped connection it raises `ChatuiUnavailable`
rather than risk creating the conversation twice.

Why it is long: a runtime may copy this one file and need nothing but httpx, so the
errors, the retry policy, the event builders and both clients (which share every call
and retry decision as I/O-free programs) stay in it together.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

__all__ = [
    "NO_RETRY",
    "AsyncChatuiClient",
    "AsyncRun",
    "ChatuiClient",
    "ChatuiError",
    "ChatuiUnavailable",
    "EventStream",
    "PostResult",
    "RetryPolicy",
    "Run",
    "ToolCall",
    "make_event",
    "new_event_id",
    "with_event_ids",
]

API_PREFIX = "/api/v1"
USER_AGENT = "chatui-client/1"
#: docs/events.md#approvals: the server's longest long poll, and how much longer an attempt may
#: take.
APPROVAL_MAX_WAIT = 30
APPROVAL_POLL_SLACK = 15.0
#: Answers worth another attempt: the server (or a proxy in front of it) may succeed later.
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: Answers that say the request was refused before anything was done.
NOT_PROCESSED_STATUSES = frozenset({429, 503})

Timestamp = datetime | str


# --- errors ------------------------------------------------------------------------------


class ChatuiError(Exception):
    """The server refused a request (``4xx``): ``status``, ``message``, ``index``, ``field``.

    ``body`` is the decoded JSON error body (or ``None`` when it was not JSON).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        index: int | None = None,
        field: str | None = None,
        body: Any = None,
    ):
        super().__init__(message)
        self.message = message
        self.status = status
        self.index = index
        self.field = field
        self.body = body

    def __str__(self) -> str:
        where = []
        if self.index is not None:
            where.append(f"index {self.index}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        suffix = f" ({', '.join(where)})" if where else ""
        prefix = f"HTTP {self.status}: " if self.status is not None else ""
        return f"{prefix}{self.message}{suffix}"


class ChatuiUnavailable(ChatuiError):
    """The client gave up retrying: the server was unreachable or kept answering 429/5xx.

    ``status`` is the last HTTP status seen (``None`` when no answer came), ``attempts``
    how many requests were made, and ``events`` the events as sent, with their event_ids:
    posting them again later cannot duplicate what already arrived.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        attempts: int = 0,
        events: list[dict[str, Any]] | None = None,
    ):
        super().__init__(message, status=status)
        self.attempts = attempts
        self.events = events or []


# --- retry policy ------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, bounded in attempts and in total time.

    Attempt n (from 1) that fails waits ``uniform(0, min(max_delay, base_delay * 2**(n-1)))``
    (or the server's ``Retry-After``, capped at ``max_delay``) before the next one. No new
    attempt starts after ``total`` seconds since the first; each attempt is also bounded by
    the client's ``timeout``.
    """

    max_attempts: int = 8
    base_delay: float = 0.25
    max_delay: float = 5.0
    total: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return random.uniform(0, ceiling)


#: One attempt only: for callers that run their own retry loop.
NO_RETRY = RetryPolicy(max_attempts=1)


# --- events ------------------------------------------------------------------------------


def new_event_id() -> str:
    return str(uuid.uuid4())


def format_timestamp(value: Timestamp) -> str:
    """ISO 8601 in UTC with a ``Z``; naive datetimes are taken as UTC; strings pass as is."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def make_event(
    type: str,
    *,
    run_id: str | None = None,
    event_id: str | None = None,
    timestamp: Timestamp | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """One event as a dict (docs/events.md#event-types); fields whose value is ``None`` are left
    out."""
    event: dict[str, Any] = {"type": type}
    if event_id is not None:
        event["event_id"] = event_id
    if run_id is not None:
        event["run_id"] = run_id
    if timestamp is not None:
        event["timestamp"] = format_timestamp(timestamp)
    event.update({name: value for name, value in fields.items() if value is not None})
    return event


def with_event_ids(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of `events`, each with an ``event_id`` (kept when given, else a new uuid)."""
    stamped = []
    for event in events:
        if not isinstance(event, Mapping):
            raise TypeError(f"an event must be a mapping, not {type(event).__name__}")
        copy = dict(event)
        if not copy.get("event_id"):
            copy["event_id"] = new_event_id()
        stamped.append(copy)
    return stamped


@dataclass(frozen=True)
class ToolCall:
    """A tool call announced by `Run.step_completed` (queued until it starts)."""

    id: str
    name: str
    args: dict[str, Any] | None = None
    args_summary: str | None = None

    def as_dict(self) -> dict[str, Any]:
        call: dict[str, Any] = {"id": self.id, "name": self.name}
        if self.args is not None:
            call["args"] = self.args
        if self.args_summary is not None:
            call["args_summary"] = self.args_summary
        return call


@dataclass(frozen=True)
class PostResult:
    """The server's answer to posted events, and the event_ids that were sent."""

    accepted: int
    duplicates: int
    last_seq: int
    event_ids: tuple[str, ...] = ()


# --- shared request logic ----------------------------------------------------------------


def _error_from(response: httpx.Response) -> ChatuiError:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        index = body.get("index")
        field_name = body.get("field")
        return ChatuiError(
            body["error"],
            status=response.status_code,
            index=index if isinstance(index, int) else None,
            field=field_name if isinstance(field_name, str) else None,
            body=body,
        )
    text = response.text.strip()[:200] or response.reason_phrase
    return ChatuiError(text, status=response.status_code, body=body)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return float(value)
    except ValueError:
        return None  # absent, or an HTTP date: use our own backoff


@dataclass
class _Call:
    """One API call and its attempts. The sync and async clients only differ in I/O.

    `next_delay` decides after each attempt: ``None`` when the answer is final and good,
    a number of seconds to wait before the next attempt, or it raises.
    """

    method: str
    path: str
    policy: RetryPolicy
    parse: Callable[[Any], Any]
    body: Any = None
    params: dict[str, Any] | None = None
    #: Safe to repeat after a request that may have been processed (GETs, events with ids).
    idempotent: bool = True
    events: list[dict[str, Any]] | None = None
    #: This call's own per-attempt timeout (a long poll waits longer than the client's).
    timeout: float | None = None
    attempts: int = 0
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        # Serialised once, before the first attempt: every attempt sends the same bytes.
        # NaN and Infinity are not JSON: refused here rather than by the server.
        self.content: bytes | None = None
        if self.body is not None:
            text = json.dumps(self.body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            self.content = text.encode()

    def next_delay(
        self, response: httpx.Response | None = None, error: httpx.TransportError | None = None
    ) -> float | None:
        self.attempts += 1
        if response is not None:
            if response.is_success:
                return None
            if response.status_code not in RETRY_STATUSES:
                raise _error_from(response)
            if not self.idempotent and response.status_code not in NOT_PROCESSED_STATUSES:
                raise self._give_up(f"HTTP {response.status_code}", response.status_code)
            delay = self.policy.delay(self.attempts, _retry_after(response))
            reason, status = f"HTTP {response.status_code}", response.status_code
        else:
            assert error is not None
            reason, status = f"{type(error).__name__}: {error}", None
            not_sent = isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)
            if not self.idempotent and not not_sent:
                raise self._give_up(reason, status) from error
            delay = self.policy.delay(self.attempts)
        elapsed = time.monotonic() - self.started
        if self.attempts >= self.policy.max_attempts or elapsed + delay > self.policy.total:
            problem = self._give_up(reason, status)
            if error is not None:
                raise problem from error
            raise problem
        return delay

    def request(self) -> dict[str, Any]:
        """httpx's arguments for an attempt: every attempt sends the same bytes."""
        return {
            "method": self.method,
            "url": self.path,
            "content": self.content,
            "params": self.params,
            "timeout": self.timeout or httpx.USE_CLIENT_DEFAULT,
        }

    def result(self, response: httpx.Response) -> Any:
        if response.status_code == 204:  # e.g. a long poll that is still pending
            return self.parse(None)
        try:
            data = response.json()
        except ValueError:
            raise ChatuiError(
                "the server answered with something that is not JSON",
                status=response.status_code,
            ) from None
        return self.parse(data)

    def _give_up(self, reason: str, status: int | None) -> ChatuiUnavailable:
        return ChatuiUnavailable(
            f"{self.method} {self.path} failed after {self.attempts} attempt(s), "
            f"{time.monotonic() - self.started:.1f} s; last: {reason}",
            status=status,
            attempts=self.attempts,
            events=self.events,
        )


#: A client operation without its I/O, shared by the sync and async clients: it yields
#: a `_Call` to send (the response, or the transport error, is sent back in) or a
#: number of seconds to sleep, and returns the operation's result.
_Program = Generator["_Call | float", "httpx.Response | httpx.TransportError | None", Any]


def _with_retries(call: _Call) -> _Program:
    """One call and its attempts (REL1, REL2)."""
    while True:
        outcome = yield call
        if isinstance(outcome, httpx.TransportError):
            delay = call.next_delay(error=outcome)
        else:
            delay = call.next_delay(response=outcome)
            if delay is None:
                return call.result(outcome)
        yield delay


def _advance(program: _Program, outcome: Any) -> tuple[bool, Any]:
    """(False, the program's next effect) or (True, its result)."""
    try:
        return False, program.send(outcome)
    except StopIteration as done:
        return True, done.value


def _same(data: Any) -> Any:
    return data


def _post_result(event_ids: tuple[str, ...]) -> Callable[[Any], PostResult]:
    def parse(data: Any) -> PostResult:
        return PostResult(
            accepted=data["accepted"],
            duplicates=data["duplicates"],
            last_seq=data["last_seq"],
            event_ids=event_ids,
        )

    return parse


class _BaseClient:
    """Configuration and the calls themselves; subclasses send them (sync or async)
    with their `_HTTP` client class."""

    _HTTP: type[httpx.Client] | type[httpx.AsyncClient]

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
    ):
        url = url or os.environ.get("CHATUI_URL")
        token = token or os.environ.get("CHATUI_TOKEN")
        if not url:
            raise ValueError("no chatui URL: pass url= or set CHATUI_URL")
        if not token:
            raise ValueError("no API token: pass token= or set CHATUI_TOKEN")
        self._token = token
        url = url.rstrip("/")
        if url.endswith(API_PREFIX):
            url = url[: -len(API_PREFIX)]
        self.url = url
        self.retry = retry or RetryPolicy()
        self._http_options: dict[str, Any] = {
            "base_url": url + API_PREFIX,
            "headers": {
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "Content-Type": "application/json",
                "User-Agent": USER_AGENT,
            },
            "timeout": timeout,
        }
        self._http = self._HTTP(transport=transport, **self._http_options)

    def web_url(self, conversation: Mapping[str, Any] | str) -> str:
        """The browser URL of a conversation (a dict from the API, or its id)."""
        if isinstance(conversation, str):
            return f"{self.url}/c/{conversation}/"
        return self.url + conversation["url"]

    # -- the calls (docs/events.md#http-api) --

    def _call(self, method: str, path: str, parse=_same, **options: Any) -> _Call:
        return _Call(method, path, self.retry, parse, **options)

    def _create_conversation(self, title: str, owner: str | None) -> _Call:
        body: dict[str, Any] = {"title": title}
        if owner is not None:
            body["owner"] = owner
        return self._call("POST", "/conversations", body=body, idempotent=False)

    def _list_conversations(self) -> _Call:
        return self._call("GET", "/conversations", lambda data: data["conversations"])

    def _get_conversation(self, conversation_id: str) -> _Call:
        return self._call("GET", f"/conversations/{conversation_id}")

    def _post_events(self, conversation_id: str, events: Iterable[Mapping[str, Any]]) -> _Call:
        stamped = with_event_ids(events)
        if not stamped:
            raise ValueError("no events to post")
        ids = tuple(event["event_id"] for event in stamped)
        return self._call(
            "POST",
            f"/conversations/{conversation_id}/events",
            _post_result(ids),
            body=stamped,
            events=stamped,
        )

    def _events_page(self, conversation_id: str, after: int) -> _Call:
        return self._call(
            "GET", f"/conversations/{conversation_id}/events", params={"after": after}
        )

    def _approval(self, conversation_id: str, tool_call_id: str, wait: int) -> _Call:
        """docs/events.md#approvals long poll: the decision, or None while still pending."""
        return self._call(
            "GET",
            f"/conversations/{conversation_id}/approvals/{quote(tool_call_id, safe='')}",
            params={"wait": wait},
            timeout=wait + APPROVAL_POLL_SLACK,
        )

    # -- operations of several calls, as programs (`_Program`) --

    def _all_events(self, conversation_id: str, after: int) -> _Program:
        """Every page of events after `after`, merged."""
        result: dict[str, Any] = {"events": [], "last_seq": after}
        next_after: int | None = after
        while next_after is not None:
            page = yield from _with_retries(self._events_page(conversation_id, next_after))
            next_after = self._merge_page(result, page)
        return result

    def _decision(self, conversation_id: str, tool_call_id: str, timeout: float) -> _Program:
        """docs/events.md#approvals: long polls until a decision, or None after `timeout`
        seconds."""
        for wait in self._approval_waits(timeout):
            call = self._approval(conversation_id, tool_call_id, wait)
            decision = yield from _with_retries(call)
            if decision is not None:
                return decision
        return None

    @staticmethod
    def _approval_waits(timeout: float) -> Iterator[int]:
        """The `wait` of each long poll until `timeout` seconds have passed."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            yield max(1, min(APPROVAL_MAX_WAIT, math.ceil(remaining)))

    @staticmethod
    def _merge_page(into: dict[str, Any], page: dict[str, Any]) -> int | None:
        """Add a page to the result; the next `after`, or None when there is no more."""
        into["events"].extend(page["events"])
        into["last_seq"] = page["last_seq"]
        if page.get("has_more") and page["events"]:
            return page["events"][-1]["seq"]
        return None


R = TypeVar("R")


class ChatuiClient(_BaseClient):
    """Blocking client. Use as a context manager, or call `close()`.

    ``url`` is the server's base URL (``CHATUI_URL``), ``token`` an API token
    (``CHATUI_TOKEN``), ``timeout`` bounds each attempt and ``retry`` the attempts.
    ``transport`` is passed to httpx (tests, proxies).
    """

    _HTTP = httpx.Client

    def __enter__(self) -> ChatuiClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _run(self, program: _Program) -> Any:
        done, effect = _advance(program, None)
        while not done:
            done, effect = _advance(program, self._perform(effect))
        return effect

    def _perform(self, effect: _Call | float) -> httpx.Response | httpx.TransportError | None:
        if isinstance(effect, _Call):
            return self._request(effect)
        time.sleep(effect)
        return None

    def _request(self, call: _Call) -> httpx.Response | httpx.TransportError:
        try:
            return self._http.request(**call.request())
        except httpx.TransportError as error:
            return error

    def _send(self, call: _Call) -> Any:
        return self._run(_with_retries(call))

    def create_conversation(self, title: str = "", *, owner: str | None = None) -> dict[str, Any]:
        """``{id, title, url, created_at}``. ``owner`` needs ``chatui.ingest_any``."""
        return self._send(self._create_conversation(title, owner))

    def list_conversations(self) -> list[dict[str, Any]]:
        """The token owner's conversations, most recently updated first."""
        return self._send(self._list_conversations())

    def get_conversation(self, conversation_id: str) -> dict[str, Any]:
        """``{conversation, messages, last_seq}``: the canonical messages
        (docs/events.md#canonical-messages)."""
        return self._send(self._get_conversation(conversation_id))

    def post_event(self, conversation_id: str, event: Mapping[str, Any]) -> PostResult:
        """Post one event (an event_id is added when missing)."""
        return self.post_events(conversation_id, [event])

    def post_events(self, conversation_id: str, events: Iterable[Mapping[str, Any]]) -> PostResult:
        """Post a batch in one request: applied whole or not at all."""
        return self._send(self._post_events(conversation_id, events))

    def get_events(self, conversation_id: str, after: int = 0) -> dict[str, Any]:
        """``{events: [{seq, type, event_id, run_id, timestamp, payload}], last_seq}``
        for every event with a seq greater than ``after`` (all pages)."""
        return self._run(self._all_events(conversation_id, after))

    def post_records(
        self,
        conversation_id: str,
        dialect: str,
        records: list[Mapping[str, Any]],
        *,
        state: Mapping[str, Any] | None = None,
        end: bool = False,
    ) -> dict[str, Any]:
        """Post a coding agent's session records (``dialect`` ``claude-code`` or ``codex``)
        as they are; the server translates them (docs/events.md#sessions). Answers
        ``{accepted, duplicates, last_seq, records, state}``: pass ``state`` back with the
        next records. Event ids derive from the records, so a retry or a re-send is a
        duplicate, never a second copy."""
        body: dict[str, Any] = {"dialect": dialect, "records": list(records)}
        if state is not None:
            body["state"] = dict(state)
        if end:
            body["end"] = True
        return self._send(self._call("POST", f"/conversations/{conversation_id}/events", body=body))

    def stream(
        self, conversation_id: str, *, channel: bool = False, flush_after: float = 0.025
    ) -> EventStream:
        """Events of one conversation with deltas coalesced (docs/events.md#streaming-channel):
        flushed within
        ``flush_after`` seconds, and at once before any other event. Over HTTP, or with
        ``channel=True`` over the ingest WebSocket (``pip install chatui-client[stream]``).
        See `chatui_client.streaming`."""
        if channel:
            socket = IngestChannel(
                self.url.replace("http", "ws", 1) + f"/ws/ingest/{conversation_id}/",
                self._token,
                timeout=self._http.timeout.connect or 10.0,
            )
            return EventStream(
                socket.send,
                flush_after=flush_after,
                wait=socket.wait,
                on_close=socket.close,
                background=True,
            )
        stored = {"last_seq": 0}

        def post(batch: list[dict[str, Any]]) -> None:
            stored["last_seq"] = self.post_events(conversation_id, batch).last_seq

        return EventStream(post, flush_after=flush_after, wait=lambda: stored["last_seq"])

    def wait_for_approval(
        self, conversation_id: str, tool_call_id: str, *, timeout: float = 600.0
    ) -> dict[str, Any] | None:
        """Wait for a person's decision on a tool call you asked about with
        ``agent.tool.approval_requested`` (docs/events.md#approvals): ``{tool_call_id, decision,
        decided_by, decided_at, note}`` — ``decision`` is ``approved``, ``denied`` or
        ``expired`` — or None if ``timeout`` seconds pass first. Long polls, 30 s at a time."""
        return self._run(self._decision(conversation_id, tool_call_id, timeout))

    def run(self, conversation_id: str, run_id: str | None = None, **options: Any) -> Run:
        """A `Run` posting to this conversation (``run_id`` defaults to a new uuid)."""
        return Run(self, conversation_id, run_id, **options)


class AsyncChatuiClient(_BaseClient):
    """The same client for asyncio: every call is awaited. ``async with`` or `aclose()`."""

    _HTTP = httpx.AsyncClient

    async def __aenter__(self) -> AsyncChatuiClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _run(self, program: _Program) -> Any:
        done, effect = _advance(program, None)
        while not done:
            done, effect = _advance(program, await self._perform(effect))
        return effect

    async def _perform(self, effect: _Call | float) -> httpx.Response | httpx.TransportError | None:
        if isinstance(effect, _Call):
            return await self._request(effect)
        await asyncio.sleep(effect)
        return None

    async def _request(self, call: _Call) -> httpx.Response | httpx.TransportError:
        try:
            return await self._http.request(**call.request())
        except httpx.TransportError as error:
            return error

    async def _send(self, call: _Call) -> Any:
        return await self._run(_with_retries(call))

    async def create_conversation(
        self, title: str = "", *, owner: str | None = None
    ) -> dict[str, Any]:
        return await self._send(self._create_conversation(title, owner))

    async def list_conversations(self) -> list[dict[str, Any]]:
        return await self._send(self._list_conversations())

    async def get_conversation(self, conversation_id: str) -> dict[str, Any]:
        return await self._send(self._get_conversation(conversation_id))

    async def post_event(self, conversation_id: str, event: Mapping[str, Any]) -> PostResult:
        return await self.post_events(conversation_id, [event])

    async def post_events(
        self, conversation_id: str, events: Iterable[Mapping[str, Any]]
    ) -> PostResult:
        return await self._send(self._post_events(conversation_id, events))

    async def get_events(self, conversation_id: str, after: int = 0) -> dict[str, Any]:
        return await self._run(self._all_events(conversation_id, after))

    async def wait_for_approval(
        self, conversation_id: str, tool_call_id: str, *, timeout: float = 600.0
    ) -> dict[str, Any] | None:
        """As `ChatuiClient.wait_for_approval`, awaited."""
        return await self._run(self._decision(conversation_id, tool_call_id, timeout))

    def run(self, conversation_id: str, run_id: str | None = None, **options: Any) -> AsyncRun:
        return AsyncRun(self, conversation_id, run_id, **options)


# --- runs: typed helpers that build the spec's events ------------------------------------


class _RunBase(Generic[R]):
    """Builds the events of one agent run; `_emit` posts each (sync or async).

    ``clock`` (a callable returning a datetime or ISO string) stamps each event's
    ``timestamp``; without it the server's receive time is used. ``event_id_prefix``
    makes event_ids ``{prefix}{n:04d}`` instead of uuids: a deterministic runtime that is
    re-run against the same conversation then posts only duplicates.
    """

    def __init__(
        self,
        client: _BaseClient,
        conversation_id: str,
        run_id: str | None = None,
        *,
        clock: Callable[[], Timestamp] | None = None,
        event_id_prefix: str | None = None,
    ):
        self.client = client
        self.conversation_id = conversation_id
        self.run_id = run_id or new_event_id()
        self.clock = clock
        self._numbers = itertools.count(1) if event_id_prefix is not None else None
        self._prefix = event_id_prefix

    def _emit(self, event: dict[str, Any]) -> R:
        raise NotImplementedError

    def event(
        self,
        type: str,
        *,
        event_id: str | None = None,
        timestamp: Timestamp | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Build (not post) an event of this run; `emit` posts one."""
        if event_id is None and self._numbers is not None:
            event_id = f"{self._prefix}{next(self._numbers):04d}"
        if timestamp is None and self.clock is not None:
            timestamp = self.clock()
        return make_event(
            type, run_id=self.run_id, event_id=event_id, timestamp=timestamp, **fields
        )

    def emit(self, type: str, **fields: Any) -> R:
        """Post any event of this run (``event_id``/``timestamp`` may be given)."""
        return self._emit(self.event(type, **fields))

    def user_message(self, content: str, message_id: str | None = None) -> R:
        return self.emit("user.message", content=content, message_id=message_id)

    def status(self, status: str, message: str | None = None) -> R:
        """``running``, ``thinking`` or ``info`` (use `completed`/`failed` to end the run)."""
        return self.emit("agent.status", status=status, message=message)

    def say_delta(self, message_id: str, delta: str) -> R:
        """Stream assistant text: appended to message `message_id`."""
        return self.emit("agent.message.delta", message_id=message_id, delta=delta)

    def step_completed(
        self,
        content: str = "",
        *,
        message_id: str | None = None,
        tool_calls: Iterable[ToolCall | Mapping[str, Any]] | None = None,
        duration_ms: float | None = None,
        tokens: int | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> R:
        """Finalise an assistant message; its `tool_calls` show as queued until started.
        ``usage`` is ``{"input_tokens", "output_tokens", "model"}``: the step's tokens,
        and its cost where the server's ``CHATUI_PRICES`` prices the model."""
        calls = None
        if tool_calls is not None:
            calls = [c.as_dict() if isinstance(c, ToolCall) else dict(c) for c in tool_calls]
        return self.emit(
            "agent.step.completed",
            content=content,
            message_id=message_id,
            tool_calls=calls,
            duration_ms=duration_ms,
            tokens=tokens,
            usage=dict(usage) if usage is not None else None,
        )

    def tool_started(
        self,
        tool_call_id: str,
        tool_name: str,
        args: Mapping[str, Any] | None = None,
        *,
        args_summary: str | None = None,
        parent_tool_call_id: str | None = None,
        attempt: int | None = None,
        max_attempts: int | None = None,
    ) -> R:
        return self.emit(
            "agent.tool.started",
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            args=dict(args) if args is not None else None,
            args_summary=args_summary,
            parent_tool_call_id=parent_tool_call_id,
            attempt=attempt,
            max_attempts=max_attempts,
        )

    def tool_progress(
        self,
        tool_call_id: str,
        progress: float | None = None,
        *,
        output: str | None = None,
        message: str | None = None,
    ) -> R:
        """``progress`` in 0..1, ``output`` a chunk of live output, ``message`` the
        current progress line."""
        return self.emit(
            "agent.tool.progress",
            tool_call_id=tool_call_id,
            progress=progress,
            output=output,
            message=message,
        )

    def tool_completed(
        self,
        tool_call_id: str,
        result: Any = None,
        *,
        error: str | None = None,
        tool_name: str | None = None,
        duration_ms: float | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> R:
        """Success with `result` (any JSON; ``{"text", "details"}`` is understood), or an
        error when `error` is given."""
        return self.emit(
            "agent.tool.completed",
            tool_call_id=tool_call_id,
            result=result,
            error=error,
            tool_name=tool_name,
            duration_ms=duration_ms,
            details=dict(details) if details is not None else None,
        )

    def approval_requested(
        self,
        tool_call_id: str,
        tool_name: str,
        args: Mapping[str, Any] | None = None,
        *,
        reason: str | None = None,
        timeout_s: float | None = None,
    ) -> R:
        """Ask a person before running a tool (docs/events.md#approvals); then
        ``client.wait_for_approval``. Without a decision in ``timeout_s`` (default 600) the server
        records ``expired``."""
        return self.emit(
            "agent.tool.approval_requested",
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            args=dict(args) if args is not None else None,
            reason=reason,
            timeout_s=timeout_s,
        )

    def continuation(self, should_continue: bool, stop_reason: str, resolved_by: str) -> R:
        return self.emit(
            "agent.continuation",
            should_continue=should_continue,
            stop_reason=stop_reason,
            resolved_by=resolved_by,
        )

    def completed(self, message: str | None = None) -> R:
        return self.emit("agent.status", status="completed", message=message)

    def failed(self, error_message: str) -> R:
        return self.emit("agent.status", status="failed", error_message=error_message)


class Run(_RunBase[PostResult]):
    """One agent run in one conversation; each method posts one event (sync)."""

    client: ChatuiClient

    def _emit(self, event: dict[str, Any]) -> PostResult:
        return self.client.post_event(self.conversation_id, event)


class AsyncRun(_RunBase[Awaitable[PostResult]]):
    """`Run` for `AsyncChatuiClient`: each method returns an awaitable."""

    client: AsyncChatuiClient

    def _emit(self, event: dict[str, Any]) -> Awaitable[PostResult]:
        return self.client.post_event(self.conversation_id, event)


# Last: streaming builds on the names above (docs/events.md#streaming-channel).
from .streaming import EventStream, IngestChannel  # noqa: E402
