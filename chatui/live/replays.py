"""Replays shared by the sockets that need the same one at once
(docs/SCALING.md#cluster-under-fire).

After a fault the pages of a conversation reconnect (or catch up in place) together;
each reading and rendering what it missed, side by side, kept the others waiting past
daphne's handshake timeout. One read serves them all, as long as it was asked for after
each one's join: anything committed later comes to that socket as a live frame.

Two kinds are shared. A replay from the same seq serves every page that has shown
that seq. A whole-transcript replay (a page far behind: chatui.live.frames.plan_replay)
serves every page of the conversation, whatever it had shown — after a fault most pages
are far behind, each at a slightly different seq, and each rendered the same window of
the transcript (a profile of the web process the killed one's viewers reconnected to:
three quarters of its handshake threads' time).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Hashable

from . import frames
from .handshakes import on_handshake_thread

#: Replays being read, by (conversation, after): (the loop time from which the replay
#: covers what was committed — when it was asked for, then when its reads began — it).
_replays: dict[Hashable, tuple[float, asyncio.Future]] = {}
#: The newest whole-transcript replay of each conversation, the same way.
_wholes: dict[Hashable, tuple[float, asyncio.Future]] = {}
#: How long a replay stays shareable.
REPLAY_SHARED_SECONDS = 5.0

#: No shared replay served this page: it reads its own.
_NOT_SHARED = object()


class _Abandoned(Exception):
    """The socket reading a shared replay ended before it had read it."""


async def shared_replay(conversation_id: str, after: int, since: float) -> frames.Frame | None:
    """What a page that has shown `after` missed, read after loop time `since` (when the
    socket's group was joined or subscribed again). A read asked for since then, by
    another socket, is shared; else this socket reads it in its own task (no extra hop
    before the read) and shares it."""
    replay = await _shared(conversation_id, after, since, same_seq=True)
    if replay is not _NOT_SHARED:
        return replay
    loop = asyncio.get_running_loop()
    asked_at = loop.time()
    mine: asyncio.Future = loop.create_future()
    _offer(_replays, (conversation_id, after), asked_at, mine)
    try:
        read_at, plan = await on_handshake_thread(_plan)(conversation_id, after)
        # What the read saw was committed before it began, often well after it was
        # asked for (the handshake threads queue after a fault): it serves the pages
        # that joined before that.
        _offer(_replays, (conversation_id, after), read_at, mine)
        if plan is None:
            replay = None
        elif plan.whole:
            # Another page may have asked for the whole transcript while this one read
            # its plan.
            replay = await _shared(conversation_id, after, since, same_seq=False)
            if replay is _NOT_SHARED:
                _offer(_wholes, conversation_id, read_at, mine)
        if replay is _NOT_SHARED:
            replay = await on_handshake_thread(frames.render_replay)(plan)
    except BaseException:
        _withdraw(mine)
        mine.set_exception(_Abandoned())
        mine.exception()  # retrieved: its waiters read for themselves
        raise
    mine.set_result(replay)
    return replay


def _plan(conversation_id: str, after: int) -> tuple[float, frames.ReplayPlan | None]:
    """The plan, and when its reads began on the loop's clock (asyncio's is monotonic)."""
    return time.monotonic(), frames.plan_replay(conversation_id, after)


async def _shared(conversation_id: str, after: int, since: float, *, same_seq: bool):
    """A replay asked for after `since` that serves a page at `after`, or _NOT_SHARED."""
    entries = [_wholes.get(conversation_id)]
    if same_seq:
        entries.insert(0, _replays.get((conversation_id, after)))
    for entry in entries:
        if entry is None or entry[0] <= since:
            continue
        with contextlib.suppress(_Abandoned):
            return frames.for_page(await asyncio.shield(entry[1]), after)
    return _NOT_SHARED


def _offer(table: dict, key: Hashable, covers_from: float, replay: asyncio.Future) -> None:
    entry = table[key] = (covers_from, replay)
    asyncio.get_running_loop().call_later(REPLAY_SHARED_SECONDS, _forget, table, key, entry)


def _forget(table: dict, key: Hashable, entry: tuple[float, asyncio.Future]) -> None:
    if table.get(key) is entry:
        del table[key]


def _withdraw(replay: asyncio.Future) -> None:
    for table in (_replays, _wholes):
        for key, entry in list(table.items()):
            if entry[1] is replay:
                del table[key]
