"""WebSocket consumer: a read-only window on one conversation (docs/rendering.md#live-updates,
SEC4).

It joins the conversation's group *first*, then replays what the page missed
since `?after=<seq>`, so live frames queue behind the replay in order. It never
writes to the database; frames are rendered once by the broadcaster, not here.

Access is checked when the socket connects and again while it is open: on
logout, on a lost group or permission (`chatui.live.revocation`), and periodically.
Close codes, none of which the htmx ws extension reconnects on: 4403 may not
(or no longer) see the conversation, 4404 no such conversation, 4400 the client
sent something (the socket only pushes), 4429 the user already holds
CHATUI_MAX_SOCKETS_PER_USER sockets in this process.

Why it is long: one socket's whole life — admission, replay, live frames and held
text, revocation, the channel layer's outages, cancellation — is one class, because each
step reads the state the others leave (`last_sent_seq`, `accepted`, `ended`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import weakref
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from chatui.access import can_view
from chatui.db.layer_health import HEALTH, layer_errors
from chatui.ingest.values import parse_seq
from chatui.models import Conversation

from . import fanout, frames
from .broadcast import group_name, rows_group
from .handshakes import on_handshake_thread
from .replays import shared_replay
from .revocation import session_group, session_user, user_group
from .socket_places import Place, SocketPlaces

logger = logging.getLogger(__name__)

# The channel layer (Redis) is unreachable, or was: the page reconnects on this code
# and resumes from its last seq (what was sent meanwhile is in the event log).
CLOSE_TRY_AGAIN = 1013
CLOSE_NO_INPUT = 4400
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_MANY_SOCKETS = 4429
#: Not a close code: a handshake too late to serve (`_late`), left for daphne to drop.
CLOSE_LATE = -1

#: Accepted sockets per user pk, in this process (CHATUI_MAX_SOCKETS_PER_USER).
open_sockets = SocketPlaces()
#: Every viewer's consumer running in this process, to close when the layer is lost.
running: weakref.WeakSet[TranscriptConsumer] = weakref.WeakSet()

# A runtime posting one request per token makes a frame per token, and a page applies
# each frame as one swap: at ~120 tokens/s Chromium on a 2-core machine fell a second
# behind (bench/p5, request mode), while the server kept up. So a socket sends at most
# one frame of streamed text per tick: the first at once, those that follow within the
# tick held and sent joined at its end. Any other frame sends what is held first, so
# the order never changes.
STREAM_TICK_SECONDS = 0.025
MAX_HELD_CHARS = 64_000


@dataclass
class HeldText:
    """Streamed-text frames that follow each other, joined into one."""

    first_seq: int
    last_seq: int
    bodies: list[str]
    size: int

    def html(self) -> str:
        return frames.marker(self.first_seq, self.last_seq) + "".join(self.bodies)


#: daphne drops a handshake not accepted within 5 s (its websocket_connect_timeout); one
#: that reaches the authorisation later than this is dropped or about to be.
LATE_HANDSHAKE_SECONDS = 4.0

#: A consumer whose cancellation was swallowed is cancelled again this often, at most
#: this many times (see `ending_when_cancelled`).
RECANCEL_SECONDS = 0.2
RECANCEL_ROUNDS = 50


async def ending_when_cancelled(work: Coroutine[Any, Any, None]) -> None:
    """Run `work` in a task of its own that ends when this one is cancelled.

    On the Redis layer a cancellation can be swallowed: redis-py sends each command
    through `asyncio.wait_for`, which on Python 3.11 returns the result instead of
    raising when the task is cancelled just as the send completes, and channels-redis's
    receive then goes on with its next blocking read, for ever. A consumer cancelled by
    daphne (its close timeout, shutdown) or by `asyncio.run`'s teardown then never
    ended: a leaked task in a server, a hung test run (tests/cluster/
    test_consumer_cancellation.py). So a cancellation is passed on until the work has
    ended; the next one reaches it inside Redis' blocking read, where it is honoured."""
    task = asyncio.ensure_future(work)
    try:
        await asyncio.wait({task})
    except asyncio.CancelledError:
        for _ in range(RECANCEL_ROUNDS):
            if task.done():
                break
            task.cancel()
            # Cancelled again meanwhile: this task ends by raising anyway.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task}, timeout=RECANCEL_SECONDS)
        else:
            logger.error("a consumer ignored %d cancellations: %r", RECANCEL_ROUNDS, task)
        raise
    task.result()


