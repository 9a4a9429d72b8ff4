"""Is the channel layer (Redis, in cluster mode) reachable? One answer per process.

When Redis stops, everything that talks to it fails at once: every frame the outbox
sends, every viewer's receive, every handshake's group join. Logged where each
failed, a 5-second outage wrote 1,864 tracebacks. Here the first failure logs one
line and marks the layer down; while it is down nobody waits on Redis (frames are
dropped at once, handshakes are answered with a close the page retries on); a probe
notices its return and logs one line for that, with how long it was away and how
many frames were not sent.

Whoever depends on the layer learns when it is lost (`on_lost`): the frames published
meanwhile are gone, and the viewers (chatui.live.consumers) catch up from the event log
once the live relay (chatui.live.fanout) has subscribed again — or, where memberships
live in Redis (a host project's own layer, no relay), their sockets are closed with a
code the page reconnects on and resumes by seq. The relay reports a cut subscription
(`interrupted`), also when Redis is back before anyone noticed it was away.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import Callable

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

#: While the layer is down, it is asked this often whether it is back.
PROBE_SECONDS = 0.25


def layer_errors() -> tuple[type[BaseException], ...]:
    """What a lost connection to the layer raises (redis-py's errors are not OSErrors)."""
    try:
        from redis.exceptions import ConnectionError, TimeoutError
    except ImportError:  # no Redis client installed: the in-memory layer never fails so
        return (OSError,)
    return (ConnectionError, TimeoutError, OSError)


class LayerHealth:
    def __init__(self) -> None:
        self.down_since: float | None = None
        self.dropped = 0  # frames not sent while down
        self.outages = 0
        self.pool_full_said = -math.inf
        self._probe: asyncio.Task | None = None
        self._confirm: asyncio.Task | None = None
        self._lost_listeners: list[Callable[[], None]] = []

    def is_down(self) -> bool:
        return self.down_since is not None

    def on_lost(self, listener: Callable[[], None]) -> None:
        """Call `listener` (on the event loop that noticed) when the layer is lost."""
        self._lost_listeners.append(listener)

    def lost(self, error: BaseException) -> None:
        """A call to the layer failed with `error` (one of `layer_errors()`)."""
        if self.down_since is not None:
            return
        if type(error).__name__ == "MaxConnectionsError":
            # This process's pool is full, Redis is fine: not an outage (the caller's
            # socket is closed for resume, its frame dropped). Said once a minute.
            now = time.monotonic()
            if now - self.pool_full_said > 60:
                self.pool_full_said = now
                logger.warning("channel layer: %s in process %d", error, os.getpid())
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a thread without a loop: its next successful send says `back`
            self._declare_lost(error)
            return
        if self._confirm is None or self._confirm.done():
            self._confirm = loop.create_task(self._confirm_lost(error))

    def interrupted(self, error: BaseException) -> None:
        """The live relay's subscription was cut (chatui.live.fanout; its sockets catch
        up when it has subscribed again). As for any failure: an outage if a PING fails
        too (one line); if Redis answers — it restarted faster than we noticed, or only
        the connection dropped — one line saying so."""
        if self.down_since is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._declare_lost(error)
            return
        if self._confirm is None or self._confirm.done():
            self._confirm = loop.create_task(self._confirm_lost(error, cut=True))

    async def _confirm_lost(self, error: BaseException, *, cut: bool = False) -> None:
        """One failed call is not yet an outage: a command begun before Redis went
        away can fail after it came back (redis-py retries it), and stale pooled
        connections fail once each. Declared lost only when a PING fails too (a
        refused connection fails within milliseconds)."""
        try:
            await ping(get_channel_layer())
        except layer_errors():
            if self.down_since is None:
                self._declare_lost(error)
                self._probe = asyncio.get_running_loop().create_task(self._wait_until_back())
        else:
            if cut:
                logger.warning(
                    "channel layer: the live relay's connection was cut (%s: %s) in process "
                    "%d and Redis answers again: viewers catch up from the event log",
                    type(error).__name__,
                    error,
                    os.getpid(),
                )

    def _declare_lost(self, error: BaseException) -> None:
        self.down_since = time.monotonic()
        self.dropped = 0
        self.outages += 1
        logger.warning(
            "channel layer unreachable (%s: %s) in process %d: live frames paused, new "
            "sockets answered with 1013; viewers catch up from the event log when it is back",
            type(error).__name__,
            error,
            os.getpid(),
        )
        self._tell_lost()

    def _tell_lost(self) -> None:
        for listener in self._lost_listeners:
            try:
                listener()
            except Exception:
                logger.exception("a channel-layer listener failed")

    def back(self) -> None:
        """A call to the layer succeeded: if it was down, it is back."""
        if self.down_since is None:
            return
        away = time.monotonic() - self.down_since
        self.down_since = None
        logger.warning(
            "channel layer reachable again in process %d after %.1f s (%d live frames not "
            "sent; viewers resume from the event log)",
            os.getpid(),
            away,
            self.dropped,
        )

    async def _wait_until_back(self) -> None:
        errors = layer_errors()
        while self.down_since is not None:
            await asyncio.sleep(PROBE_SECONDS)
            try:
                await ping(get_channel_layer())
                await drop_idle_connections(get_channel_layer())
            except errors:
                continue
            finally:
                # redis-py can swallow a cancellation (chatui.live.consumers.ending_when_cancelled).
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise asyncio.CancelledError
            self.back()


async def ping(layer) -> None:
    """One round trip to the layer's server (Redis: PING on its first connection)."""
    connection = getattr(layer, "connection", None)
    if connection is not None:
        await connection(0).ping()


async def drop_idle_connections(layer) -> None:
    """Redis is back: its pool's idle connections are to the Redis that went away, and
    each would fail once when next used ("Connection closed by server"), each failure
    another "unreachable" — a restart seen as a dozen short outages, every one closing
    the sockets. Closed here, they reconnect when next used."""
    connection = getattr(layer, "connection", None)
    if connection is not None:
        await connection(0).connection_pool.disconnect(inuse_connections=False)


HEALTH = LayerHealth()
