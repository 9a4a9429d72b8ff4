"""What the cluster tests share: reading a viewer's frames, waiting with a bound, a run worker
process, and looking into PostgreSQL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
from psycopg import sql
from websockets.sync.client import ClientConnection, connect

from tests.support.live import ROOT, LiveServer

FRAME_MARKER = re.compile(r"<!--seq (\d+) (\d+)-->")


PATIENCE = 60.0  # seconds: a bound on waiting for what must happen, never a speed claim


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


#: Short bounds so a lost worker shows within seconds; a slow demo so a run lasts.
RUN_WORKER_ENV = {
    "CHATUI_RUN_WORKERS": "1",
    "CHATUI_RUN_HEARTBEAT_SECONDS": "0.5",
    "CHATUI_RUN_LOST_SECONDS": "4",
    "CHATUI_DEMO_DELAY": "0.6",
}


@dataclass
class RunWorkerProcess:
    """`manage.py run_worker` in a subprocess of its own session."""

    env: dict[str, str]
    log: Path
    process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "run_worker"],
            cwd=ROOT,
            env=self.env,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(lambda: "run worker listening" in self.log.read_text(), "the run worker")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(timeout=PATIENCE)
        self.process = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


def run_row(database_url: str, conversation_id: str) -> dict | None:
    """The conversation's latest run, as the database has it."""
    with psycopg.connect(database_url, autocommit=True) as db:
        row = db.execute(
            "SELECT run_id, status, error_message, worker FROM chatui_run"
            " WHERE conversation_id = %s ORDER BY started_seq DESC LIMIT 1",
            [conversation_id],
        ).fetchone()
    if row is None:
        return None
    return dict(zip(("run_id", "status", "error_message", "worker"), row, strict=True))


def last_seq(database_url: str, conversation_id: str) -> int:
    with psycopg.connect(database_url, autocommit=True) as db:
        (seq,) = db.execute(
            "SELECT coalesce(max(seq), 0) FROM chatui_event WHERE conversation_id = %s",
            [conversation_id],
        ).fetchone()
    return seq


@contextmanager
def logged_in(server: LiveServer) -> Iterator[httpx.Client]:
    """A browser-like client of `server`: session and CSRF cookies, form posts."""
    with httpx.Client(base_url=server.url, timeout=PATIENCE) as client:
        cookie = server.session_cookie()
        client.cookies.set("sessionid", cookie.split("=", 1)[1])
        client.get("/")  # sets the CSRF cookie
        yield client


def post_form(client: httpx.Client, path: str, **data: str) -> httpx.Response:
    token = client.cookies.get("csrftoken")
    return client.post(path, data={**data, "csrfmiddlewaretoken": token})
