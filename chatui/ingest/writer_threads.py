"""The writer threads: where the hot write paths run `ingest` (docs/PERFORMANCE.md#p2,
docs/events.md#streaming-channel).

A few long-lived threads that keep their database connections. Django would give each
request's sync code a thread of its own and, with CONN_MAX_AGE=0, a connection opened
and closed around it; Channels' `database_sync_to_async` closes the connection around
each call too. The events POST (chatui.server.ingest_route) and the ingest channel
(chatui.web.ingest_socket) write here instead: no thread and no connection per write.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from django.db import connection

from chatui.db.internals import REGISTER_ATEXIT, mark_called_from, run_handle

from .values import EventError

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

# One thread on SQLite, where writers of a process take turns anyway (chatui.ingest.service's
# `_turn`); a few on PostgreSQL, where writers of different conversations run side by
# side and each thread mostly waits on the network, not the GIL.
SQLITE_WRITERS = 1
POSTGRES_WRITERS = 4


def writer_count() -> int:
    return SQLITE_WRITERS if connection.vendor == "sqlite" else POSTGRES_WRITERS


#: CPython's hook for what must finish before its threads are joined at exit
#: (chatui.db.internals). Where there is none the writer threads are daemons, so that
#: exiting never waits on them: a write cut short rolls back, and was not acknowledged
#: (an answer follows its commit).
_JOIN_BEFORE_EXIT = REGISTER_ATEXIT


class WriterThreads:
    """Long-lived threads taking calls from one queue, first in, first out: what a
    `ThreadPoolExecutor` does for `hand_to_writer`, without what it adds per call and
    nobody here uses — a `Future` (a `Condition` made, then taken on both threads),
    a work item, and its idle-thread accounting (a Python `Semaphore`, taken on the
    loop and released on the writer): a few µs of the event loop's time per request.
    The calls (`_called_from`) report their own outcome and never raise. As the
    executor's, the threads are started as needed, and finish what is queued before
    the interpreter exits."""

    def __init__(self, count: int, name: str = "chatui-writer") -> None:
        self.count = count
        self.name = name
        self._calls: queue.SimpleQueue[tuple[Callable[..., object], tuple] | None] = (
            queue.SimpleQueue()
        )
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._shut = False

    def submit(self, func: Callable[..., object], *args: object) -> None:
        if self._shut:
            raise RuntimeError("cannot schedule new calls after shutdown")
        if len(self._threads) < self.count:
            self._start_threads()
        self._calls.put((func, args))

    def _start_threads(self) -> None:
        with self._lock:
            if self._threads or self._shut:
                return
            # Joined before the interpreter exits, as concurrent.futures' own workers are
            # (the same hook: an `atexit` handler would run after the join, too late).
            if _JOIN_BEFORE_EXIT is not None:
                _JOIN_BEFORE_EXIT(self.shutdown)
            for number in range(self.count):
                thread = threading.Thread(
                    target=self._work,
                    name=f"{self.name}_{number}",
                    daemon=_JOIN_BEFORE_EXIT is None,
                )
                thread.start()
                self._threads.append(thread)

    def _work(self) -> None:
        while (item := self._calls.get()) is not None:
            func, args = item
            try:
                func(*args)
            except BaseException:  # a thread lost would leave every later call waiting
                logger.exception("a writer call failed outside its own handling")

    def shutdown(self) -> None:
        """Run what is queued, then stop the threads; later calls are refused."""
        with self._lock:
            if self._shut:
                return
            self._shut = True
            threads = list(self._threads)
        for _ in threads:
            self._calls.put(None)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join()


@functools.cache
def writers() -> WriterThreads:
    return WriterThreads(writer_count())


# The event loop that handed this writer thread its current call.
_calling = threading.local()


async def on_writer(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`func(*args, **kwargs)` on a writer thread, in a copy of the caller's context,
    as asgiref's `sync_to_async` runs it: what it calls back into async code
    (`async_to_sync`) runs on this loop; the on-commit broadcast hands its frames to
    this loop without waiting for them (`calling_loop`, chatui.live.broadcast).

    Not through asgiref's `SyncToAsync` itself: its hop cost the event loop ~40 µs a
    call (a shielded executor future, chained to a concurrent one, settled over three
    turns of the loop), this one ~22 µs: the thread settles the awaited future in one
    `call_soon_threadsafe`. A caller cancelled before its call started (shutdown)
    keeps it from running, as there."""
    settled = asyncio.get_running_loop().create_future()
    hand_to_writer(settled, _settle_future, func, *args, **kwargs)
    return await settled


#: `then(wanted, result, problem)`: a writer call's outcome, on the loop.
Then = Callable[[asyncio.Future, Any, BaseException | None], None]


