"""Where an ingest request's time goes: cProfile + SQL query counts, in-process.

    .venv/bin/python bench/profile_ingest.py [--mode single|batch] [--requests 300]
    .venv/bin/python bench/profile_ingest.py --page 5000     # P3's page instead

Runs Django in this process (no daphne, no network) on a fresh SQLite file in a
temporary folder, with the same settings as the server (WAL, IMMEDIATE,
CONN_MAX_AGE 0, the in-memory channel layer). Plays the P2 event stream
(`common.EventStream`) through the real API view with Django's test client, a
bearer token, closing the database connection after each request as
`request_finished` does under daphne (CONN_MAX_AGE 0), and counts the SQL
queries of each request. A channel stands for one viewer's page (the transcript
and the rail): the broadcast renders its frame and row as usual; with no
consumer reading it the group_send itself costs almost nothing, which is the one
difference from P2. `--page N` instead builds an N-message conversation (as P3
does) and profiles `GET /c/<id>/`.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import ROOT, EventStream, summary, table


def setup_django(data: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{data / 'profile.sqlite3'}"
    os.environ["CHATUI_DATA_DIR"] = str(data)
    os.environ["DJANGO_SECRET_KEY"] = "bench-only"
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.chdir(ROOT)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


@contextlib.contextmanager
def django_in_process(prefix: str) -> Iterator[Any]:
    """Django in this process on a fresh SQLite file in a temporary folder (deleted
    after), with a user to own the bench's conversations: the user."""
    data = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        setup_django(data)
        from django.contrib.auth import get_user_model

        yield get_user_model().objects.create_user("bench", password="bench-password-1")
    finally:
        shutil.rmtree(data, ignore_errors=True)


