"""The writer threads: where the hot write paths run `ingest` (SPEC §8 P2, §2.2).

A few long-lived threads that keep their database connections. Django would give each
request's sync code a thread of its own and, with CONN_MAX_AGE=0, a connection opened
and closed around it; Channels' `database_sync_to_async` closes the connection around
each call too. The events POST (chatui.ingest_route) and the ingest channel
(chatui.ingest_socket) write here instead: no thread and no connection per write.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import ParamSpec, TypeVar

from asgiref.sync import SyncToAsync
from django.db import connection

from .events import EventError

P = ParamSpec("P")
R = TypeVar("R")

# One thread on SQLite, where writers of a process take turns anyway (chatui.ingest's
# `_turn`); a few on PostgreSQL, where writers of different conversations run side by
# side and each thread mostly waits on the network, not the GIL.
SQLITE_WRITERS = 1
POSTGRES_WRITERS = 4


def writer_count() -> int:
    return SQLITE_WRITERS if connection.vendor == "sqlite" else POSTGRES_WRITERS


@cache
def writers() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=writer_count(), thread_name_prefix="chatui-writer")


# The event loop that handed this writer thread its current call.
_calling = threading.local()


async def on_writer(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`func(*args, **kwargs)` on a writer thread. Through asgiref, so what it calls
    back into async code runs on this loop; the on-commit broadcast hands its frames
    to this loop without waiting for them (`calling_loop`, chatui.broadcast)."""
    return await _on_writers()(asyncio.get_running_loop(), func, *args, **kwargs)


@cache
def _on_writers() -> SyncToAsync:
    # Made once, not per request on the event loop (its checks and
    # functools.update_wrapper: ~4 µs); a SyncToAsync serves concurrent calls.
    return SyncToAsync(_called_from, thread_sensitive=False, executor=writers())


def calling_loop() -> asyncio.AbstractEventLoop | None:
    """On a writer thread, the event loop its current call came from; else None."""
    return getattr(_calling, "loop", None)


def _called_from(
    loop: asyncio.AbstractEventLoop, func: Callable[P, R], *args: P.args, **kwargs: P.kwargs
) -> R:
    _calling.loop = loop
    try:
        return _keeping_a_sound_connection(func, *args, **kwargs)
    finally:
        _calling.loop = None


def _keeping_a_sound_connection(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    try:
        return func(*args, **kwargs)
    except EventError:
        raise  # the input was refused; the connection is fine
    except Exception:
        connection.close()  # possibly broken: the next write reconnects
        raise
