"""The streaming ingest channel (docs/events.md#streaming-channel): a WebSocket at
`/ws/ingest/{id}/`.

A runtime that streams tokens keeps one socket per conversation open instead of a
request per event. This consumer is a *writer* by design, like the API view, and as
thin: it authenticates the bearer token, decodes each message, and hands events to
`chatui.ingest.service.ingest` — the one writer path (validation, seq, idempotency, on-commit
broadcast). It renders nothing and reads nothing else.

Protocol, one JSON text message at a time, each one event, a list of events or
`{"events": [...]}` as the HTTP API takes them:
- after the transaction commits: `{"ack": [event_id, …], "accepted": n,
  "duplicates": d, "last_seq": s}` (events without an `event_id` are counted only);
- a bad message: the docs/events.md#http-api error `{"error", "index"?, "field"?, "status"}`,
nothing of
  that message applied, and the channel stays open;
- a runtime that loses the socket re-sends what was not acknowledged: events already
  stored are duplicates (no-ops), acknowledged again.

Coalescing (group commit): messages that arrive while the previous write runs are
written together, in one transaction. While only `agent.message.delta` events wait,
the writer holds them up to `TICK_SECONDS` for more (the client's own rule,
docs/events.md#streaming-channel); any other event is written at once.

Bounds (so a runtime faster than the database cannot grow the server): a socket holds at
most CHATUI_INGEST_MAX_PENDING_BYTES of messages not yet acknowledged (and
`MAX_PENDING_EVENTS` events); a message past either is refused with a 429 error, the
channel stays open, and the runtime re-sends it after the acks. One token holds at most
CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN sockets in a process.

Close codes: 4401 missing or invalid bearer token (browsers cannot send one: this is
for runtimes), or a token revoked while the socket is open (checked again before a
write at most every `RECHECK_SECONDS`); 4404 no such conversation or not the token
owner's to write to; 4429 the token already holds its sockets (the reason says so);
1011 a write failed on the server's side (reconnect and re-send).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from chatui.ingest.events import NormalisedEvent, parse_events
from chatui.ingest.service import IngestResult, ingest_normalised
from chatui.ingest.values import EventError, decode_json
from chatui.ingest.writer_threads import on_writer
from chatui.live.socket_places import Place, SocketPlaces
from chatui.read import selectors

from .credentials import bearer_credential, header, origin_allowed
from .tokens import token_for_async

logger = logging.getLogger(__name__)

CLOSE_UNAUTHORISED = 4401
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_MANY_SOCKETS = 4429
CLOSE_SERVER_ERROR = 1011
# How long waiting deltas are held for more before they are written (the client
# flushes within 25 ms too): more tokens per transaction, less CPU per token.
TICK_SECONDS = 0.025
# Unacknowledged events held for one socket; past it a message is refused (the
# runtime re-sends it), so a runtime faster than the database cannot grow the server.
# Their size is bounded by CHATUI_INGEST_MAX_PENDING_BYTES: a count alone let three
# sockets of a hundred 1 MB events take 660 MB.
MAX_PENDING_EVENTS = 5000
# A token revoked (or its user deactivated) while the socket is open stops writing
# within this long.
RECHECK_SECONDS = 30.0


#: Open ingest sockets per API token pk, in this process (CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN).
open_sockets = SocketPlaces()


@dataclass
class Pending:
    """One received message, validated, waiting to be written; `size` is the message's
    length as received, what it is counted as against the socket's byte bound."""

    events: list[NormalisedEvent]
    size: int = 0

    @property
    def only_deltas(self) -> bool:
        return all(event.type == "agent.message.delta" for event in self.events)


