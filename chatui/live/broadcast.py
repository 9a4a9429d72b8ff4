"""The one connection point between writers and live delivery (cf. Zulip's
`tornado/django_api.py`): ingest's on-commit `events_ingested` signal is received
here, the frame is rendered once, and it is sent to the conversation's group,
whose name the consumers join by; when the conversation's list row changed, the row
is rendered once too and sent to its owner's rows group (list page and rail). In
cluster mode a group's message is one PUBLISH, fanned out in each process that has
members (chatui.live.fanout).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections import OrderedDict, deque
from weakref import WeakKeyDictionary

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer
from django.dispatch import receiver
from django.template.loader import render_to_string

from chatui.db.layer_health import HEALTH, layer_errors
from chatui.ingest.projection import ChangeSet
from chatui.ingest.service import events_ingested
from chatui.ingest.writer_threads import calling_loop, on_writer
from chatui.models import Conversation
from chatui.read import listing, selectors

from .fanout import live_layer, publish, publish_now, put_in_memory, relay_url
from .frames import change_frame

logger = logging.getLogger(__name__)


def group_name(conversation_id) -> str:
    return f"conversation.{str(conversation_id).replace('-', '')}"


def rows_group(user_pk) -> str:
    """The group of a reader's list and rail sockets (their own conversations' rows)."""
    return f"rows.{user_pk}"


def row_changed(changes: ChangeSet) -> bool:
    """Did the ingest change what a list row shows? Its status and title (the
    conversation), its preview and counts (a message created or removed). Edits of a
    message in place (streaming deltas, progress) wait for the next such change, so
    a streaming answer costs no row query per token."""
    return bool(
        changes.conversation_changed or changes.created or changes.removed or changes.full_refresh
    )


@receiver(events_ingested, dispatch_uid="chatui.live.broadcast.broadcast")
def broadcast(
    sender,
    conversation: Conversation,
    conversation_id,
    first_seq: int,
    last_seq: int,
    changes: ChangeSet,
    **kwargs,
) -> None:
    """Render the frame once and hand it to every viewer's consumer; nothing is
    rendered for a group nobody is in (`may_have_members`)."""
    group = group_name(conversation_id)
    if may_have_members(group):
        frame = change_frame(conversation, first_seq, last_seq, changes)
        send_to_group(
            group,
            {
                "type": "transcript.frame",
                "first_seq": frame.first_seq,
                "last_seq": frame.last_seq,
                "html": frame.html,
                "streamed_text_only": frame.streamed_text_only,
            },
        )
    if row_changed(changes) and may_have_members(rows_group(conversation.owner_id)):
        ROWS.changed(conversation_id)


def may_have_members(group: str) -> bool:
    """Might a message sent to `group` reach anyone? In embedded mode the in-memory
    layer (one process) knows its groups: with nobody in one — a runtime posting while
    nobody watches, a transcript watched by no list page — a frame or row would be
    rendered for nobody. A page that opens later misses nothing: its socket joins the
    group before it reads what it missed (chatui.live.consumers; rows come with the list
    page). In cluster mode other processes' members would need a round trip to know: yes."""
    layer = live_layer()
    if relay_url() is None and isinstance(layer, InMemoryChannelLayer):
        return bool(layer.groups.get(group))
    return True


class RowPacer:
    """A conversation's list row goes out at most once per `interval` from the writer
    threads: the first change at once, the changes that follow within the interval
    together at its end, rendered then (so the row is the latest). A tool step, a
    status, a new message each change the row; a busy run would otherwise render and
    send it to every list and rail of its owner for each of them.

    Only a write that came from an event loop (`calling_loop`: the API and the ingest
    channel under daphne) is paced: the trailing row is written from that loop through
    a writer thread. Elsewhere (built-in agents, admin, tests) the row goes out at once."""

    def __init__(self, interval: float, size: int = 4096) -> None:
        self.interval = interval
        self.size = size
        self._lock = threading.Lock()
        self._sent: OrderedDict[str, float] = OrderedDict()  # conversation → when
        self._due: dict[str, float] = {}  # conversation → when its trailing row is due

    def changed(self, conversation_id) -> None:
        loop = calling_loop()
        if loop is None:
            send_row(conversation_id)
            return
        key, now = str(conversation_id), time.monotonic()
        with self._lock:
            # A trailing row is due and will show this change too (unless it never came:
            # its write was cancelled, as at shutdown; then this change schedules one).
            if now < self._due.get(key, -math.inf) + self.interval:
                return
            wait = self._sent.get(key, -math.inf) + self.interval - now
            if wait > 0:
                self._due[key] = now + wait
            else:
                self._due.pop(key, None)
                self._mark_sent(key, now)
        if wait > 0:
            with contextlib.suppress(RuntimeError):  # a closed loop: the server is stopping
                loop.call_soon_threadsafe(loop.call_later, wait, self._trail, conversation_id)
        else:
            send_row(conversation_id)

    def _trail(self, conversation_id) -> None:
        """On the event loop, when the interval is over: the row, from a writer thread."""
        task = asyncio.ensure_future(on_writer(self._send_due, conversation_id))
        _trailing.add(task)
        task.add_done_callback(_trailing.discard)

    def _send_due(self, conversation_id) -> None:
        key = str(conversation_id)
        with self._lock:
            self._due.pop(key, None)
            self._mark_sent(key, time.monotonic())
        send_row(conversation_id)

    def _mark_sent(self, key: str, when: float) -> None:
        self._sent[key] = when
        self._sent.move_to_end(key)
        while len(self._sent) > self.size:
            self._sent.popitem(last=False)


