"""Tool approvals after their events commit: expiry at the deadline, and the long polls woken.

**The clock.** A request nobody decides expires at its deadline (`expired`, by "system"),
recorded while a server process is up whether or not anyone reads the conversation. Each
serving process — daphne, in the embedded default and in cluster mode, and every run
worker — keeps, on its event loop, one timer per conversation for that conversation's
earliest pending deadline:

- set when an approval request commits in this process (`_committed`, on ingest's
  `approval_events_committed`, with the deadlines the projection gave: a native request's
  and an AG-UI interrupt's alike);
- found in the database when the process starts, and every `RESCAN_SECONDS` after: the
  requests asked before it started, or in another process (a cluster's other web
  processes, a management command) whose own timer may be gone with it;
- when it fires, the overdue requests are expired on a writer thread through `ingest`
  (so the live frame goes out as for any write: chatui.live.broadcast), and the
  conversation's next deadline, if any, is timed.

Readers still expire overdue requests first (chatui.ingest.approvals.expire_overdue), and
`manage.py expire_approvals` sweeps: a deadline that passed while no process was up is
recorded by the first that looks.

**Exactly once.** Several processes may time the same deadline. An expiry carries the
decision's deterministic event id (chatui.ingest.approvals.decision_event_id, in the id space
runtimes may not post: chatui.ingest.events.RESERVED_EVENT_ID) and a body fixed by the
deadline, so under the conversation's row lock the first process records it and the
others find it recorded (nothing due, or a duplicate); a person's decision that came
first wins, and the expiry is then a 409 that `expire_overdue` expects.

**The long polls.** A runtime's long poll for a call (chatui.web.approval_views) waits in
`decisions_of` for that one call; a `tool.approval` that commits wakes the polls of its
call (`wake_waiters`): those of this process directly, whatever their thread or event
loop, and those of other processes through the channel-layer group of that call
(`decision_group`) when the layer reaches other processes (Redis). A poll is woken by
its own call's decision and by nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.dispatch import receiver

from chatui.ingest.approvals import expire_due, pending_deadlines
from chatui.ingest.service import approval_events_committed
from chatui.ingest.writer_threads import on_writer
from chatui.models import Event

from .broadcast import send_to_group

logger = logging.getLogger(__name__)

DECIDED = "tool.approval"
#: How often a process looks in the database for deadlines it was not told of.
RESCAN_SECONDS = 60.0
#: A timer fires this much after its deadline: `expire_overdue` takes only what is due.
SLACK_SECONDS = 0.01
#: After a failed expiry (the database away), when the timer tries again.
RETRY_SECONDS = 5.0


def decision_group(conversation_id: Any, tool_call_id: str) -> str:
    """The channel-layer group of one call's decision: the long polls waiting for it."""
    key = f"{str(conversation_id).replace('-', '')}:{tool_call_id}"
    return "approval." + hashlib.sha256(key.encode()).hexdigest()[:40]


@receiver(approval_events_committed, dispatch_uid="chatui.live.approval_clock.committed")
def _committed(
    sender: Any,
    conversation_id: Any,
    rows: list[Event],
    deadlines: list[datetime] = (),  # type: ignore[assignment]
    **kwargs: Any,
) -> None:
    """After an ingest that wrote approval requests or decisions commits, in the
    process (and on the thread) that wrote them. The deadlines are the projection's
    (native requests and AG-UI interrupts alike), so the clock and the entry agree."""
    if deadlines:
        CLOCK.expect(conversation_id, min(deadlines))
    for row in rows:
        if row.type == DECIDED:
            wake_waiters(conversation_id, row.tool_call_id)


#: The long polls waiting in this process, by `decision_group`: (their loop, their event).
_waiting: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
_waiting_lock = threading.Lock()


def _layer_reaches_other_processes() -> Any:
    """The channel layer, when it is one that other processes share (not in-memory)."""
    layer = get_channel_layer()
    return None if layer is None or isinstance(layer, InMemoryChannelLayer) else layer


@contextlib.asynccontextmanager
async def decisions_of(conversation_id: Any, tool_call_id: str) -> AsyncIterator[asyncio.Event]:
    """An event set when this call's decision commits, here or in another process. Enter
    it before looking, so that a decision committed in between is not missed."""
    group = decision_group(conversation_id, tool_call_id)
    decided = asyncio.Event()
    entry = (asyncio.get_running_loop(), decided)
    with _waiting_lock:
        _waiting.setdefault(group, set()).add(entry)
    layer = _layer_reaches_other_processes()
    listening = channel = None
    if layer is not None:
        channel = await layer.new_channel("chatui.approval.")
        await layer.group_add(group, channel)

        async def listen() -> None:
            while True:
                await layer.receive(channel)
                decided.set()

        listening = asyncio.ensure_future(listen())
    try:
        yield decided
    finally:
        with _waiting_lock:
            waiters = _waiting.get(group)
            if waiters is not None:
                waiters.discard(entry)
                if not waiters:
                    del _waiting[group]
        if listening is not None:
            await _cancelled_until_ended(listening)
            await layer.group_discard(group, channel)