class TranscriptConsumer(AsyncWebsocketConsumer):
    conversation_id: str
    last_sent_seq: int

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.joined: list[str] = []
        self.place: Place | None = None  # among the user's CHATUI_MAX_SOCKETS_PER_USER
        self.watcher: asyncio.Task | None = None
        self.ended = False
        self.held: HeldText | None = None
        self.text_sent_at = float("-inf")  # loop time of the last streamed-text frame
        self.held_flush: asyncio.TimerHandle | None = None
        self.flushing: set[asyncio.Task] = set()
        self.accepted = False
        # The layer was lost while this socket was still connecting (joined, not yet
        # accepted): closed for resume as soon as it is accepted.
        self.resume_when_accepted = False

    @property
    def channel_layer_alias(self) -> str:  # type: ignore[override]
        """Each process's own memberships, fanned out from one message per process per
        group (chatui.live.fanout, docs/SCALING.md#fan-out)."""
        return fanout.live_alias()

    async def __call__(self, scope, receive, send) -> None:
        await ending_when_cancelled(self._serve(scope, receive, send))

    async def _serve(self, scope, receive, send) -> None:
        self.loop = asyncio.get_running_loop()
        self.started = self.loop.time()
        running.add(self)
        try:
            await super().__call__(scope, receive, send)
        except layer_errors() as error:
            # The layer failed under this socket (its receive, or a group join while
            # connecting): one log line for the outage (chatui.db.layer_health), and a
            # close the page reconnects on, instead of daphne's 500 or 1011 and a
            # traceback per socket.
            HEALTH.lost(error)
            await self.close_for_resume()
        finally:
            running.discard(self)
            # Also when daphne cancels the consumer without a disconnect message:
            # the socket count must never leak.
            self._stop_watching()
            self._drop_held()
            self._release_slot()
            await self._leave_groups()

    async def connect(self) -> None:
        self.conversation_id = str(self.scope["url_route"]["kwargs"]["conversation_id"])
        if not await self._admit(self.scope["user"], group_name(self.conversation_id)):
            return
        self.last_sent_seq = self._after()
        replay = await shared_replay(self.conversation_id, self.last_sent_seq, self.joined_at)
        if replay is not None:
            await self._send_frame(replay.last_seq, replay.html)
        self.watcher = asyncio.create_task(self._recheck_periodically())

    async def disconnect(self, code: int) -> None:
        # The place first: on Redis leaving the groups is a round trip each, and the
        # user may be opening the socket that replaces this one meanwhile.
        self._release_slot()
        await self._leave_groups()

    async def dispatch(self, message: dict) -> None:
        # Channels' dispatch hops to its one database thread for every message, to close
        # stale connections. No handler needs it (what reads goes through
        # `database_sync_to_async` or `on_handshake_thread`, which close them around each
        # call): frames skip it (bench/p1: p99 halved), and so do handshakes, which after a
        # fault queued on that thread by the hundred for the hop alone.
        kind = message["type"]
        if kind == "transcript.frame":
            await self.transcript_frame(message)
        elif kind == "websocket.receive":
            await self.refuse_input()
        else:
            handler = getattr(self, get_handler_name(message), None)
            if handler is None:
                raise ValueError(f"No handler for message type {kind}")
            await handler(message)

    async def websocket_disconnect(self, message: dict) -> None:
        """Channels' own without its hop (see `dispatch`); `disconnect` leaves the groups."""
        await self.disconnect(message["code"])
        raise StopConsumer()

    async def refuse_input(self) -> None:
        """The socket only pushes; input goes through the form POST
        (docs/rendering.md#live-updates), and the page never sends. Whoever does is closed at once:
        daphne queues every incoming message for the consumer without limit, and merely ignoring a
        flood of small frames let one client grow the server by hundreds of MB
        (tests/web/test_flood.py)."""
        await self._end(CLOSE_NO_INPUT)

    async def transcript_frame(self, message: dict) -> None:
        """A frame rendered once by the broadcaster for every viewer."""
        if self.ended or message["last_seq"] <= self.last_sent_seq:
            return  # closing, or already covered by the replay
        if message.get("streamed_text_only"):
            await self._hold(message)
            return
        await self._send_held()
        await self._send_frame(message["last_seq"], message["html"])

    # -- streamed text, joined per tick (STREAM_TICK_SECONDS) ---------------------------

    async def _hold(self, message: dict) -> None:
        first, last = message["first_seq"], message["last_seq"]
        body = frames.frame_body(first, last, message["html"])
        if self.held is not None and first != self.held.last_seq + 1:
            await self._send_held()  # not contiguous: the page must see the gap as it is
        loop = asyncio.get_running_loop()
        if self.held is None:
            due = self.text_sent_at + STREAM_TICK_SECONDS
            if loop.time() >= due:  # none sent this tick: this one goes at once
                self.text_sent_at = loop.time()
                await self._send_frame(last, message["html"])
                return
            self.held = HeldText(first, last, [body], len(body))
            self.held_flush = loop.call_at(due, self._flush_held_soon)
        else:
            self.held.last_seq = last
            self.held.bodies.append(body)
            self.held.size += len(body)
        if self.held.size > MAX_HELD_CHARS:
            await self._send_held()

    def _flush_held_soon(self) -> None:
        task = asyncio.ensure_future(self._send_held())
        self.flushing.add(task)  # a reference, so the task is not collected mid-send
        task.add_done_callback(self.flushing.discard)

    async def _send_held(self) -> None:
        held, self.held = self.held, None
        if self.held_flush is not None:
            self.held_flush.cancel()
            self.held_flush = None
        if held is not None and not self.ended:
            self.text_sent_at = asyncio.get_running_loop().time()
            await self._send_frame(held.last_seq, held.html())

    async def live_catch_up(self, message: dict) -> None:
        """This process subscribed again after its relay's connection was cut
        (chatui.live.fanout): what was published meanwhile never came. Access is
        re-checked first (a revocation sent meanwhile was lost too), then the page gets
        what it missed from the event log, before any frame published since (those
        queue behind this message). The socket stays open: no handshake again."""
        if self.ended:
            return
        await self.access_recheck()
        if self.ended:
            return
        await self._send_held()
        replay = await shared_replay(self.conversation_id, self.last_sent_seq, message["at"])
        if replay is not None and replay.last_seq > self.last_sent_seq:
            await self._send_frame(replay.last_seq, replay.html)

    async def session_ended(self, message: dict) -> None:
        """The session logged out (chatui.live.revocation): close without asking the database."""
        await self._end(CLOSE_FORBIDDEN)

    async def access_recheck(self, message: dict | None = None) -> None:
        """The user's groups, permissions or account changed (chatui.live.revocation)."""
        if self.ended:
            return
        verdict = await self._recheck()
        if verdict:
            await self._end(verdict)

    async def accept(self, subprotocol=None, headers=None) -> None:
        await super().accept(subprotocol, headers)
        self.accepted = True

    async def close_for_resume(self) -> None:
        """Close with CLOSE_TRY_AGAIN, accepting first if the handshake is still open
        (browsers only see a code after it): the page reconnects with its last seq."""
        if self.ended:
            return
        if not self.accepted:
            await self.accept()
        await self._end(CLOSE_TRY_AGAIN)

    async def _send_frame(self, last_seq: int, html: str) -> None:
        self.last_sent_seq = max(self.last_sent_seq, last_seq)
        try:
            await self.send(text_data=html)
        except OSError:
            # The client left between this frame's dispatch and its send (ASGI's error
            # for a closed connection): nothing to report, and the server's
            # websocket.disconnect, already queued, ends this consumer.
            logger.debug("a frame for a socket its client had closed was dropped")

    def _after(self) -> int:
        query = parse_qs(self.scope.get("query_string", b"").decode(errors="replace"))
        return parse_seq((query.get("after") or ["0"])[0]) or 0

    def _session_key(self) -> str | None:
        session = self.scope.get("session")
        return session.session_key if session is not None else None

    # -- access --------------------------------------------------------------------

    async def _admit(self, user, group: str) -> bool:
        """Check access and take a socket slot, then join `group` and accept; or accept
        and close with the refusal's code (False). The user's and the session's
        revocation groups are joined before authorising: a revocation committed
        meanwhile queues behind this connect instead of being missed.

        While the layer is known to be down the handshake is answered at once, without
        Redis or the database: the page retries within a second or so."""
        if HEALTH.is_down():
            await self.close_for_resume()
            return False
        if user.is_authenticated:
            await self._join(user_group(user.pk))
            if self._session_key():
                await self._join(session_group(self._session_key()))
        verdict = await self._authorise(user)
        if verdict == CLOSE_LATE:
            # Nothing sent: daphne drops it (if it has not yet) and the page retries
            # after its backoff, which spreads the herd out.
            return False
        if verdict is None and not self._take_slot(user.pk):
            verdict = CLOSE_TOO_MANY_SOCKETS
        if verdict:
            # Accept, then close with our code: browsers only see codes after the handshake.
            await self.accept()
            await self._end(verdict)
            return False
        await self._join(group)
        self.joined_at = asyncio.get_running_loop().time()
        await self.accept()
        if self.resume_when_accepted:
            await self.close_for_resume()
            return False
        return True

    @on_handshake_thread
    def _authorise(self, user) -> int | None:
        if self._late():
            return CLOSE_LATE
        return self._verdict(user)

    def _late(self) -> bool:
        """Is this handshake one its client has given up on? Checked when its reads' turn
        comes on the handshake threads: after a fault every page reconnects at once, and
        reads done for handshakes daphne had already dropped kept the live ones waiting
        past the timeout too (bench/cluster_faults.py: 3,963 handshakes, 95 accepted)."""
        return self.loop.time() - self.started > LATE_HANDSHAKE_SECONDS

    @on_handshake_thread
    def _recheck(self) -> int | None:
        # The scope's user carries cached permissions: ask the session who it is now.
        # On the handshake threads, not Channels' one database thread: after a Redis
        # outage every socket of a process re-checks at once before its catch-up
        # (`live_catch_up`), and 150 of them queued there behind the API's sync work
        # (docs/SCALING.md#whole-replays, run 14).
        return self._verdict(session_user(self._session_key()))

    def _verdict(self, user) -> int | None:
        conversation = Conversation.objects.filter(pk=self.conversation_id).first()
        if conversation is None:
            return CLOSE_NOT_FOUND
        if user is None or not can_view(user, conversation):
            return CLOSE_FORBIDDEN
        return None

    async def _recheck_periodically(self) -> None:
        """The backstop for changes that send no signal (a queryset update, an
        expired session, a change made in another process without a shared layer)."""
        period = settings.CHATUI_WS_RECHECK_SECONDS
        while not self.ended:
            # Jittered, so sockets opened together do not all hit the database together.
            await asyncio.sleep(period * random.uniform(0.8, 1.2))
            try:
                await self.access_recheck()
            except Exception:  # a database hiccup must not end the watch
                logger.exception("periodic access re-check failed")

    async def _end(self, code: int) -> None:
        """Stop every frame at once (`ended`), close with `code` (once), then leave
        the groups: on Redis that is a round trip per group, and until the close is
        sent daphne keeps queueing whatever a flooding client sends."""
        if self.ended:
            return
        self.ended = True
        self._stop_watching()
        self._drop_held()
        await self.close(code=code)
        await self._leave_groups()

    # -- bookkeeping ---------------------------------------------------------------

    async def _join(self, group: str) -> None:
        await fanout.group_add(group, self.channel_name)
        self.joined.append(group)

    async def _leave_groups(self) -> None:
        # In-process only (the relay unsubscribes in its own time): never waits on Redis.
        while self.joined:
            await fanout.group_discard(self.joined.pop(), self.channel_name)

    def _drop_held(self) -> None:
        """Closing: held streamed text is not sent (the page resumes by seq)."""
        self.held = None
        if self.held_flush is not None:
            self.held_flush.cancel()
            self.held_flush = None

    def _stop_watching(self) -> None:
        # Not the watcher itself: cancelling it would cancel its own close.
        if self.watcher is not None and self.watcher is not asyncio.current_task():
            self.watcher.cancel()
        self.watcher = None

    def _take_slot(self, user_pk) -> bool:
        """One of the user's CHATUI_MAX_SOCKETS_PER_USER sockets in this process, if free."""
        self.place = open_sockets.take(user_pk, settings.CHATUI_MAX_SOCKETS_PER_USER)
        return self.place is not None

    def _release_slot(self) -> None:
        if self.place is not None:
            self.place.release()