class IngestConsumer(AsyncWebsocketConsumer):
    """A thin adapter from socket messages to `ingest` (see the module docstring)."""

    # No channel layer: nothing is sent to this socket through one, and on Redis each
    # socket would hold a blocking receive that needs Redis up (and can swallow a
    # cancellation: chatui.live.consumers.ending_when_cancelled).
    channel_layer_alias = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.conversation = None
        self.pending: list[Pending] = []
        self.wake = asyncio.Event()
        self.writer: asyncio.Task | None = None
        self.credential = ""
        self.checked_at = 0.0
        self.writer_pk = None
        #: Bytes of the messages received and not yet acknowledged: waiting or being written.
        self.holding = 0
        self.place: Place | None = None  # among the token's ingest sockets

    async def connect(self) -> None:
        verdict = await self._authorise()
        await self.accept()  # first: clients only see close codes after the handshake
        if verdict:
            self._release_slot()  # a refused socket holds no place
        if verdict == CLOSE_TOO_MANY_SOCKETS:
            limit = settings.CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN
            reason = (
                f"this token holds {limit} ingest sockets (CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN)"
            )
            await self.close(code=verdict, reason=reason)
            return
        if verdict:
            await self.close(code=verdict)
            return
        self.writer = asyncio.create_task(self._write_forever())

    async def disconnect(self, code: int) -> None:
        # What was received but not written is not acknowledged: the runtime re-sends it.
        if self.writer is not None:
            self.writer.cancel()
        self.pending, self.holding = [], 0
        self._release_slot()

    async def dispatch(self, message: dict) -> None:
        # A received message touches no database: skip Channels' per-message
        # close_old_connections, a hop through the one shared sync thread, which is busy
        # with the write in progress — it would admit one message per write and so
        # defeat the coalescing (as in chatui.live.consumers for frames).
        if message["type"] == "websocket.receive":
            await self.websocket_receive(message)
        else:
            await super().dispatch(message)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.conversation is None:
            return
        size = len(text_data) if text_data is not None else len(bytes_data or b"")
        limit = settings.CHATUI_INGEST_MAX_PENDING_BYTES
        # Refused before it is parsed: the parsed events are what would be held. A socket
        # holding nothing takes any message (up to the request limit), so none waits forever.
        if self.holding and self.holding + size > limit:
            await self._send_error(
                EventError(
                    f"this socket holds {self.holding} bytes not yet written, and at most "
                    f"{limit} (CHATUI_INGEST_MAX_PENDING_BYTES); re-send after the acks",
                    status=429,
                )
            )
            return
        try:
            events = parse_events(
                _decode(text_data, bytes_data), max_event_bytes=_max_event(), from_runtime=True
            )
        except EventError as problem:
            await self._send_error(problem)
            return
        if sum(len(p.events) for p in self.pending) + len(events) > MAX_PENDING_EVENTS:
            await self._send_error(
                EventError("too many unacknowledged events; re-send after the acks", status=429)
            )
            return
        self.pending.append(Pending(events, size))
        self.holding += size
        self.wake.set()

    # -- writing -------------------------------------------------------------------

    async def _write_forever(self) -> None:
        while True:
            await self.wake.wait()
            if self.pending and all(p.only_deltas for p in self.pending):
                await asyncio.sleep(TICK_SECONDS)  # more tokens may join this write
            self.wake.clear()
            batch, self.pending = self.pending, []
            if batch and not await self._still_authorised():
                await self.close(code=CLOSE_UNAUTHORISED)  # nothing of it acknowledged
                return
            if not batch:
                continue
            try:
                await self._write(batch)
                self.holding -= sum(message.size for message in batch)
            except Exception:
                # Not the runtime's fault (e.g. the database is gone): 1011 makes it
                # reconnect and re-send what was not acknowledged.
                logger.exception("ingest channel write failed")
                await self.close(code=CLOSE_SERVER_ERROR)
                return

    async def _write(self, batch: list[Pending]) -> None:
        """One transaction for the whole batch; if it is refused (e.g. a reused
        event_id with another body), each message alone, so only the bad one fails."""
        if len(batch) > 1:
            try:
                result = await self._ingest([e for p in batch for e in p.events])
            except EventError:
                pass
            else:
                await self._ack(batch, result)
                return
        for message in batch:
            try:
                result = await self._ingest(message.events)
            except EventError as problem:
                await self._send_error(problem)
            else:
                await self._ack([message], result)

    async def _ingest(self, events: list[NormalisedEvent]) -> IngestResult:
        # On a writer thread that keeps its connection, as the events POST is (docs/PERFORMANCE.md).
        return await on_writer(ingest_normalised, self.conversation, events)

    async def _ack(self, batch: list[Pending], result: IngestResult) -> None:
        ids = [e.event_id for p in batch for e in p.events if e.event_id]
        await self.send(text_data=json.dumps({"ack": ids, **result.as_dict()}))

    async def _send_error(self, problem: EventError) -> None:
        await self.send(text_data=json.dumps({**problem.as_dict(), "status": problem.status}))

    # -- access --------------------------------------------------------------------

    async def _authorise(self) -> int | None:
        headers = self.scope["headers"]
        # A browser page of another site may open sockets but cannot send the header;
        # one that sends an Origin must be this site's own, as for the viewer socket.
        if header(headers, b"origin") is not None and not origin_allowed(self.scope):
            return CLOSE_UNAUTHORISED
        credential = bearer_credential((header(headers, b"authorization") or b"").decode("latin-1"))
        token = await token_for_async(credential) if credential else None
        if token is None:
            return CLOSE_UNAUTHORISED
        self.credential, self.checked_at = credential, time.monotonic()
        conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        self.writer_pk = token.user_id
        if not self._take_slot(token.pk):
            return CLOSE_TOO_MANY_SOCKETS
        self.conversation = await database_sync_to_async(selectors.conversation_for_writer)(
            token.user, conversation_id
        )
        return CLOSE_NOT_FOUND if self.conversation is None else None

    def _take_slot(self, token_pk: int) -> bool:
        """One of the token's CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN places, if one is free."""
        self.place = open_sockets.take(token_pk, settings.CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN)
        return self.place is not None

    def _release_slot(self) -> None:
        if self.place is not None:
            self.place.release()

    async def _still_authorised(self) -> bool:
        if time.monotonic() - self.checked_at < RECHECK_SECONDS:
            return True
        token = await token_for_async(self.credential)
        self.checked_at = time.monotonic()
        return token is not None and token.user_id == self.writer_pk


def _max_event() -> int:
    return settings.CHATUI_MAX_EVENT_BYTES


def _decode(text_data: str | None, bytes_data: bytes | None) -> Any:
    """One message as the API decodes a request body: size, UTF-8, JSON, depth."""
    limit = settings.CHATUI_MAX_REQUEST_BYTES
    if text_data is None:
        if bytes_data is None or len(bytes_data) > limit:
            raise EventError(f"message is larger than {limit} bytes", status=413)
        try:
            text_data = bytes_data.decode("utf-8")
        except UnicodeDecodeError as problem:
            raise EventError(f"message is not valid UTF-8 (byte {problem.start})") from None
    if len(text_data) > limit:
        raise EventError(f"message is larger than {limit} bytes", status=413)
    return decode_json(text_data, "message", max_depth=settings.CHATUI_MAX_JSON_DEPTH)
