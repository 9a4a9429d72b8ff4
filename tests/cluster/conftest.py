"""Cluster mode (docs/SCALING.md): several ASGI processes, one PostgreSQL, one Redis.

These tests run in `make test-cluster` only (DATABASE_URL on PostgreSQL and
REDIS_URL set; tests/conftest.py deselects them otherwise).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.live import LiveServer


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


# -- run workers -----------------------------------------------------------------------