class ConversationListConsumer(TranscriptConsumer):
    """`/ws/rows/`: the reader's own conversation rows, live, for the list
    page and the rail (docs/rendering.md#list-and-rail). Rows are rendered once by the broadcaster
    and sent to the reader's rows group; this consumer only forwards them, and shares the
    transcript consumer's access rules: a signed-in reader, closed on logout or when
    the session no longer belongs to them, counted against the per-user socket cap,
    never taking input."""

    async def connect(self) -> None:
        user = self.scope["user"]
        self.reader_pk = user.pk if user.is_authenticated else None
        if await self._admit(user, rows_group(self.reader_pk)):
            self.watcher = asyncio.create_task(self._recheck_periodically())

    async def _authorise(self, user) -> int | None:
        return self._verdict(user)  # no database: the reader's own rows

    async def live_catch_up(self, message: dict) -> None:
        """Rows are not replayed by seq: the socket is closed for resume, as before."""
        await self.close_for_resume()

    async def list_row(self, message: dict) -> None:
        """A conversation row rendered once by the broadcaster (chatui.live.broadcast)."""
        if not self.ended:
            await self.send(text_data=message["html"])

    def _verdict(self, user) -> int | None:
        if user is None or not user.is_authenticated or not user.is_active:
            return CLOSE_FORBIDDEN
        return None if user.pk == self.reader_pk else CLOSE_FORBIDDEN


def close_every_socket_for_resume() -> None:
    """The layer is lost. With the live relay (cluster mode) the sockets stay open and
    catch up when it has subscribed again (`live_catch_up`). Without it — a host
    project's own shared layer, memberships in Redis — every viewer's socket in this
    process is closed with CLOSE_TRY_AGAIN: the frames published meanwhile are gone,
    and a Redis that restarts comes back without the memberships. Reconnecting, the page
    gets what it missed from the event log. A socket still connecting is closed once
    accepted."""
    if fanout.relay_url() is not None:
        return
    for consumer in list(running):
        if consumer.ended:
            continue
        if consumer.accepted:
            # From the consumer's own loop (the failure may be noticed on another thread).
            consumer.loop.call_soon_threadsafe(_start_closing, consumer)
        else:
            consumer.resume_when_accepted = True


def _start_closing(consumer: TranscriptConsumer) -> None:
    task = asyncio.ensure_future(consumer.close_for_resume())
    _closing.add(task)
    task.add_done_callback(_closing.discard)


_closing: set[asyncio.Task] = set()  # held: the loop keeps only weak references
HEALTH.on_lost(close_every_socket_for_resume)
