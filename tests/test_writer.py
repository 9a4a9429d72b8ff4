"""chatui.writer: the threads the hot write paths run `ingest` on keep their database
connection between writes, and drop it only when a write fails for the server's sake."""

from __future__ import annotations

import threading

import pytest
import pytest_asyncio
from django.db import connection

from chatui.events import EventError
from chatui.models import Conversation
from chatui.writer import on_writer
from tests.support.writer import close_connection

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest_asyncio.fixture(autouse=True)
async def close_the_writers_connection():
    """The writer thread outlives the test: its connection must not hold the test
    database open (PostgreSQL refuses to drop a database someone is connected to)."""
    yield
    await on_writer(close_connection)


def where() -> tuple[str, int]:
    Conversation.objects.exists()  # uses (and opens, if need be) the connection
    return threading.current_thread().name, id(connection.connection)


def refuse() -> None:
    raise EventError("refused input")


def crash() -> None:
    raise RuntimeError("the database went away")


async def test_p2_writes_share_one_thread_and_its_open_connection():
    first, second = await on_writer(where), await on_writer(where)
    assert first[0].startswith("chatui-writer")
    assert first == second


async def test_p2_refused_input_keeps_the_connection():
    before = await on_writer(where)
    with pytest.raises(EventError):
        await on_writer(refuse)
    assert await on_writer(where) == before


async def test_p2_a_failed_write_closes_the_connection_so_the_next_one_reconnects():
    await on_writer(where)
    with pytest.raises(RuntimeError):
        await on_writer(crash)
    assert await on_writer(lambda: connection.connection) is None  # closed, not yet reopened