async def _cancelled_until_ended(task: asyncio.Future) -> None:
    """Cancel `task` until it has ended. On the Redis layer a receive can swallow one
    cancellation and go on reading for ever (docs/SCALING.md, "A cancelled consumer on
    Redis"; chatui.live.consumers.ending_when_cancelled does the same for consumers): a
    long poll awaiting its listener then never answered, and make test-cluster hung in
    test_sec13_api_decides_and_the_long_poll_returns_it. The next cancellation reaches
    it inside Redis' blocking read, where it is honoured."""
    for _ in range(RECANCEL_ROUNDS):
        if task.done():
            break
        task.cancel()
        await asyncio.wait({task}, timeout=RECANCEL_SECONDS)
    else:
        logger.error("an approval listener ignored %d cancellations: %r", RECANCEL_ROUNDS, task)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: a listener that failed has nothing more to say


#: How often, and how many times, a listener is cancelled again (as consumers are).
RECANCEL_SECONDS = 0.2
RECANCEL_ROUNDS = 50


def wake_waiters(conversation_id: Any, tool_call_id: str) -> None:
    """Wake the long polls waiting for this call's decision, in every process. From any
    thread (a writer thread, a sync view's, the clock's writes)."""
    group = decision_group(conversation_id, tool_call_id)
    with _waiting_lock:
        here = list(_waiting.get(group, ()))
    for loop, decided in here:
        with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits
            loop.call_soon_threadsafe(decided.set)
    if _layer_reaches_other_processes() is not None:
        send_to_group(group, {"type": "approval.decided"})


class ApprovalClock:
    """The timers of one process, on its event loop (see the module docstring)."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        #: conversation id -> (its earliest pending deadline, as a POSIX time; its timer)
        self._timers: dict[str, tuple[float, asyncio.TimerHandle]] = {}
        self._tasks: set[asyncio.Task] = set()  # held: the loop keeps weak references

    @property
    def running(self) -> bool:
        return self.loop is not None and not self.loop.is_closed()

    def start(self) -> None:
        """From the serving process's event loop: record expiries at their deadlines from
        now on (a second call on the same loop changes nothing)."""
        loop = asyncio.get_running_loop()
        if self.loop is loop:
            return
        self.loop = loop
        self._timers.clear()
        self._spawn(self._rescan_forever())

    def expect(self, conversation_id: Any, deadline: datetime) -> None:
        """A request of this conversation expires at `deadline`. From any thread; nothing
        in a process whose clock is not running (readers and sweeps cover it)."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed: the process is stopping
            loop.call_soon_threadsafe(self._at, str(conversation_id), deadline.timestamp())

    # -- on the loop -----------------------------------------------------------------

    def _at(self, key: str, when: float) -> None:
        """Time `key` for `when`, unless it is timed for no later already."""
        current = self._timers.get(key)
        if current is not None:
            if current[0] <= when:
                return  # its next deadline is earlier, and then the one after is timed
            current[1].cancel()
        assert self.loop is not None
        delay = max(0.0, when - time.time()) + SLACK_SECONDS
        self._timers[key] = (when, self.loop.call_later(delay, self._due, key))

    def _due(self, key: str) -> None:
        self._timers.pop(key, None)
        self._spawn(self._expire(key))

    async def _expire(self, key: str) -> None:
        try:
            following = await on_writer(expire_due, key)
        except Exception:
            logger.exception("could not expire the approvals of conversation %s", key)
            self._at(key, time.time() + RETRY_SECONDS)
            return
        if following is not None:
            self._at(key, following.timestamp())

    async def _rescan_forever(self) -> None:
        while True:
            try:
                for key, deadline in (await on_writer(pending_deadlines)).items():
                    self._at(key, deadline.timestamp())
            except Exception:
                logger.exception("could not read the pending approvals' deadlines")
            await asyncio.sleep(RESCAN_SECONDS)

    def _spawn(self, work: Any) -> None:
        assert self.loop is not None
        task = self.loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


#: This process's clock.
CLOCK = ApprovalClock()
