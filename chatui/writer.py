"""The writer threads: where the hot write paths run `ingest` (SPEC §8 P2, §2.2).

A few long-lived threads that keep their database connections. Django would give each
request's sync code a thread of its own and, with CONN_MAX_AGE=0, a connection opened
and closed around it; Channels' `database_sync_to_async` closes the connection around
each call too. The events POST (chatui.ingest_route) and the ingest channel
(chatui.ingest_socket) write here instead: no thread and no connection per write.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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


@functools.cache
def writers() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=writer_count(), thread_name_prefix="chatui-writer")


# The event loop that handed this writer thread its current call.
_calling = threading.local()


async def on_writer(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`func(*args, **kwargs)` on a writer thread, in a copy of the caller's context,
    as asgiref's `sync_to_async` runs it: what it calls back into async code
    (`async_to_sync`) runs on this loop; the on-commit broadcast hands its frames to
    this loop without waiting for them (`calling_loop`, chatui.broadcast).

    Not through asgiref's `SyncToAsync` itself: its hop cost the event loop ~40 µs a
    call (a shielded executor future, chained to a concurrent one, settled over three
    turns of the loop), this one ~22 µs: the thread settles the awaited future in one
    `call_soon_threadsafe`. A caller cancelled before its call started (shutdown)
    keeps it from running, as there."""
    loop = asyncio.get_running_loop()
    settled = loop.create_future()
    call = functools.partial(func, *args, **kwargs)
    job = writers().submit(_called_from, loop, settled, contextvars.copy_context(), call)
    try:
        return await settled
    except asyncio.CancelledError:
        job.cancel()  # a call not yet started never runs; one running finishes unheard
        raise


def calling_loop() -> asyncio.AbstractEventLoop | None:
    """On a writer thread, the event loop its current call came from; else None."""
    return getattr(_calling, "loop", None)


def _called_from(
    loop: asyncio.AbstractEventLoop,
    settled: asyncio.Future,
    context: contextvars.Context,
    call: Callable[[], R],
) -> None:
    _calling.loop = loop
    # What asgiref's thread handler records: `async_to_sync` on this thread then runs
    # its coroutine on the calling loop, not on a new loop of its own.
    SyncToAsync.threadlocal.main_event_loop = loop
    SyncToAsync.threadlocal.main_event_loop_pid = os.getpid()
    try:
        outcome = (context.run(_keeping_a_sound_connection, call), None)
    except BaseException as problem:  # handed to the caller, as a concurrent future does
        outcome = (None, problem)
    finally:
        _calling.loop = None
        SyncToAsync.threadlocal.main_event_loop = None
    with contextlib.suppress(RuntimeError):  # the loop has closed: the server stopped
        loop.call_soon_threadsafe(_settle, settled, *outcome)


def _settle(settled: asyncio.Future, result: object, problem: BaseException | None) -> None:
    """On the loop: the caller's answer, unless the caller was cancelled meanwhile."""
    if settled.done():
        return
    if problem is None:
        settled.set_result(result)
    else:
        settled.set_exception(problem)


def _keeping_a_sound_connection(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    try:
        return func(*args, **kwargs)
    except EventError:
        raise  # the input was refused; the connection is fine
    except Exception:
        connection.close()  # possibly broken: the next write reconnects
        raise
