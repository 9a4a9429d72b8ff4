"""Streaming a run without a request per token (docs/events.md#streaming-channel).

``client.stream(conversation_id)`` returns an `EventStream`. Deltas
(``agent.message.delta``) wait in a buffer and go out together within ``flush_after``
seconds (25 ms by default) of the first one; any other event sends what waits, and
itself, at once, in order. Two ways out:

- over HTTP (the default): one ``POST …/events`` per flush, with the client's retries;
- over the ingest channel (``channel=True``, needs ``pip install chatui-client[stream]``
  for `websockets`): one WebSocket at ``/ws/ingest/{id}/`` carrying a JSON list per
  flush. The server acknowledges events once they are durable; events not acknowledged
  when the socket drops are sent again on a new one (the server counts those it already
  holds as duplicates, so nothing is stored twice). Here every event is written to the
  socket by the stream's own thread, so ``send`` never waits for the network (it did not
  wait for storage anyway), and events handed over together — a fast tool's start and
  end — go out as one message, which the server stores in one transaction.

``flush()`` returns when everything sent so far is stored (``last_seq`` then says up to
where); ``close()`` flushes and closes. An error the server answered for an event sent
in the background is raised by the next call.

    with ChatuiClient(url, token) as chatui, chatui.stream(conversation_id) as out:
        for token in tokens:
            out.delta("msg_a1", token, run_id="run_1")
        out.send({"type": "agent.step.completed", "message_id": "msg_a1", "content": text})
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

DELTA = "agent.message.delta"
#: At most this many events per channel message (the server holds 5,000 unacknowledged
#: events per socket)...
MESSAGE_EVENTS = 500
#: ...and this many bytes of JSON (the server takes 8 MiB by default); a larger event
#: goes alone.
MESSAGE_BYTES = 1024 * 1024
#: Events a background stream holds before `send` waits for its thread to catch up.
MAX_WAITING = 1000
CONNECT_ATTEMPTS = 6

Send = Callable[[list[dict[str, Any]]], None]


class EventStream:
    """One conversation's events, deltas coalesced (see the module docstring)."""

    def __init__(
        self,
        send: Send,
        *,
        flush_after: float = 0.025,
        wait: Callable[[], int] | None = None,
        on_close: Callable[[], None] | None = None,
        background: bool = False,
    ):
        self._send = send  # posts one batch, in order, raising on failure
        # Every event sent by the timer thread, `send` returning at once (the channel).
        self._background = background
        self._wait = wait  # blocks until what was sent is durable; returns last_seq
        self._on_close = on_close
        self.flush_after = flush_after
        self.last_seq = 0
        self._state = threading.Condition()
        self._sending = threading.Lock()  # one batch at a time, in the order taken
        self._buffer: list[dict[str, Any]] = []
        self._deadline: float | None = None
        self._error: BaseException | None = None
        self._closed = False
        self._timer = threading.Thread(target=self._flush_when_due, daemon=True)
        self._timer.start()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- what a runtime calls --

    def delta(self, message_id: str, text: str, **fields: Any) -> None:
        self.send({"type": DELTA, "message_id": message_id, "delta": text, **fields})

    def send(self, event: Mapping[str, Any]) -> None:
        """Queue a delta, or send any other event now (after the deltas before it): from
        this thread, or, on the channel, by handing it to the stream's thread at once."""
        from . import with_event_ids

        (stamped,) = with_event_ids([event])
        with self._state:
            self._raise_error()
            while self._background and len(self._buffer) >= MAX_WAITING and not self._closed:
                self._state.wait()  # the thread is behind: wait, as a blocking send would
            if self._closed:
                raise RuntimeError("the stream is closed")
            self._buffer.append(stamped)
            if stamped.get("type") == DELTA:
                if self._deadline is None:
                    self._deadline = time.monotonic() + self.flush_after
                    self._state.notify_all()
                return
            if self._background:
                self._deadline = time.monotonic()  # due now: the thread sends what waits
                self._state.notify_all()
                return
        self._flush_buffer()

    def flush(self) -> int:
        """Send what waits and return once all of it is stored; the last seq."""
        self._flush_buffer()
        if self._wait is not None:
            self.last_seq = self._wait()
        with self._state:
            self._raise_error()
        return self.last_seq

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._state:
                self._closed = True
                self._state.notify_all()
            self._timer.join(timeout=5)
            if self._on_close is not None:
                self._on_close()

    # -- inside --

    def _flush_buffer(self) -> None:
        with self._sending:
            with self._state:
                batch, self._buffer, self._deadline = self._buffer, [], None
                self._state.notify_all()  # room again for a waiting `send`
            if batch:
                self._send(batch)

    def _flush_when_due(self) -> None:
        while True:
            with self._state:
                while not self._closed and self._deadline is None:
                    self._state.wait()
                if self._closed:
                    return
                due = self._deadline - time.monotonic()
                if due > 0:
                    self._state.wait(due)
                    continue
            try:
                self._flush_buffer()
            except Exception as error:  # raised to the runtime by its next call
                with self._state:
                    self._error = error

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error


