"""chatui.writer: the threads the hot write paths run `ingest` on keep their database
connection between writes, and drop it only when a write fails for the server's sake."""

from __future__ import annotations

import threading

import pytest
import pytest_asyncio
from django.db import connection

from chatui.events import EventError
from chatui.models import Conversation
from chatui.writer import _keeping_a_sound_connection, on_writer
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
