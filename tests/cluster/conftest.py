"""Cluster mode (SPEC §12.1): several ASGI processes, one PostgreSQL, one Redis.

These tests run in `make test-cluster` only (DATABASE_URL on PostgreSQL and
REDIS_URL set; tests/conftest.py deselects them otherwise).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql
from websockets.sync.client import ClientConnection, connect

from tests.support.live import LiveServer

FRAME_MARKER = re.compile(r"<!--seq (\d+) (\d+)-->")
PATIENCE = 60.0  # seconds: a bound on waiting for what must happen, never a speed claim


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Iterator[tuple[LiveServer, LiveServer]]:
    """Two daphne processes sharing one PostgreSQL database and Redis."""
    first = LiveServer(tmp_path_factory.mktemp("process-a"))
    first.prepare()
    second = LiveServer(tmp_path_factory.mktemp("process-b"), database_url=first.database_url)
    second.token = first.token
    first.start()
    second.start()
    yield first, second
    first.stop()
    second.stop()


@dataclass(frozen=True)
class Frame:
    first_seq: int
    last_seq: int
    html: str


@contextmanager
def viewer(server: LiveServer, conversation_id: str, after: int = 0) -> Iterator[ClientConnection]:
    """A logged-in page's socket on `server`, as the htmx ws extension opens it."""
    url = f"ws://127.0.0.1:{server.port}/ws/conversations/{conversation_id}/?after={after}"
    with connect(
        url,
        origin=server.url,
        additional_headers={"Cookie": server.session_cookie()},
        proxy=None,
        max_size=None,
    ) as socket:
        yield socket


def read_frame(socket: ClientConnection) -> Frame:
    html = socket.recv(timeout=PATIENCE)
    found = FRAME_MARKER.match(html)
    assert found, f"a frame starts with its seq marker: {html[:120]!r}"
    return Frame(int(found[1]), int(found[2]), html)


def read_until(socket: ClientConnection, last_seq: int) -> list[Frame]:
    """Frames until one reaches `last_seq`."""
    frames = [read_frame(socket)]
    while frames[-1].last_seq < last_seq:
        frames.append(read_frame(socket))
    return frames


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting for {what} after {PATIENCE:.0f} s")
        time.sleep(0.05)


def backends_waiting_for_a_lock(database_url: str) -> int:
    """How many sessions of that database wait on a lock (a row lock, here)."""
    with psycopg.connect(database_url, autocommit=True) as db:
        (count,) = db.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return count


@contextmanager
def row_locked(database_url: str, table: str, pk) -> Iterator[psycopg.Connection]:
    """Hold a row's lock (SELECT … FOR UPDATE) in a transaction of our own."""
    with psycopg.connect(database_url) as db:
        db.execute(
            sql.SQL("SELECT 1 FROM {} WHERE id = %s FOR UPDATE").format(sql.Identifier(table)),
            [pk],
        )
        yield db