#: How often a conversation's row may go out (docs/rendering.md#list-and-rail: the list is live; a
#: quarter of a second is under what a reader notices in a list).
ROW_INTERVAL = 0.25
ROWS = RowPacer(ROW_INTERVAL)
_trailing: set[asyncio.Task] = set()  # held: the loop keeps only weak references


def send_row(conversation_id) -> None:
    """The conversation's list row, rendered once, to its owner's list and rail."""
    conversation = selectors.conversation_row(conversation_id)
    if conversation is None:
        return
    html = render_to_string(
        "chatui/_conversation_row.html", {"row": listing.present_row(conversation), "oob": True}
    )
    send_to_group(rows_group(conversation.owner_id), {"type": "list.row", "html": html})


def send_to_group(group: str, message: dict) -> None:
    """Hand `message` to the group's sockets. From a writer thread (the API's and the
    ingest channel's writes) it is queued for the event loop the write came from, and
    the writer goes on at once; elsewhere (built-in agents, admin, tests) it is sent
    before this returns."""
    loop = calling_loop()
    if loop is None:
        try:
            if relay_url() is not None:
                publish_now(group, message)
            else:
                async_to_sync(live_layer().group_send)(group, message)
        except layer_errors() as error:
            # A best-effort fast path: the event is committed, viewers resume by seq.
            HEALTH.lost(error)
            HEALTH.dropped += 1
        else:
            HEALTH.back()
    else:
        outbox_of(loop).put(group, message)


class Outbox:
    """Group messages from writer threads, sent by one task on the event loop in the
    order they were put (frames of a conversation arrive in commit order). The writer
    does not wait for the send: the sockets' own loop does that work, and a frame
    costs the writer a deque append (py-spy over bench/p2: waiting on `async_to_sync`
    was a sixth of the writer's samples). A viewer that misses a frame still catches
    up by seq (docs/rendering.md#live-updates), as before."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._pending: deque[tuple[str, dict]] = deque()
        self._lock = threading.Lock()
        self._draining = False
        self._task: asyncio.Task | None = None  # held: the loop keeps only a weak reference

    def put(self, group: str, message: dict) -> None:
        with self._lock:
            self._pending.append((group, message))
            if self._draining:
                return  # the running drain takes it
            self._draining = True
        try:
            self.loop.call_soon_threadsafe(self._start)
        except RuntimeError:  # the loop has closed: the server is stopping
            with self._lock:
                self._pending.clear()
                self._draining = False

    def _start(self) -> None:
        layer = live_layer()
        if relay_url() is None and isinstance(layer, InMemoryChannelLayer):
            self._drain_in_memory(layer)  # no task: nothing there waits
        else:
            self._task = self.loop.create_task(self._drain())

    def _drain_in_memory(self, layer: InMemoryChannelLayer) -> None:
        """What `_drain` does, at once: on the in-memory layer a send only queues a copy
        for each member (`put_in_memory`), so a task per drain (made, then stepped on
        the next turn of the loop) would only add its own cost. What a writer puts
        meanwhile is taken too, in order, as there."""
        while (taken := self._take_next()) is not None:
            group, message = taken
            try:
                put_in_memory(layer, group, message)
            except Exception:
                logger.exception("could not send a frame to %s", group)

    async def _drain(self) -> None:
        """Publish what is waiting, all of it in one round trip (in order), until
        nothing is."""
        errors = layer_errors()
        # Without a relay: a host project's own shared layer, a send per group.
        layer = None if relay_url() is not None else live_layer()
        while taken := self._take_all():
            if HEALTH.is_down():
                # Not even tried: each send would wait for a refused connection, and the
                # viewers' sockets are being closed for resume (chatui.db.layer_health).
                HEALTH.dropped += len(taken)
                continue
            try:
                if layer is None:
                    await publish(taken)
                else:
                    for group, message in taken:
                        await layer.group_send(group, message)
            except errors as error:
                HEALTH.lost(error)  # one line for the outage, not a traceback per frame
                HEALTH.dropped += len(taken)
            except Exception:
                logger.exception("could not publish %d frames", len(taken))

    def _take_all(self) -> list[tuple[str, dict]]:
        """Every waiting frame, oldest first, or none: then draining has ended (under
        the lock, so a writer putting one now starts the next drain)."""
        with self._lock:
            if not self._pending:
                self._draining = False
                return []
            taken = list(self._pending)
            self._pending.clear()
            return taken

    def _take_next(self) -> tuple[str, dict] | None:
        """The oldest waiting frame, or None: then draining has ended (under the lock, so
        a writer putting one now starts the next drain)."""
        with self._lock:
            if not self._pending:
                self._draining = False
                return None
            return self._pending.popleft()


_outboxes: WeakKeyDictionary[asyncio.AbstractEventLoop, Outbox] = WeakKeyDictionary()
_outboxes_lock = threading.Lock()


def outbox_of(loop: asyncio.AbstractEventLoop) -> Outbox:
    with _outboxes_lock:
        outbox = _outboxes.get(loop)
        if outbox is None:
            outbox = _outboxes[loop] = Outbox(loop)
        return outbox