def watch(conversation) -> None:
    """A viewer's page, as in P2 with --rail: a channel in the conversation's group and
    in its owner's rows group (the rail), or chatui renders no frame and no row
    (chatui.live.broadcast.may_have_members). Its queue fills up and then drops frames, as
    the in-memory layer does for a viewer that does not read."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from chatui.live.broadcast import group_name, rows_group

    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    for group in (group_name(conversation.pk), rows_group(conversation.owner_id)):
        async_to_sync(layer.group_add)(group, channel)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mode",
        choices=["single", "batch", "p1", "steps"],
        default="single",
        help=(
            "single/batch: the P2 stream; p1: P1's tool started/completed (+ text every 5);"
            " steps: tool steps in batches of 50 (the side-by-side's tool steps)"
        ),
    )
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=30, help="unprofiled requests first")
    parser.add_argument(
        "--page", type=int, help="profile GET /c/<id>/ of an N-message conversation"
    )
    parser.add_argument("--top", type=int, default=35)
    parser.add_argument(
        "--statements", type=int, default=0, help="also list the N costliest SQL statements"
    )
    parser.add_argument("--sort", default="cumulative", help="pstats sort key")
    parser.add_argument(
        "--keep-connections",
        action="store_true",
        help="do not close the DB connection after each request (what CONN_MAX_AGE>0 would do)",
    )
    parser.add_argument(
        "--hold-connection",
        action="store_true",
        help="keep one extra SQLite connection open all along, so that closing a request's "
        "connection is never the last close (no checkpoint + WAL reset per request)",
    )
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="chatui-profile-"))
    try:
        setup_django(data)
        run(args)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def run(args) -> None:
    from django.contrib.auth import get_user_model
    from django.db import close_old_connections, connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from chatui.models import ApiToken, Conversation

    if args.hold_connection:
        import sqlite3

        keeper = sqlite3.connect(connection.settings_dict["NAME"])
        keeper.execute("SELECT count(*) FROM sqlite_master").fetchall()
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    _, raw = ApiToken.issue(user)
    conversation = Conversation.objects.create(owner=user, title="profile")
    watch(conversation)
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    url = f"/api/v1/conversations/{conversation.pk}/events"

    if args.page:
        sys.path.insert(0, str(Path(__file__).parent))
        from p3_first_load import MESSAGES_PER_RUN, run_events

        runs = args.page // MESSAGES_PER_RUN
        for first in range(0, runs, 50):
            events = [e for r in range(first, min(runs, first + 50)) for e in run_events("p", r)]
            assert (
                api.post(url, {"events": events}, content_type="application/json").status_code
                == 200
            )
        browser = Client()
        browser.force_login(user)
        page_url = f"/c/{conversation.pk}/"

        def one() -> None:
            response = browser.get(page_url)
            assert response.status_code == 200
            if not args.keep_connections:
                close_old_connections()  # as request_finished does under daphne

        label = f"GET /c/<id>/ ({args.page} messages)"
        per_request = 1
    else:
        if args.mode in ("p1", "steps"):
            stream = P1Stream(text_every=5 if args.mode == "p1" else 50)
        else:
            stream = EventStream("profile")
        per_request = args.batch if args.mode == "batch" else 1

        def one() -> None:
            events = stream.take(per_request)
            body = {"events": events} if args.mode == "batch" else events[0]
            response = api.post(url, body, content_type="application/json")
            assert response.status_code == 200, response.content
            if not args.keep_connections:
                close_old_connections()  # as request_finished does under daphne

        label = f"POST events ({per_request}/request)"

    for _ in range(args.warmup):
        one()
    # 1) plain timing, no profiler, no query capture
    times: list[float] = []
    cpu_start = time.process_time()
    for _ in range(args.requests):
        start = time.perf_counter()
        one()
        times.append((time.perf_counter() - start) * 1000)
    # CPU time as well: with other work on the machine, wall time waits for a core.
    cpu_ms = (time.process_time() - cpu_start) * 1000 / args.requests
    # 2) query counts (the test client resets the query log at request_started: not now)
    from django.core.signals import request_started
    from django.db import reset_queries

    request_started.disconnect(reset_queries)
    queries: list[int] = []
    slow: dict[str, list[float]] = {}
    statements: dict[str, list[float]] = {}
    for _ in range(min(args.requests, 100)):
        reset_queries()  # the log is a deque capped at 9000 entries
        with CaptureQueriesContext(connection) as captured:
            one()
        queries.append(len(captured.captured_queries))
        for query in captured.captured_queries:
            shape = " ".join([*query["sql"].split()[:1], _table_of(query["sql"])])
            slow.setdefault(shape, []).append(float(query["time"]))
            statement = re.sub(r"'[^']*'|\b\d+\b", "?", query["sql"])
            statements.setdefault(statement, []).append(float(query["time"]))
    request_started.connect(reset_queries)
    # 3) cProfile (inflates pure-Python code; read it for shares, not absolutes)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.requests):
        one()
    profiler.disable()
    s = summary(times)
    print(
        table(
            [
                "what",
                "requests",
                "p50 ms",
                "mean ms",
                "ms/event",
                "CPU ms/request",
                "SQL queries/request (mean)",
            ],
            [
                [
                    label,
                    len(times),
                    s["p50"],
                    s["mean"],
                    s["mean"] / per_request,
                    cpu_ms,
                    statistics.fmean(queries),
                ]
            ],
        )
    )
    print("\nSQL by statement kind and table, per request:")
    n_captured = len(queries)
    print(
        table(
            ["statement", "count/request", "ms/request"],
            [
                [shape, len(v) / n_captured, 1000 * sum(v) / n_captured]
                for shape, v in sorted(slow.items(), key=lambda kv: -sum(kv[1]))[:12]
            ],
        )
    )
    if args.statements:
        print(f"\nthe {args.statements} costliest statements (literals as ?), per request:")
        costliest = sorted(statements.items(), key=lambda kv: -sum(kv[1]))[: args.statements]
        for statement, times_s in costliest:
            count, ms = len(times_s) / n_captured, 1000 * sum(times_s) / n_captured
            print(f"- {count:.2f}× {ms:.2f} ms: {statement[:2000]}")
    stats = pstats.Stats(profiler)
    total = stats.total_tt
    shares = []
    for (filename, _line, name), (_cc, _nc, _tt, cumulative, _callers) in stats.stats.items():
        key = f"{name} ({Path(filename).name})"
        if key in BREAKDOWN:
            shares.append([BREAKDOWN[key], key, 100 * cumulative / total])
    shares.sort(key=lambda row: -row[2])
    print("\nshare of profiled time (cumulative, overlapping):")
    print(table(["part", "function", "% of time"], shares))
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(args.sort).print_stats(args.top)
    print(out.getvalue())


class P1Stream:
    """What P1 posts: tool started, tool completed, and every `text_every` tools a text
    (which ends the tool batch)."""

    def __init__(self, text_every: int = 5) -> None:
        self.n = 0
        self.text_every = text_every
        self.pending: list[dict] = [
            {"type": "user.message", "content": "Run the checks.", "run_id": "p1"},
            {"type": "agent.status", "status": "running", "run_id": "p1"},
        ]

    def take(self, count: int) -> list[dict]:
        out = []
        while len(out) < count:
            if not self.pending:
                call = f"p1-{self.n}"
                self.pending += [
                    {
                        "type": "agent.tool.started",
                        "run_id": "p1",
                        "tool_call_id": call,
                        "tool_name": "read_file",
                        "args": {"path": f"src/m{self.n}.py"},
                    },
                    {
                        "type": "agent.tool.completed",
                        "run_id": "p1",
                        "tool_call_id": call,
                        "result": f"ok: {self.n} lines read",
                        "duration_ms": 20,
                    },
                ]
                self.n += 1
                if self.n % self.text_every == 0:
                    self.pending.append(
                        {
                            "type": "agent.step.completed",
                            "run_id": "p1",
                            "message_id": f"p1-text-{self.n}",
                            "content": "Checked some files; continuing.",
                        }
                    )
            out.append(self.pending.pop(0))
        return out


def _table_of(sql: str) -> str:
    import re

    found = re.search(r'(?:FROM|INTO|UPDATE)\s+"(\w+)"', sql)
    return found.group(1) if found else ""


BREAKDOWN = {
    "authenticate (api.py)": "bearer token lookup (+ last_used update)",
    "read_json (api.py)": "JSON decode + limits",
    "parse_events (events.py)": "validation",
    "_ingest_once (ingest.py)": "ingest transaction incl. on_commit broadcast",
    "apply_all (projection.py)": "projection: total (prefetch + apply + last flush)",
    "apply (projection.py)": "projection (Projector.apply)",
    "prefetch (projection.py)": "projection: prefetch (the batch's lookups)",
    "flush (projection.py)": "projection: flush (message writes + search index)",
    "_on_agent_status (projection.py)": "projection: agent.status (run ends: S3, T2)",
    "_drop_duplicates (ingest.py)": "idempotency lookup",
    "run (prepared.py)": "prepared INSERT / UPDATE (event log, messages, conversation)",
    "all (prepared.py)": "prepared SELECTs (lock, lookups, row)",
    "bulk_create (query.py)": "bulk_create (new messages)",
    "broadcast (broadcast.py)": "broadcast: total",
    "send_row (broadcast.py)": "broadcast: list row",
    "change_frame (frames.py)": "broadcast: render frame",
    "_batch_of (frames.py)": "broadcast: batch_slice + present batch",
    "batch_slice (selectors.py)": "broadcast: batch_slice queries",
    "full_frame (frames.py)": "broadcast: full transcript frame",
    "__call__ (sync.py)": "async_to_sync (group_send; under daphne the outbox instead)",
    "close_old_connections (__init__.py)": "DB connection close (CONN_MAX_AGE=0)",
    "get_new_connection (base.py)": "DB connection open",
    "render_to_string (loader.py)": "template rendering",
    "render_markdown (markdown.py)": "Markdown + nh3",
    "present_transcript (presenters.py)": "presenters",
    "transcript_window (selectors.py)": "transcript_window",
    "conversation_page (views.py)": "page view",
}


if __name__ == "__main__":
    main()
