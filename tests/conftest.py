from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from chatui.ingest.service import ingest
from chatui.models import ApiToken, Conversation
from tests.support.api_client import ApiClient
from tests.support.leftover_sockets import leftover_sockets_ended, track_communicators
from tests.support.live import cluster_mode, drop_created_databases

__all__ = ["leftover_sockets_ended"]  # a fixture: see pytest_collection_modifyitems

track_communicators()

CLUSTER_TESTS = Path(__file__).parent / "cluster"


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("alice", password="alice-password-1")


@pytest.fixture
def other_user(db):
    return get_user_model().objects.create_user("mallory", password="mallory-password-1")


@pytest.fixture
def conversation(user) -> Conversation:
    return Conversation.objects.create(owner=user, title="Test")


@pytest.fixture
def api(user) -> ApiClient:
    _, raw = ApiToken.issue(user)
    return ApiClient(raw)


@pytest.fixture
def feed(conversation):
    """Ingest events into the test conversation."""

    def feed_events(*events: dict) -> None:
        ingest(conversation, list(events))

    return feed_events


@pytest.fixture(scope="session")
def chatui_server(tmp_path_factory):
    """A real daphne server with its own database, shared by the session's e2e tests."""
    from tests.support.live import LiveServer

    with LiveServer(tmp_path_factory.mktemp("live")).serving() as server:
        yield server


def close_on_every_thread_of(pool: ThreadPoolExecutor, threads: int, work) -> None:
    """Run `work` once on each of `pool`'s `threads` threads: each task waits at a
    barrier until all have started, so no thread can take two."""
    barrier = threading.Barrier(threads)

    def once() -> None:
        barrier.wait(timeout=30)
        work()

    for done in [pool.submit(once) for _ in range(threads)]:
        done.result(timeout=30)


@pytest.fixture(scope="session", autouse=True)
def writer_connections_closed_at_the_end(django_db_setup, django_db_blocker):
    """The writer threads (chatui.ingest.writer_threads), the token lookup thread
    (chatui.web.tokens) and others outlive every test and keep their database connections; before
    the test database is dropped at the session's end they close them (PostgreSQL refuses to drop a
    database someone is connected to). On a thread of its own: a browser test's
    Playwright may still hold this thread's event loop."""
    yield
    from asgiref.sync import SyncToAsync
    from django.conf import settings
    from django.db import connection, connections

    from chatui.live import handshakes
    from chatui.web import tokens
    from tests.support.writer import close_writer_connections

    with django_db_blocker.unblock():
        closing = threading.Thread(target=lambda: asyncio.run(close_writer_connections()))
        closing.start()
        closing.join(timeout=30)
        tokens._token_thread.submit(lambda: connection.close()).result(timeout=30)
        # asgiref's one thread for thread-sensitive sync code: async tests' plain
        # `sync_to_async(ingest)` calls leave its connection open (only Channels'
        # database_sync_to_async closes them around each call).
        SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=30)
        # The handshake threads (chatui.live.handshakes), as left by async tests.
        close_on_every_thread_of(
            handshakes._pool(), settings.CHATUI_HANDSHAKE_THREADS, connections.close_all
        )
        # In cluster mode a connection's close returns it to psycopg's pool, still
        # connected: close the pool too, or PostgreSQL refuses to drop the database
        # ("test_chatui is being accessed by other users").
        if connection.vendor == "postgresql" and connection.settings_dict["OPTIONS"].get("pool"):
            connection.close_pool()


@pytest.fixture(autouse=True)
def no_kept_tool_batches():
    """Live frames keep each conversation's latest tool batch per process
    (chatui.live.batch_cache): a test starts without any another test's frames kept."""
    from chatui.live import batch_cache

    batch_cache.BATCHES.clear()
    yield
    batch_cache.BATCHES.clear()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Full-strength hashing costs ~0.3 s per user; tests do not need it."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "sqlite_only(reason): holds only on SQLite; deselected in cluster mode "
        "(make test-cluster), the reason says why",
    )
    config.addinivalue_line(
        "markers",
        "cluster: needs PostgreSQL and Redis (tests/cluster/); collected in make test-cluster only",
    )


def pytest_ignore_collect(collection_path, config):
    """tests/cluster/ needs PostgreSQL, Redis and their client libraries, which a plain
    `make test` does not install: outside cluster mode it is not even imported."""
    if cluster_mode():
        return None
    return True if CLUSTER_TESTS in (collection_path, *collection_path.parents) else None


def pytest_collection_modifyitems(config, items):
    """Browser tests last: they are the slowest, and Playwright's sync API keeps an
    event loop running in the main thread, which asyncio.run() elsewhere refuses.
    Every asyncio test ends the sockets it left open (tests/support/leftover_sockets.py).

    `make test-cluster` runs against PostgreSQL + Redis and leaves out what can only
    hold on SQLite; its own tests (tests/cluster/) are marked `cluster`."""
    items.sort(key=lambda item: "tests/browser/" in str(item.path))
    for item in items:
        if item.get_closest_marker("asyncio") is not None:
            # Its sockets end inside its event loop (tests/support/leftover_sockets.py).
            item.fixturenames.append("leftover_sockets_ended")
        if CLUSTER_TESTS in item.path.parents:
            item.add_marker(pytest.mark.cluster)
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None and not marker.kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid}: sqlite_only needs reason=…")
    if cluster_mode():
        deselected = [item for item in items if item.get_closest_marker("sqlite_only")]
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("sqlite_only")]


def pytest_sessionfinish(session, exitstatus):
    drop_created_databases()
