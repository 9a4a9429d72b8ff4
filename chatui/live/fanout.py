"""Live frames across processes: one message per process per group, fanned out here
(docs/SCALING.md#fan-out).

Each process keeps its sockets' group memberships itself, in the in-memory channel
layer of the `live` alias (`live_layer`): a socket's consumer receives from there. In
cluster mode (`CHATUI_LIVE_RELAY_URL`, Redis) each process also holds one Redis pub/sub
connection, subscribed once to each group that has a socket in the process
(`Relay`). A frame goes out as one PUBLISH per group; Redis hands it to each process
subscribed, and the process puts a copy in each of its members' queues
(`put_in_memory`). Without a relay (embedded mode) the in-memory layer is all there is.

Why not channels-redis's layer: it keeps memberships in Redis and delivers each
message to each socket's own channel, all of a process's through one serial receive
(per message a Lua EVAL, a BZPOPMIN and a ZADD): 500 events/s in batches of 10 to 30
viewers a conversation is 1,500 messages/s through two such loops, and frames reached
300 viewers 28 s late at p99 (bench/cluster_faults.py). Its pub/sub layer keeps
memberships in-process too, but it subscribes each socket's own channel in Redis (a
handshake then fails with a 500 while Redis is down), logs a traceback each second of
an outage and one per socket it cleans up, and no longer calls its documented
`on_disconnect` hook (channels_redis issue 406), so a process cannot know that frames
were lost: docs/SCALING.md#fan-out has the measured run.

When the relay's connection is cut (Redis stopped, restarted, or the connection alone
dropped), frames published meanwhile are lost for this process, but its sockets'
memberships are not: the relay connects again (every RECONNECT_SECONDS), subscribes
again, in one command, to every group that still has members, and when Redis has
confirmed that, puts a `live.catch_up` message in each member's queue, ahead of any
frame published since; each socket then sends its page what it missed from the event
log (chatui.live.consumers). No handshake is repeated: after a Redis outage, 300
viewers closed for resume had cost 300 handshakes at once. Nothing here uses a
library's private API: redis-py's PubSub, pipeline and Retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import threading
import time
from collections import Counter, deque
from typing import Any
from weakref import WeakKeyDictionary

from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings

try:  # redis-py comes with the cluster extra (`.[redis]`); embedded mode runs without it
    import redis
    import redis.asyncio
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError:  # pragma: no cover - relay_url() is None without Redis, so unused
    redis = None  # type: ignore[assignment]

from chatui.db.layer_health import HEALTH, layer_errors

logger = logging.getLogger(__name__)

#: The channel-layer alias of the viewers' sockets: each process's own memberships.
LIVE_LAYER = "live"
#: Redis pub/sub channel of a group: this prefix and the group's name.
CHANNEL_PREFIX = "chatui.live."
#: How long a join waits for Redis to confirm its subscription (or the relay to connect
#: the first time): less than daphne's 5 s for a handshake, so that a slow Redis is
#: answered with 1013, which the page retries on, not with a dropped connection.
CONFIRM_SECONDS = 3.0
#: After its connection was cut, the relay tries to connect again this often.
RECONNECT_SECONDS = 0.25
#: A group nobody in the process is in any more is unsubscribed after this long: a page
#: that reconnects (a resume, a reload) joins again at once, without a round trip.
LINGER_SECONDS = 2.0
#: Redis' answer to a PUBLISH or SUBSCRIBE: bounded, as the channel layer's.
SOCKET_TIMEOUT = 15.0


def live_alias() -> str:
    """The `live` alias, where the settings define one (chatui's own do); a host
    project that defines only `default` has its sockets there, as before."""
    return LIVE_LAYER if LIVE_LAYER in settings.CHANNEL_LAYERS else DEFAULT_CHANNEL_LAYER


def live_layer() -> Any:
    return get_channel_layer(live_alias())


def relay_url() -> str | None:
    """Redis' URL in cluster mode; None in embedded mode (one process: no relay)."""
    return getattr(settings, "CHATUI_LIVE_RELAY_URL", None)


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


# -- membership -------------------------------------------------------------------------


async def group_add(group: str, channel: str) -> None:
    """Put `channel` (a socket's consumer) in `group`; in cluster mode, once this
    returns, a frame published to the group from any process reaches it (its process is
    subscribed and Redis has confirmed it)."""
    layer = live_layer()
    await layer.group_add(group, channel)
    relay = relay_here()
    if relay is not None:
        try:
            await relay.join(group)
        except BaseException:
            await layer.group_discard(group, channel)
            raise


async def group_discard(group: str, channel: str) -> None:
    """Take `channel` out of `group` (the in-memory layer's discard never waits)."""
    await live_layer().group_discard(group, channel)
    relay = relay_here()
    if relay is not None:
        relay.leave(group)


_relays: WeakKeyDictionary[asyncio.AbstractEventLoop, Relay] = WeakKeyDictionary()


def relay_here() -> Relay | None:
    """The running loop's relay (cluster mode), made on first use; None without Redis."""
    url = relay_url()
    if url is None:
        return None
    loop = asyncio.get_running_loop()
    relay = _relays.get(loop)
    if relay is None:
        relay = _relays[loop] = Relay(url)
    return relay


def client_for(url: str) -> redis.asyncio.Redis:
    # No retries inside redis-py: a read that fails must be seen as failed (redis-py
    # would otherwise reconnect, subscribe again and go on, and the frames published
    # while the connection was away would be lost without anyone knowing).
    return redis.asyncio.Redis.from_url(
        url, socket_timeout=SOCKET_TIMEOUT, retry=Retry(NoBackoff(), 0)
    )


class Relay:
    """One process's subscriber (per event loop: daphne has one). Event-loop only.

    `members` counts the joins of each group in the process; a group is subscribed
    while it has members (and LINGER_SECONDS after). Commands are sent under one lock,
    decided and written together, so that a SUBSCRIBE and an UNSUBSCRIBE of a group
    reach Redis in the order they were decided; Redis confirms each SUBSCRIBE in order,
    and a join waits for the confirmation of the SUBSCRIBE it relies on."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.get_running_loop()
        self.client = client_for(url)
        self.pubsub = self.client.pubsub()
        self.members: Counter[str] = Counter()
        self.subscribed: set[str] = set()  # confirmed, no UNSUBSCRIBE since
        self.pending: dict[str, asyncio.Future] = {}  # the SUBSCRIBE a join waits for
        self.confirming: dict[str, deque[asyncio.Future]] = {}  # every SUBSCRIBE unconfirmed
        self.connected = asyncio.Event()
        self.tried = asyncio.Event()  # a first connection attempt has ended, either way
        self.sending = asyncio.Lock()
        self.left = asyncio.Event()
        self.cuts = 0
        self.rejoining: set[str] = set()  # groups subscribed again after a cut, unconfirmed
        self.reader = self.loop.create_task(self._read())
        self.sweeper = self.loop.create_task(self._sweep())

    # -- joining and leaving --------------------------------------------------------------

    async def join(self, group: str) -> None:
        self.members[group] += 1
        try:
            if not self.connected.is_set():
                # The first connection may be under way; after a cut, this handshake
                # is answered with 1013 and the page comes back when Redis does.
                await asyncio.wait_for(self.tried.wait(), CONFIRM_SECONDS)
                if not self.connected.is_set():
                    raise redis.exceptions.ConnectionError("the live relay is not connected")
            async with self.sending:
                if group in self.subscribed:
                    return
                confirmed = self.pending.get(group)
                if confirmed is None:
                    confirmed = self.loop.create_future()
                    self.pending[group] = confirmed
                    self.confirming.setdefault(group, deque()).append(confirmed)
                    await self.pubsub.subscribe(CHANNEL_PREFIX + group)
            await asyncio.wait_for(asyncio.shield(confirmed), CONFIRM_SECONDS)
        except BaseException:
            self.leave(group)
            raise

    def leave(self, group: str) -> None:
        self.members[group] -= 1
        if self.members[group] <= 0:
            del self.members[group]
            self.left.set()

    async def _sweep(self) -> None:
        """Unsubscribe the groups nobody in the process is in any more."""
        while True:
            await self.left.wait()
            await asyncio.sleep(LINGER_SECONDS)
            self.left.clear()
            async with self.sending:
                gone = [
                    group
                    for group in {*self.subscribed, *self.pending}
                    if not self.members.get(group)
                ]
                for group in gone:
                    self.subscribed.discard(group)
                    self.pending.pop(group, None)  # its confirmation still comes, in turn
                if not gone or not self.connected.is_set():
                    continue
                try:
                    await self.pubsub.unsubscribe(*(CHANNEL_PREFIX + group for group in gone))
                except layer_errors() as error:
                    HEALTH.lost(error)  # the reader sees the cut too, and starts over

    # -- reading ----------------------------------------------------------------------------

    async def _read(self) -> None:
        errors = layer_errors()
        while True:
            try:
                await self.pubsub.connect()
                async with self.sending:  # no join sends its own SUBSCRIBE before this one
                    await self._rejoin()
                    self.connected.set()
                self.tried.set()
                while True:
                    message = await self.pubsub.get_message(timeout=None)
                    if message is not None:
                        self._take(message)
            except errors as error:
                await self._cut(error)
            finally:
                # redis-py can swallow a cancellation (chatui.live.consumers.ending_when_cancelled).
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise asyncio.CancelledError
            await asyncio.sleep(RECONNECT_SECONDS)

    async def _rejoin(self) -> None:
        """After a cut: subscribe again to every group with members, in one command
        (Redis runs it at once: no message published after it comes before the last
        of its confirmations), each joined as a join does."""
        groups = [group for group, count in self.members.items() if count > 0]
        if not groups or not self.cuts:  # the first connection: joins subscribe themselves
            return
        for group in groups:
            confirmed = self.loop.create_future()
            self.pending[group] = confirmed
            self.confirming.setdefault(group, deque()).append(confirmed)
        self.rejoining = set(groups)
        await self.pubsub.subscribe(*(CHANNEL_PREFIX + group for group in groups))

    def _take(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        channel = message["channel"]
        if isinstance(channel, bytes):
            channel = channel.decode()
        group = channel.removeprefix(CHANNEL_PREFIX)
        if kind == "message":
            if self.members.get(group):
                put_in_memory(live_layer(), group, json.loads(message["data"]))
        elif kind == "subscribe":
            waiting = self.confirming.get(group)
            if not waiting:
                return
            confirmed = waiting.popleft()
            if not waiting:
                del self.confirming[group]
            if self.pending.get(group) is confirmed:
                del self.pending[group]
                self.subscribed.add(group)
            if not confirmed.done():
                confirmed.set_result(None)
            if group in self.rejoining:
                self.rejoining.discard(group)
                if not self.rejoining:
                    catch_up_every_member(self.members, self.loop.time())

    async def _cut(self, error: BaseException) -> None:
        """The connection is gone, and with it every subscription and whatever was
        published meanwhile; the members stay, and are subscribed again (`_rejoin`)."""
        self.cuts += 1
        self.connected.clear()
        self.tried.set()
        for waiting in self.confirming.values():
            for confirmed in waiting:
                if not confirmed.done():
                    confirmed.set_exception(redis.exceptions.ConnectionError(str(error)))
                    confirmed.exception()  # retrieved: its joins raise it, or nobody waits
        self.confirming.clear()
        self.pending.clear()
        self.subscribed.clear()
        self.rejoining.clear()
        old, self.pubsub = self.pubsub, self.client.pubsub()
        with contextlib.suppress(Exception):
            await old.aclose()
        HEALTH.interrupted(error)


# -- sending ----------------------------------------------------------------------------


_publishers: WeakKeyDictionary[asyncio.AbstractEventLoop, redis.asyncio.Redis] = WeakKeyDictionary()


async def publish(messages: list[tuple[str, dict[str, Any]]]) -> None:
    """Publish (group, message) pairs in order, in one round trip (a pipeline)."""
    loop = asyncio.get_running_loop()
    client = _publishers.get(loop)
    if client is None:
        client = _publishers[loop] = client_for(relay_url() or "")
    # Tried twice: after Redis restarted, each pooled connection fails once when next
    # used ("Connection closed by server"), and that frame was lost
    # (tests/cluster/test_redis_outage.py). A frame sent twice is shown once (its seq).
    for attempt in (1, 2):
        try:
            async with client.pipeline(transaction=False) as pipe:
                for group, message in messages:
                    pipe.publish(CHANNEL_PREFIX + group, encode(message))
                await pipe.execute()
            return
        except redis.exceptions.ConnectionError:
            if attempt == 2:
                raise


_sync_client: redis.Redis | None = None
_sync_lock = threading.Lock()


def publish_now(group: str, message: dict[str, Any]) -> None:
    """Publish from a thread without an event loop (built-in agents in a run worker, the
    admin, management commands); redis-py's blocking client is thread-safe."""
    global _sync_client
    with _sync_lock:
        if _sync_client is None:
            _sync_client = redis.Redis.from_url(relay_url() or "", socket_timeout=SOCKET_TIMEOUT)
        client = _sync_client
    client.publish(CHANNEL_PREFIX + group, encode(message))


# -- local delivery ---------------------------------------------------------------------

#: The message a socket's consumer gets when its process subscribed again after a cut.
CATCH_UP = "live.catch_up"


def catch_up_every_member(groups, at: float) -> None:
    """Put CATCH_UP, once, in the queue of every channel in `groups` (at once, from the
    reader: ahead of any frame published after the groups were subscribed again, loop
    time `at`: the replay each socket then sends is read after it). A
    full queue has frames waiting anyway: its socket sees a gap and the page resumes."""
    layer = live_layer()
    expires = time.time() + layer.expiry
    channels = {channel for group in list(groups) for channel in layer.groups.get(group, ())}
    for channel in channels:
        with contextlib.suppress(asyncio.QueueFull):
            queue_of(layer, channel).put_nowait((expires, {"type": CATCH_UP, "at": at}))


def queue_of(layer: InMemoryChannelLayer, channel: str) -> asyncio.Queue:
    """The channel's queue in the in-memory layer (its `receive` drops an empty one)."""
    queue = layer.channels.get(channel)
    if queue is None:
        queue = layer.channels.setdefault(
            channel, asyncio.Queue(maxsize=layer.get_capacity(channel))
        )
    return queue


#: Values a message can hold that copying need not copy (what `deepcopy` returns as is).
_IMMUTABLE = (str, int, float, bool, bytes, type(None))


def put_in_memory(layer: InMemoryChannelLayer, group: str, message: dict) -> None:
    """The in-memory layer's `group_send`, reduced to what it does for a group's members
    from the event loop: a copy of the message in each member's queue, or none when
    the queue is full (silently, as there: docs/rendering.md#live-updates, the viewer resumes by
    seq). Its own makes a task per member and waits for them with `as_completed` (~28 µs for one
    viewer), for sends that never wait; and each `send` deep-copies the message, makes
    a new `asyncio.Queue` only for `setdefault` to drop it, and checks a channel name
    the layer checked when the member joined. Here a flat message (a frame: strings
    and numbers, which a copy shares anyway) is copied as a dict. Expired messages are
    swept by the members' `receive`, as before."""
    flat = all(type(value) in _IMMUTABLE for value in message.values())
    expires = time.time() + layer.expiry
    for channel in list(layer.groups.get(group, ())):
        with contextlib.suppress(asyncio.QueueFull):
            copied = dict(message) if flat else copy.deepcopy(message)
            queue_of(layer, channel).put_nowait((expires, copied))
