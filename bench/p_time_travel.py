"""Time travel (issue 28): a past moment of a 50,000-event conversation, on a real daphne.

    .venv/bin/python bench/p_time_travel.py [--events 50000] [--cold 10] [--steps 100]
        [--postgres postgres://chatui@127.0.0.1:PORT/chatui]

Builds one conversation of `--events` events through the ingest API in batches of 500
(`common.EventStream`: runs of statuses, streamed answers, steps announcing tool calls,
tool started/progress/completed, run ends with S3 reconciliation), and a second user,
"bob", with 20 small conversations of his own. Logged in through the real login form,
it then times:

- the first moment of the conversation this process is asked for (`?at=` 80 % in);
- `--cold` moments at seeded random seqs never asked before (`GET /c/<id>/?at=N`, the
  whole page): what an auditor following links pays;
- `--steps` steps of the player (`GET /c/<id>/at/N`, the fragment it fetches), half
  +10 and half −10 from 80 % in, with daphne's RSS before and after, and its peak;
- bob's list page (`GET /`) alone, then while 4 `?at=` requests of the big
  conversation run at once — of moments near those asked before (warm), then of a
  second conversation of the same size nobody has opened (each of the 4 projects its
  whole prefix): the four requests' times and status codes (503: refused while
  saturated) and bob's p50/max.

Times are measured client-side on loopback, from sending the request to having the
whole body. The daphne CPU column is daphne's own CPU (all threads, /proc) per request.

With `--postgres URL` the server runs on a new database made on that PostgreSQL server
(e.g. one started by scripts/cluster/services.sh), dropped at the end; one process, no
Redis. The steps' rows also say what each moment started from: the player's steps back
should land on the trail of the last moment (docs/PERFORMANCE.md, time travel).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from common import (
    REQUEST_COLUMNS,
    Bench,
    EventStream,
    LiveServer,
    cpu_seconds,
    create_postgres_database,
    drop_postgres_database,
    loadavg,
    machine_line,
    request_row,
    rss_kb,
    table,
)

BATCH = 500


@dataclass
class PostgresBench(Bench):
    """Bench, its server on a new database of the PostgreSQL server `server_url`."""

    server_url: str = ""

    def __enter__(self) -> PostgresBench:
        self.tmp = Path(tempfile.mkdtemp(prefix="chatui-bench-"))
        self.database = database = create_postgres_database(self.server_url)
        env = {"CHATUI_MAX_SOCKETS_PER_USER": "1000000"}
        self.server = LiveServer(self.tmp / "data", database_url=database, extra_env=env)
        self.server.prepare()
        self.server.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.server.stop()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
            drop_postgres_database(self.database)


def build(bench: Bench, events: int, tag: str) -> tuple[str, float]:
    conversation = bench.new_conversation(f"time travel {tag}")
    stream = EventStream(tag)
    started = time.perf_counter()
    with bench.api(timeout=120) as client:
        for first in range(0, events, BATCH):
            batch = stream.take(min(BATCH, events - first))
            response = client.post(f"/conversations/{conversation}/events", json={"events": batch})
            response.raise_for_status()
    return conversation, time.perf_counter() - started


def build_bob(bench: Bench) -> dict[str, str]:
    """Another user with 20 small conversations; his session cookie."""
    token = bench.server.add_user("bob", "bob-password-123")
    with bench.server.api(token) as client:
        for n in range(20):
            made = client.post("/conversations", json={"title": f"bob {n}"})
            made.raise_for_status()
            events = EventStream(f"bob{n}").take(40)
            posted = client.post(
                f"/conversations/{made.json()['id']}/events", json={"events": events}
            )
            posted.raise_for_status()
    name, value = bench.server.session_cookie("bob", "bob-password-123").split("=", 1)
    return {name: value}


def timed_get(client: httpx.Client, path: str, **params) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    response = client.get(path, params=params or None)
    return (time.perf_counter() - start) * 1000, response


def ok(response: httpx.Response, what: str) -> None:
    if response.status_code != 200:
        raise RuntimeError(f"{what}: {response.status_code} {response.text[:200]}")


def list_page_while(
    bench: Bench, bob: dict[str, str], moments: list[tuple[str, int]]
) -> tuple[list[float], list[tuple[float, int]]]:
    """Bob's list page, in a loop while `moments` (conversation, seq) are asked at once
    (one thread each, owner's session); his times, and each moment's (ms, status)."""
    cookie = bench.session_cookie().split("=", 1)
    done: list[tuple[float, int]] = []
    lock = threading.Lock()

    def ask(conversation: str, seq: int) -> None:
        with httpx.Client(base_url=bench.url, cookies={cookie[0]: cookie[1]}, timeout=600) as c:
            took, response = timed_get(c, f"/c/{conversation}/", at=seq)
            with lock:
                done.append((took, response.status_code))

    threads = [threading.Thread(target=ask, args=moment) for moment in moments]
    times: list[float] = []
    with httpx.Client(base_url=bench.url, cookies=bob, timeout=60) as client:
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            took, response = timed_get(client, "/")
            ok(response, "bob's list page")
            times.append(took)
            time.sleep(0.02)
    for thread in threads:
        thread.join()
    return times, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--cold", type=int, default=10, help="moments at new random seqs")
    parser.add_argument("--steps", type=int, default=100, help="player steps of ±10")
    parser.add_argument("--list-requests", type=int, default=40, help="bob's list page alone")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument(
        "--no-cold-concurrent", action="store_true", help="skip the second conversation"
    )
    parser.add_argument("--postgres", default="", help="a PostgreSQL server's URL")
    args = parser.parse_args()
    rng = random.Random(args.seed)

    print("Time travel ·", machine_line(), "· PostgreSQL" if args.postgres else "· SQLite")
    with PostgresBench(server_url=args.postgres) if args.postgres else Bench() as bench:
        conversation, took = build(bench, args.events, "tt")
        print(f"built {args.events} events in {took:.1f} s")
        other = None
        if not args.no_cold_concurrent:
            other, took = build(bench, args.events, "tu")
            print(f"built a second conversation of {args.events} events in {took:.1f} s")
        bob = build_bob(bench)
        name, value = bench.session_cookie().split("=", 1)
        rows: list[list[object]] = []
        notes: list[str] = []
        with httpx.Client(base_url=bench.url, cookies={name: value}, timeout=600) as client:
            start_seq = args.events * 4 // 5
            rss_start = rss_kb(bench.pid)
            cpu = cpu_seconds(bench.pid)
            first, response = timed_get(client, f"/c/{conversation}/", at=start_seq)
            ok(response, "first moment")
            spent = cpu_seconds(bench.pid) - cpu
            rows.append(request_row("first ?at= of the conversation", [first], spent))

            cold_seqs = rng.sample(range(1, args.events + 1), args.cold)
            times, cpu = [], cpu_seconds(bench.pid)
            for seq in cold_seqs:
                took, response = timed_get(client, f"/c/{conversation}/", at=seq)
                ok(response, f"?at={seq}")
                times.append(took)
            rows.append(request_row("?at= new random seq", times, cpu_seconds(bench.pid) - cpu))

            half = args.steps // 2
            walk = [start_seq + 10 * n for n in range(1, half + 1)]
            walk += [walk[-1] - 10 * n for n in range(1, args.steps - half + 1)]
            forward, backward, peak = [], [], rss_kb(bench.pid)
            rss_before_steps = rss_kb(bench.pid)
            quarters = []
            spent = [0.0, 0.0]  # daphne's CPU over the steps forward, and back
            for n, seq in enumerate(walk):
                cpu = cpu_seconds(bench.pid)
                took, response = timed_get(client, f"/c/{conversation}/at/{seq}")
                spent[n >= half] += cpu_seconds(bench.pid) - cpu
                ok(response, f"step to {seq}")
                (forward if n < half else backward).append(took)
                peak = max(peak, rss_kb(bench.pid))
                if (n + 1) % max(1, len(walk) // 4) == 0:
                    quarters.append(rss_kb(bench.pid) // 1024)
            rss_after_steps = rss_kb(bench.pid)
            rows.append(request_row("step +10 (/at/N)", forward, spent[0]))
            if backward:
                rows.append(request_row("step −10 (/at/N)", backward, spent[1]))
            notes.append(
                f"RSS: {rss_start // 1024} MB before the first moment, "
                f"{rss_before_steps // 1024} MB before {len(walk)} steps, "
                f"{rss_after_steps // 1024} MB after (peak during them {peak // 1024} MB; "
                f"after each quarter of them {' / '.join(map(str, quarters))} MB)"
            )

        with httpx.Client(base_url=bench.url, cookies=bob, timeout=60) as client:
            alone, cpu = [], cpu_seconds(bench.pid)
            for _ in range(args.list_requests):
                took, response = timed_get(client, "/")
                ok(response, "bob's list page")
                alone.append(took)
            rows.append(request_row("bob's list page, alone", alone, cpu_seconds(bench.pid) - cpu))

        cases = [("warm", conversation, rng.sample(range(1, args.events + 1), 4))]
        if other:
            cases.append(("cold", other, rng.sample(range(args.events // 2, args.events + 1), 4)))
        for label, target, seqs in cases:
            cpu = cpu_seconds(bench.pid)
            during, moments = list_page_while(bench, bob, [(target, seq) for seq in seqs])
            spent = cpu_seconds(bench.pid) - cpu
            codes = sorted(code for _, code in moments)
            rows.append(
                request_row(
                    f"4 ?at= at once, {label} ({','.join(map(str, codes))})",
                    [took for took, _ in moments],
                    spent / len(moments),
                )
            )
            rows.append(request_row(f"bob's list page meanwhile ({label})", during, 0.0))
        notes.append(f"RSS at the end: {rss_kb(bench.pid) // 1024} MB")
        load = loadavg()

    print(table(["request", *REQUEST_COLUMNS], rows))
    for note in notes:
        print(note)
    print(f"load average at the end: {load}")
    print(
        "(the CPU column of the 4-at-once rows is all of daphne's CPU meanwhile, "
        "bob's list pages included, per moment; bob's own rows under load show 0)"
    )
    if len(alone) > 1:
        print(f"bob alone p50 {statistics.median(alone):.1f} ms")


if __name__ == "__main__":
    main()
