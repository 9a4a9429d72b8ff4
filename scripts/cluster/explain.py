#!/usr/bin/env python3
"""EXPLAIN chatui's hot queries on PostgreSQL (docs/SCALING.md, "Indexes").

Makes a scratch database on the server DATABASE_URL points at, fills it through
`ingest` (one conversation of ~5,000 events, many small ones, several owners),
then runs the hot paths — ingest, events after a seq, the transcript window, a
batch slice, a reconnect's replay, the list page, the admin's list with each
filter — records every SELECT they issue, and EXPLAINs each one twice: as planned,
and with sequential scans disabled. A sequential scan that survives the second
run means no index can serve the query: that is what the report flags.

    export DATABASE_URL=postgres://chatui@127.0.0.1:25432/chatui  # make run-cluster's
    .venv/bin/python scripts/cluster/explain.py [-v]
"""

from __future__ import annotations

import json
import os
import re
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

BIG_ROUNDS = 240  # × 21 events of the recorded run ≈ 5,000 events
SMALL_CONVERSATIONS = 60
OWNERS = 4
TABLE = re.compile(r"Seq Scan on (chatui_\w+)")
VERBOSE = "-v" in sys.argv  # whole plans and statements


def scratch_database(url: str) -> tuple[str, Callable[[], None]]:
    import psycopg

    name = f"chatui_explain_{uuid.uuid4().hex[:8]}"
    admin = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return urlunsplit(urlsplit(url)._replace(path=f"/{name}")), drop


def renamed(events: list[dict], prefix: str) -> list[dict]:
    """The recorded run again, with every id made unique by `prefix`."""
    ids = {"event_id", "run_id", "message_id", "tool_call_id", "parent_tool_call_id", "id"}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                key: f"{prefix}{item}" if key in ids and isinstance(item, str) else walk(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return [{key: item for key, item in walk(e).items() if key != "timestamp"} for e in events]


def fill() -> tuple[Any, Any]:
    from django.contrib.auth.models import User

    from chatui.ingest.service import ingest
    from chatui.models import Conversation

    run = json.loads((ROOT / "tests/fixtures/recorded_run.json").read_text())
    owners = [User.objects.create_superuser(f"owner{n}", password="x") for n in range(OWNERS)]
    big = Conversation.objects.create(owner=owners[0], title="big")
    for n in range(BIG_ROUNDS):
        ingest(big, renamed(run, f"r{n}-"))
    for n in range(SMALL_CONVERSATIONS):
        small = Conversation.objects.create(owner=owners[n % OWNERS], title=f"small {n}")
        ingest(small, renamed(run, "s-"))
    return big, owners[0]


def hot_paths(big, owner) -> list[tuple[str, Callable[[], Any]]]:
    from django.test import Client

    from chatui.ingest.service import ingest
    from chatui.live import frames
    from chatui.models import Message
    from chatui.read import selectors

    client = Client()
    client.force_login(owner)
    middle_tool = Message.objects.filter(conversation=big, role="tool").order_by("position")[500]
    last_tool = Message.objects.filter(conversation=big, role="tool").order_by("position").last()
    run = json.loads((ROOT / "tests/fixtures/recorded_run.json").read_text())
    admin = "/admin/chatui/conversation/"
    return [
        # Half a run: the conversation is left mid-run, as a reconnect usually finds it.
        ("ingest half a run (12 events)", lambda: ingest(big, renamed(run[:12], "extra-"))),
        ("events after a seq (API)", lambda: list(selectors.events_after(big, big.last_seq - 50))),
        ("transcript window (page)", lambda: selectors.transcript_window(big)),
        (
            "load earlier",
            lambda: selectors.transcript_window(big, before_position=middle_tool.position),
        ),
        ("batch slice, middle", lambda: selectors.batch_slice(middle_tool)),
        ("batch slice, latest", lambda: selectors.batch_slice(last_tool)),
        ("replay after reconnect", lambda: frames.replay_frame(big.pk, big.last_seq - 10)),
        ("list page", lambda: client.get("/")),
        ("list page search", lambda: client.get("/", {"q": "pytest"})),
        ("conversation page", lambda: client.get(big.get_absolute_url())),
        ("admin list", lambda: client.get(admin)),
        ("admin status filter", lambda: client.get(admin, {"status__exact": "completed"})),
        ("admin errors filter", lambda: client.get(admin, {"has_errors": "yes"})),
        ("admin tool filter", lambda: client.get(admin, {"tool": "read_file"})),
        ("admin owner filter", lambda: client.get(admin, {"owner__id__exact": owner.pk})),
        ("admin search", lambda: client.get(admin, {"q": "pytest"})),
        (
            "admin events of one conversation",
            lambda: client.get("/admin/chatui/event/", {"conversation": str(big.pk)}),
        ),
        (
            "admin messages of one conversation",
            lambda: client.get("/admin/chatui/message/", {"conversation": str(big.pk)}),
        ),
    ]


def explain(sql: str, *, seqscan: bool) -> list[str]:
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL enable_seqscan = {'on' if seqscan else 'off'}")
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING ON, SUMMARY ON) " + sql)
        return [row[0] for row in cursor.fetchall()]


def main() -> int:
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith(("postgres://", "postgresql://")):
        sys.exit("DATABASE_URL must point at PostgreSQL (make run-cluster starts one)")
    url, drop = scratch_database(base)
    os.environ.update(DATABASE_URL=url, DJANGO_SETTINGS_MODULE="config.settings")
    os.environ.pop("REDIS_URL", None)  # no viewers here; the in-memory layer will do
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.ALLOWED_HOSTS = ["testserver"]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    try:
        call_command("migrate", verbosity=0)
        big, owner = fill()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
            cursor.execute("SELECT relname, n_live_tup FROM pg_stat_user_tables ORDER BY 1")
            print("rows:", ", ".join(f"{t} {n}" for t, n in cursor.fetchall() if n))
        seen: set[str] = set()
        for label, path in hot_paths(big, owner):
            with CaptureQueriesContext(connection) as captured:
                path()
            selects = [q["sql"] for q in captured.captured_queries]
            selects = [s for s in selects if s.lstrip().upper().startswith("SELECT")]
            print(f"\n## {label}: {len(selects)} SELECTs")
            for sql in selects:
                shape = re.sub(r"'[^']*'|\b\d+\b", "?", sql)
                if shape in seen:
                    continue
                seen.add(shape)
                report(sql)
    finally:
        connection.close()
        drop()
    return 0


def report(sql: str) -> None:
    planned = explain(sql, seqscan=True)
    forced = explain(sql, seqscan=False)
    took = next((line for line in planned if line.startswith("Execution Time")), "")
    unindexed = sorted(set(TABLE.findall("\n".join(forced))))
    verdict = f"NO INDEX for {', '.join(unindexed)}" if unindexed else "indexed"
    print(f"- {verdict}; {took}\n    {sql if VERBOSE else sql[:200]}")
    for line in planned if VERBOSE else planned[:4]:
        print(f"    | {line}")


if __name__ == "__main__":
    sys.exit(main())
