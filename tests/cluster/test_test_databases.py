"""The test process's own PostgreSQL databases (tests/support/live.py).

The fault bench runs inside the test process (tests/cluster/test_cluster_faults.py) and
drops the database it made when it ends. It once dropped every database the process had
made — the session's live server's among them — and the 26 end-to-end tests after it
failed with 503s: "database chatui_live_… does not exist".
"""

from __future__ import annotations

import os

import psycopg

from tests.support.live import (
    CREATED_DATABASES,
    create_postgres_database,
    drop_postgres_database,
)


def _exists(url: str) -> bool:
    with psycopg.connect(url, connect_timeout=5) as db:
        return db.execute("SELECT 1").fetchone() == (1,)


def _is_gone(url: str) -> bool:
    try:
        _exists(url)
    except psycopg.OperationalError as error:
        return "does not exist" in str(error)
    return False


def test_a_bench_dropping_its_database_leaves_the_live_servers_database_alone():
    kept = create_postgres_database(os.environ["DATABASE_URL"])
    benches = create_postgres_database(os.environ["DATABASE_URL"])
    try:
        drop_postgres_database(benches)
        assert _is_gone(benches)
        assert benches not in CREATED_DATABASES
        assert _exists(kept), "another database of this process was dropped too"
        assert kept in CREATED_DATABASES  # still dropped at the session's end
    finally:
        drop_postgres_database(kept)
