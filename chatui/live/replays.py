"""Replays shared by the sockets that need the same one at once
(docs/SCALING.md#cluster-under-fire).

After a fault the pages of a conversation reconnect (or catch up in place) together,
most of them at the same seq; each reading and rendering what it missed, on the one
database thread of its process, kept the others waiting past daphne's handshake
timeout. One read serves them all, as long as it was asked for after each one's join.
"""

from __future__ import annotations

import asyncio
import contextlib

from . import frames
from .handshakes import on_handshake_thread

#: Replays being read, by (conversation, after): (loop time the read was asked for, it).
#: After a fault the pages of a conversation reconnect (or catch up) at once, most at
#: the same seq: one database read and render serves them all.
_replays: dict[tuple[str, int], tuple[float, asyncio.Future]] = {}
#: How long a replay stays shareable.
REPLAY_SHARED_SECONDS = 5.0


class _Abandoned(Exception):
    """The socket reading a shared replay ended before it had read it."""


async def shared_replay(conversation_id: str, after: int, since: float) -> frames.Frame | None:
    """What a page that has shown `after` missed, read after loop time `since` (when the
    socket's group was joined or subscribed again: anything committed later comes as a
    frame). A read asked for since then, by another socket, is shared; else this socket
    reads it in its own task (no extra hop before the read) and shares it."""
    loop = asyncio.get_running_loop()
    key = (conversation_id, after)
    entry = _replays.get(key)
    if entry is not None and entry[0] > since:
        with contextlib.suppress(_Abandoned):
            return await asyncio.shield(entry[1])
    shared: asyncio.Future = loop.create_future()
    entry = _replays[key] = (loop.time(), shared)
    loop.call_later(REPLAY_SHARED_SECONDS, _forget_replay, key, entry)
    try:
        replay = await on_handshake_thread(frames.replay_frame)(conversation_id, after)
    except BaseException:
        _forget_replay(key, entry)
        shared.set_exception(_Abandoned())
        shared.exception()  # retrieved: its waiters read for themselves
        raise
    shared.set_result(replay)
    return replay


def _forget_replay(key: tuple[str, int], entry: tuple[float, asyncio.Future]) -> None:
    if _replays.get(key) is entry:
        del _replays[key]
