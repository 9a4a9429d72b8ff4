"""A real chatui server for end-to-end tests: daphne in a subprocess, own database.

pytest-django's live_server has no WebSockets, so browser and client tests start
the real ASGI server. The server gets its own database (migrated here) and a user
with an API token; tests create their data through the API, as a runtime would.

The database is a SQLite file, or — when the tests run against PostgreSQL
(`make test-cluster`: DATABASE_URL and REDIS_URL set) — a fresh database on that
server, and the server uses the tests' Redis. Several servers may share one
database (`database_url=`): that is cluster mode, N processes behind one truth.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

ROOT = Path(__file__).resolve().parents[2]
USERNAME = "e2e"
PASSWORD = "e2e-password-1"
# daphne cancels its applications on SIGTERM and exits; what it then waits for (threads
# still running work) should end well within this. A hang past it is reported with stacks.
STOP_PATIENCE = 30


def is_postgres(url: str) -> bool:
    return url.startswith(("postgres://", "postgresql://"))


def cluster_mode() -> bool:
    """Do these tests run against PostgreSQL and Redis (`make test-cluster`)?"""
    return is_postgres(os.environ.get("DATABASE_URL", "")) and bool(os.environ.get("REDIS_URL"))


#: Databases created by `create_postgres_database` in this process, dropped at exit.
CREATED_DATABASES: list[str] = []


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def create_postgres_database(server_url: str, template: str = "") -> str:
    """A new database on the PostgreSQL server `server_url` points at; its URL. Empty,
    or a copy of the database `template` (a URL) if given: nobody may be connected to
    that one (PostgreSQL waits a few seconds for sessions that are ending)."""
    import psycopg
    from psycopg import sql

    name = f"chatui_live_{uuid.uuid4().hex[:12]}"
    create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        source = urlsplit(template).path.lstrip("/")
        create += sql.SQL(" TEMPLATE {}").format(sql.Identifier(source))
    with psycopg.connect(_with_database(server_url, "postgres"), autocommit=True) as db:
        db.execute(create)
    CREATED_DATABASES.append(_with_database(server_url, name))
    return CREATED_DATABASES[-1]


def drop_postgres_database(url: str) -> None:
    """Drop one database made by `create_postgres_database`. Only that one: the fault
    bench runs inside the test process (tests/cluster/test_cluster_faults.py), and
    dropping every database this process created took the session's live server's with
    it — 26 tests after it failed with 503s (stop 35's CI run)."""
    import psycopg
    from psycopg import sql

    if url in CREATED_DATABASES:
        CREATED_DATABASES.remove(url)
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(_with_database(url, "postgres"), autocommit=True) as db:
        # FORCE: a server the test left running must not keep its database alive.
        db.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def drop_created_databases() -> None:
    """At the test session's end: every database still left."""
    while CREATED_DATABASES:  # (psycopg is installed in cluster mode only)
        drop_postgres_database(CREATED_DATABASES[-1])


def copy_sqlite_database(source: Path, target: Path) -> None:
    """`source` into a new file `target`, through SQLite's backup API (a consistent
    copy whatever its journal holds)."""
    with sqlite3.connect(source) as reading, sqlite3.connect(target) as writing:
        reading.backup(writing)
    reading.close()
    writing.close()


#: This process's template database and its e2e token (`_template`).
_TEMPLATE: tuple[str, str] | None = None


def _template() -> tuple[str, str]:
    """A database migrated once in this process, with the e2e user and its API token:
    its URL (PostgreSQL, in cluster mode) or SQLite file, and the token. Each server's
    database is a copy of it, so every server starts from the same fresh state as
    before, with the same token. Migrating and adding the user are three manage.py
    runs, 10–40 s a server on the loaded 2-core machine; a copy takes milliseconds.
    A PostgreSQL template is dropped with this process's other databases
    (`drop_created_databases`), a SQLite one deleted when the process ends."""
    global _TEMPLATE
    if _TEMPLATE is None:
        folder = Path(tempfile.mkdtemp(prefix="chatui-live-template-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        maker = LiveServer(folder)
        maker.migrate_and_add_user()
        _TEMPLATE = (maker.database_url or str(folder / "live.sqlite3"), maker.token)
    return _TEMPLATE


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveServer:
    data_dir: Path
    port: int = field(default_factory=free_port)
    extra_env: dict[str, str] = field(default_factory=dict)
    #: Empty: a SQLite file in `data_dir`, or in cluster mode a new PostgreSQL
    #: database (made by `prepare`). Another server's URL: share its database.
    database_url: str = ""
    token: str = ""
    process: subprocess.Popen | None = None
    #: The ASGI application daphne serves (the benchmarks serve an instrumented one).
    application = "config.asgi:application"
    #: A command daphne runs under (bench/instructions.py: valgrind), and how long it
    #: may then take to start.
    launcher: tuple[str, ...] = ()
    start_timeout: float = 30

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "DATABASE_URL": self.database_url or f"sqlite:///{self.data_dir / 'live.sqlite3'}",
            "CHATUI_DATA_DIR": str(self.data_dir),
            "DJANGO_SECRET_KEY": "e2e-tests-only",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "PYTHONUNBUFFERED": "1",
            "CHATUI_DEMO_DELAY": "0.05",  # visible streaming, quick tests
            # The runtime client of this checkout, as the tests import it (pyproject's
            # pythonpath): the server uses its chatui_client.proof.
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(ROOT / "clients" / "python"), os.environ.get("PYTHONPATH")])
            ),
            **self.extra_env,
        }

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def prepare(self) -> None:
        """A migrated database with the e2e user and its API token. A server with a
        database of its own gets a copy of this process's template (`_template`);
        one given a database (`database_url=`) or finding its SQLite file already there
        migrates it and adds the user itself, as every server once did."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        sqlite_file = self.data_dir / "live.sqlite3"
        if not self.database_url and (cluster_mode() or not sqlite_file.exists()):
            template, self.token = _template()
            if cluster_mode():
                self.database_url = create_postgres_database(
                    os.environ["DATABASE_URL"], template=template
                )
            else:
                copy_sqlite_database(Path(template), sqlite_file)
            return
        self.migrate_and_add_user()

    def migrate_and_add_user(self) -> None:
        if not self.database_url and cluster_mode():
            self.database_url = create_postgres_database(os.environ["DATABASE_URL"])
        self.manage("migrate", "--noinput", "-v0")
        self.manage(
            "shell",
            "-c",
            "from django.contrib.auth.models import User;"
            f"User.objects.filter(username={USERNAME!r}).exists() or "
            f"User.objects.create_user({USERNAME!r}, password={PASSWORD!r})",
        )
        self.token = self.manage("create_api_token", USERNAME).strip().splitlines()[-1]

    def start(self) -> None:
        log = open(self.data_dir / "daphne.log", "ab")  # noqa: SIM115 — lives with the process
        self.process = subprocess.Popen(
            [
                *self.launcher,
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                self.application,
            ],
            cwd=ROOT,
            # A hang at shutdown dumps every thread's stack on SIGABRT (see `stop`).
            env={**self.env, "PYTHONFAULTHANDLER": "1"},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daphne exited: {self.log_tail()}")
            try:
                httpx.get(self.url + "/accounts/login/", timeout=self.start_timeout / 30)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"daphne did not start: {self.log_tail()}")

    @contextmanager
    def serving(self) -> Iterator[LiveServer]:
        """Prepared, started, and stopped at the end: what a fixture's server needs."""
        self.prepare()
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=STOP_PATIENCE)
            except subprocess.TimeoutExpired:
                raise RuntimeError(self._hung_report()) from None
        self.process = None

    def _hung_report(self) -> str:
        """daphne outlived SIGTERM: every thread's stack (faulthandler, on SIGABRT)
        into its log, then SIGKILL, so the failure says where it hung."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGABRT)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)
        return f"daphne did not stop within {STOP_PATIENCE} s of SIGTERM:\n{self.log_tail(120)}"

    def kill(self) -> None:
        """Stop at once, as a crash would: no graceful close for anyone."""
        self.stop(signal.SIGKILL)

    def restart(self) -> None:
        self.stop()
        self.start()

    def memory_kb(self) -> dict[str, int]:
        """daphne's resident memory now (VmRSS) and at its peak so far (VmHWM), in KiB."""
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return {
            name: int(value.split()[0])
            for name, value in (line.split(":", 1) for line in status.splitlines())
            if name in ("VmRSS", "VmHWM")
        }

    def log_tail(self, lines: int = 40) -> str:
        path = self.data_dir / "daphne.log"
        return (
            "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
            if (path.exists())
            else ""
        )

    def add_user(self, username: str, password: str) -> str:
        """Another user, with an API token; returns the token. One manage.py run (each
        costs a Django start-up, seconds on a loaded machine): the shell creates the
        user, then runs create_api_token, which prints the token last."""
        return (
            self.manage(
                "shell",
                "-c",
                "from django.contrib.auth.models import User;"
                "from django.core.management import call_command;"
                f"User.objects.create_user({username!r}, password={password!r});"
                f"call_command('create_api_token', {username!r})",
            )
            .strip()
            .splitlines()[-1]
        )

    def session_cookie(self, username: str = USERNAME, password: str = PASSWORD) -> str:
        """Log in through the real login form; returns 'sessionid=…'."""
        with httpx.Client(base_url=self.url, timeout=30) as client:
            page = client.get("/accounts/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
            assert token, "no CSRF token on the login page"
            done = client.post(
                "/accounts/login/",
                data={
                    "username": username,
                    "password": password,
                    "csrfmiddlewaretoken": token.group(1),
                },
            )
            assert done.status_code == 302, f"login failed: {done.status_code}"
            return f"sessionid={client.cookies['sessionid']}"

    # -- API helpers ------------------------------------------------------------

    def api(self, token: str | None = None) -> httpx.Client:
        """An API client with `token` (the e2e user's by default)."""
        return httpx.Client(
            base_url=self.url + "/api/v1",
            headers={"Authorization": f"Bearer {token or self.token}"},
            timeout=30,
        )

    def new_conversation(self, title: str = "") -> str:
        with self.api() as client:
            response = client.post("/conversations", json={"title": title})
            response.raise_for_status()
            return response.json()["id"]

    def post_events(self, conversation_id: str, events) -> dict:
        with self.api() as client:
            response = client.post(f"/conversations/{conversation_id}/events", json=events)
            response.raise_for_status()
            return response.json()