def hand_to_writer(
    wanted: asyncio.Future, then: Then, func: Callable[P, R], *args: P.args, **kwargs: P.kwargs
) -> None:
    """On an event loop: `func(*args, **kwargs)` on a writer thread, as `on_writer`
    runs it, then `then(wanted, result, problem)` on the loop of `wanted` — for a
    caller that needs no coroutine around the call (chatui.server.ingest_route). Unless
    `wanted` is cancelled before the call starts: then it never runs."""
    calling = _calling_loop_of(wanted.get_loop())
    call = functools.partial(func, *args, **kwargs)
    writers().submit(_called_from, calling, wanted, then, contextvars.copy_context(), call)


def _settle_future(settled: asyncio.Future, result: object, problem: BaseException | None) -> None:
    if settled.done():
        return  # the caller was cancelled meanwhile
    if problem is None:
        settled.set_result(result)
    else:
        settled.set_exception(problem)


def calling_loop() -> asyncio.AbstractEventLoop | None:
    """On a writer thread, the event loop its current call came from (as the calls
    see it: `_CallingLoop`); else None."""
    return getattr(_calling, "loop", None)


class _CallingLoop:
    """The calling event loop as a writer's call sees it: the loop itself, except that
    what the call hands it with `call_soon_threadsafe` (the on-commit broadcast's
    frames, chatui.live.broadcast's `Outbox`) is held and handed over with the call's
    answer, in one wakeup of the loop instead of one each (py-spy over bench/p2: the
    loop's self-pipe wakeups were ~8 % of its time). The callbacks run first, in the
    order given, then the caller gets its answer: the order on the loop is as before;
    a frame goes out when the write's call returns, just after its commit."""

    __slots__ = ("__weakref__", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop

    def call_soon_threadsafe(
        self, callback: Callable[..., object], *args: object, context: Any = None
    ) -> asyncio.Handle:
        held: list[asyncio.Handle] | None = getattr(_calling, "held", None)
        if held is None or _calling.loop is not self:  # not within a call of this loop's
            return self.loop.call_soon_threadsafe(callback, *args, context=context)
        if self.loop.is_closed():
            raise RuntimeError("Event loop is closed")  # as the loop says it
        # Made here, as the loop would make it: the context is this thread's, now.
        handle = asyncio.Handle(callback, args, self.loop, context)
        held.append(handle)
        return handle

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loop, name)


_calling_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _CallingLoop] = (
    weakref.WeakKeyDictionary()
)


def _calling_loop_of(loop: asyncio.AbstractEventLoop) -> _CallingLoop:
    """One per loop, on the loop's thread: what is keyed by it (an `Outbox`) stays one.
    Kept as long as the process (it holds its loop), as chatui.live.broadcast's outboxes
    are: one loop under daphne."""
    calling = _calling_loops.get(loop)
    if calling is None:
        calling = _calling_loops[loop] = _CallingLoop(loop)
    return calling


def _called_from(
    calling: _CallingLoop,
    wanted: asyncio.Future,
    then: Then,
    context: contextvars.Context,
    call: Callable[[], R],
) -> None:
    if wanted.cancelled():  # read across threads: a flag, set before the call or not
        return  # its caller is gone (shutdown): a call not yet started never runs
    loop = calling.loop
    held: list[asyncio.Handle] = []
    _calling.loop, _calling.held = calling, held
    # What asgiref's thread handler records: `async_to_sync` on this thread then runs
    # its coroutine on the calling loop, not on a new loop of its own.
    mark_called_from(loop)
    try:
        outcome = (context.run(_keeping_a_sound_connection, call), None)
    except BaseException as problem:  # handed to the caller, as a concurrent future does
        outcome = (None, problem)
    finally:
        _calling.loop = _calling.held = None
        mark_called_from(None)
    with contextlib.suppress(RuntimeError):  # the loop has closed: the server stopped
        loop.call_soon_threadsafe(_deliver, held, then, wanted, *outcome)


def _deliver(
    held: list[asyncio.Handle],
    then: Then,
    wanted: asyncio.Future,
    result: object,
    problem: BaseException | None,
) -> None:
    """On the loop: what the call handed the loop, then its outcome to `then`."""
    for handle in held:
        if not handle.cancelled():
            run_handle(handle)  # as the loop runs it: a failure is reported, not raised
    then(wanted, result, problem)


def _keeping_a_sound_connection(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    try:
        return func(*args, **kwargs)
    except EventError:
        raise  # the input was refused; the connection is fine
    except Exception:
        connection.close()  # possibly broken: the next write reconnects
        raise
