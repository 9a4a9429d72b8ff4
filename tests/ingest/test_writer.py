"""chatui.ingest.writer_threads: the threads the hot write paths run `ingest` on keep their database
connection between writes, and drop it only when a write fails for the server's sake."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest
import pytest_asyncio
from asgiref.sync import async_to_sync
from django.db import connection

from chatui.ingest.values import EventError
from chatui.ingest.writer_threads import (
    _keeping_a_sound_connection,
    calling_loop,
    on_writer,
    writer_count,
)
from chatui.models import Conversation
from tests.support.writer import close_writer_connections

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest_asyncio.fixture(autouse=True)
async def close_the_writers_connection():
    """The writer thread outlives the test: its connection must not hold the test
    database open (PostgreSQL refuses to drop a database someone is connected to)."""
    yield
    await close_writer_connections()


def where() -> tuple[str, int]:
    Conversation.objects.exists()  # uses (and opens, if need be) the connection
    return threading.current_thread().name, id(connection.connection)


def refuse() -> None:
    raise EventError("refused input")


def crash() -> None:
    raise RuntimeError("the database went away")


async def test_p2_writes_run_on_writer_threads_that_keep_their_connections():
    seen = [await on_writer(where) for _ in range(12)]
    assert all(name.startswith("chatui-writer") for name, _ in seen)
    connections_of: dict[str, set[int]] = {}
    for name, connection_id in seen:
        connections_of.setdefault(name, set()).add(connection_id)
    # One thread on SQLite, a few on PostgreSQL: each keeps the one connection it opened.
    assert all(len(ids) == 1 for ids in connections_of.values()), connections_of


async def test_p2_refused_input_keeps_the_connection():
    def refused_between_two_writes() -> tuple[tuple[str, int], tuple[str, int]]:
        before = where()
        with pytest.raises(EventError):
            _keeping_a_sound_connection(refuse)
        return before, where()

    before, after = await on_writer(refused_between_two_writes)
    assert before == after


async def test_p2_a_failed_write_closes_the_connection_so_the_next_one_reconnects():
    def failed_after_a_write() -> object:
        where()
        with pytest.raises(RuntimeError):
            _keeping_a_sound_connection(crash)
        return connection.connection

    assert await on_writer(failed_after_a_write) is None  # closed, not yet reopened


# -- the hop itself: what asgiref's sync_to_async gave, at less of the loop's time ------

_seen_by_writer: contextvars.ContextVar[str] = contextvars.ContextVar("seen_by_writer")


async def test_p2_a_writers_failure_reaches_the_caller_as_raised():
    with pytest.raises(EventError, match="refused input"):
        await on_writer(refuse)


async def test_p2_the_calling_loop_is_known_on_the_writer_during_the_call_only():
    loop = asyncio.get_running_loop()
    seen = await on_writer(calling_loop)
    assert seen.loop is loop
    assert await on_writer(calling_loop) is seen  # one per loop: an Outbox keyed by it stays one
    assert seen.create_task == loop.create_task  # the loop's own
    assert await on_writer(lambda: threading.current_thread().name.startswith("chatui-writer"))
    assert calling_loop() is None  # not on the loop's own thread


async def test_p2_async_code_called_from_a_writer_runs_on_the_calling_loop():
    """As under asgiref's `sync_to_async`: `async_to_sync` on the writer thread hands
    its coroutine to the loop the call came from (not to a loop of its own)."""

    async def running_loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    assert await on_writer(async_to_sync(running_loop)) is asyncio.get_running_loop()


async def test_p2_each_write_runs_in_a_copy_of_its_callers_context():
    def read_then_set() -> str:
        seen = _seen_by_writer.get("unset")
        _seen_by_writer.set("set by the writer")
        return seen

    _seen_by_writer.set("the caller's")
    assert await on_writer(read_then_set) == "the caller's"
    assert await on_writer(read_then_set) == "the caller's"  # not the last call's


async def test_p2_a_write_cancelled_before_it_started_never_runs():
    """Shutdown cancels the requests in progress: a write still queued behind the
    writers' current calls is dropped, not applied after its caller has gone."""
    release = threading.Event()
    busy = [asyncio.ensure_future(on_writer(release.wait, 10)) for _ in range(writer_count())]
    ran: list[str] = []
    queued = asyncio.ensure_future(on_writer(ran.append, "queued"))
    await asyncio.sleep(0.05)
    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queued
    release.set()
    assert await asyncio.gather(*busy) == [True] * writer_count()
    await on_writer(ran.append, "after")  # the writer has run everything queued before it
    assert ran == ["after"]


async def test_p2_what_a_write_hands_the_loop_arrives_with_its_answer_in_one_wakeup():
    """The on-commit frames (`calling_loop().call_soon_threadsafe`, as chatui.live.broadcast's
    Outbox hands them over) are held until the call returns, then run on the loop, in
    order, before the caller gets the answer: one wakeup of the loop, not one each."""
    order: list[str] = []
    returned = threading.Event()

    def on_the_loop(name: str) -> None:
        assert threading.current_thread() is threading.main_thread()
        order.append(f"{name}, call returned: {returned.is_set()}")

    def commit_then_more_work() -> str:
        calling_loop().call_soon_threadsafe(on_the_loop, "frame 1")
        calling_loop().call_soon_threadsafe(on_the_loop, "frame 2")
        time.sleep(0.05)  # the loop is free meanwhile: it would have run them by now
        returned.set()
        return "answer"

    order.append(await on_writer(commit_then_more_work))
    assert order == ["frame 1, call returned: True", "frame 2, call returned: True", "answer"]


async def test_p2_a_failing_handed_callback_is_reported_and_the_answer_still_arrives():
    loop = asyncio.get_running_loop()
    reported: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:

        def hand_a_broken_callback() -> str:
            calling_loop().call_soon_threadsafe(crash)
            return "answer"

        assert await on_writer(hand_a_broken_callback) == "answer"
    finally:
        loop.set_exception_handler(None)
    assert [type(context["exception"]) for context in reported] == [RuntimeError]