class IngestChannel:
    """The docs/events.md#streaming-channel WebSocket: sends batches, tracks acknowledgements,
    resumes after a drop."""

    def __init__(self, ws_url: str, token: str, *, timeout: float = 10.0):
        self.ws_url = ws_url
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {token}"}
        self._lock = threading.Condition()
        self._unacked: dict[str, dict[str, Any]] = {}  # event_id → event, in send order
        self._in_flight: list[list[str]] = []  # event ids per message, oldest first
        self._error: BaseException | None = None
        self._socket = None
        self.last_seq = 0

    def send(self, batch: list[dict[str, Any]]) -> None:
        with self._lock:
            for event in batch:
                self._unacked[event["event_id"]] = event
        self._transmit(batch)

    def wait(self) -> int:
        """Until every event sent is acknowledged (reconnecting if the socket dropped)."""
        deadline = time.monotonic() + max(self.timeout * 3, 30)
        with self._lock:
            while self._unacked and self._error is None:
                if self._socket is None:
                    self._lock.release()
                    try:
                        self._reconnect()
                    finally:
                        self._lock.acquire()
                    continue
                if time.monotonic() > deadline:
                    raise TimeoutError("events were not acknowledged in time")
                self._lock.wait(0.5)
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            return self.last_seq

    def close(self) -> None:
        with self._lock:
            socket, self._socket = self._socket, None
        if socket is not None:
            socket.close()

    # -- inside --

    def _transmit(self, batch: list[dict[str, Any]]) -> None:
        socket = self._socket
        if socket is None:
            self._reconnect()  # sends every unacknowledged event, this batch included
            return
        try:
            for ids, text in socket_messages(batch):
                with self._lock:
                    self._in_flight.append(ids)
                socket.send(text)
        except Exception:
            self._reconnect()

    def _connect(self):
        from websockets.sync.client import connect

        for attempt in range(CONNECT_ATTEMPTS):
            try:
                socket = connect(
                    self.ws_url,
                    additional_headers=self._headers,
                    open_timeout=self.timeout,
                    proxy=None,
                    max_size=None,
                )
                # Entered as `with` would (websockets ≥ 17.1 warns otherwise); `close()`
                # ends it, from whichever thread notices first.
                return socket.__enter__()
            except OSError:
                if attempt == CONNECT_ATTEMPTS - 1:
                    raise
                time.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")

    def _reconnect(self):
        self.close()
        socket = self._connect()
        with self._lock:
            self._socket = socket
            pending = list(self._unacked.values())
            self._in_flight = []
        threading.Thread(target=self._read, args=(socket,), daemon=True).start()
        for ids, text in socket_messages(pending):
            with self._lock:
                self._in_flight.append(ids)
            socket.send(text)
        return socket

    def _read(self, socket) -> None:
        from . import ChatuiError

        try:
            for text in socket:
                answer = json.loads(text)
                with self._lock:
                    if "ack" in answer:
                        self._acknowledged(answer)
                    elif "error" in answer:
                        refused = self._in_flight.pop(0) if self._in_flight else []
                        for event_id in refused:
                            self._unacked.pop(event_id, None)
                        self._error = ChatuiError(
                            answer["error"],
                            status=answer.get("status"),
                            index=answer.get("index"),
                            field=answer.get("field"),
                            body=answer,
                        )
                    self._lock.notify_all()
        except Exception:
            pass  # a dropped socket: `wait` or the next send reconnects
        finally:
            with self._lock:
                if self._socket is socket:
                    self._socket = None
                self._lock.notify_all()

    def _acknowledged(self, answer: Mapping[str, Any]) -> None:
        acked = set(answer["ack"])
        for event_id in acked:
            self._unacked.pop(event_id, None)
        # One ack may cover several messages (the server writes them together).
        self._in_flight = [ids for ids in self._in_flight if not set(ids) <= acked]
        self.last_seq = max(self.last_seq, answer.get("last_seq", 0))


def socket_messages(events: list[dict[str, Any]]) -> list[tuple[list[str], str]]:
    """`events` as channel messages, in order: JSON lists of at most MESSAGE_EVENTS
    events and MESSAGE_BYTES (an event larger than that alone), each with its event
    ids. The server answers a refused message whole, so a message is what fails
    together."""
    messages: list[tuple[list[str], str]] = []
    ids: list[str] = []
    parts: list[str] = []
    size = 0
    for event in events:
        text = json.dumps(event)
        if parts and (len(parts) == MESSAGE_EVENTS or size + len(text) + 1 > MESSAGE_BYTES):
            messages.append((ids, "[" + ",".join(parts) + "]"))
            ids, parts, size = [], [], 0
        ids.append(event["event_id"])
        parts.append(text)
        size += len(text) + 1
    if parts:
        messages.append((ids, "[" + ",".join(parts) + "]"))
    return messages
