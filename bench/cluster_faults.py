"""Cluster mode under fire (docs/SCALING.md#cluster-under-fire): faults under load, and what the
viewers saw.

2 web processes (scripts/cluster/serve.py, SO_REUSEPORT) and 1 run worker on
PostgreSQL + Redis; VIEWERS sockets spread over CONVERSATIONS conversations, behaving
as the page does (resume with ?after=<last seq>; reconnect on 1006/1011/1012/1013 with
chatui.js's full-jitter backoff capped at 4 s, reset when a socket opens; a frame whose
seq skips ahead makes it resume too); writers posting RATE events/s in batches of
BATCH through the API, each batch retried with the same event ids until acknowledged
(REL2). One web process is SIGKILLed at --kill-at (the supervisor restarts it), Redis
is shut down at --redis-at and started again REDIS_DOWN seconds later.

It prints: events acknowledged vs. in the log (lost, duplicated, seq gaps); responses
5xx (any: the dead process answers none, its connections fail) and failed connections;
per viewer, the time from each fault (and from its end: the process answering again,
Redis back) until it shows the last seq its conversation had acknowledged at that moment;
and the lag of every frame shown (acknowledged → shown), which says whether the load held.

    python bench/cluster_faults.py                  # the full run: 300 viewers, 500/s, 5 minutes
    python bench/cluster_faults.py --seconds 60 --viewers 60 --rate 100 \\
        --kill-at 15 --redis-at 35                   # the run in `make test-cluster`

PostgreSQL: DATABASE_URL (a fresh database is made on that server and dropped after).
Redis: one of its own on a free port, so stopping it disturbs nobody else.

Why it is long: one script runs the whole drill — its own Redis and cluster, viewers that
behave as the page does, writers that retry as a runtime does, the faults, and the
figures computed from what each side saw — so that the test of `make test-cluster`
(tests/cluster/test_cluster_faults.py) runs exactly what the full run measures.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import itertools
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psycopg  # noqa: E402
import websockets  # noqa: E402

from bench.common import ClusterServer  # noqa: E402
from tests.support.live import (  # noqa: E402
    create_postgres_database,
    drop_postgres_database,
)

MARKER = re.compile(r"^\s*<!--seq (\d+) (\d+)-->")
RECONNECT_CODES = {1006, 1011, 1012, 1013}


# -- Redis of our own -------------------------------------------------------------------


def port_below_ephemeral_range() -> int:
    """A free port below Linux's ephemeral range (32768–60999). One in it can be taken,
    while Redis is stopped, as the source port of an outgoing connection — a client
    connecting to it can even connect to itself — and Redis cannot start there again
    (scripts/cluster/services.sh)."""
    for _ in range(1000):
        port = random.randint(20000, 32000)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port between 20000 and 32000")


class OwnRedis:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = port_below_ephemeral_range()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def answers(self) -> bool:
        ping = ["redis-cli", "-p", str(self.port), "ping"]
        return subprocess.run(ping, capture_output=True, text=True).stdout.strip() == "PONG"

    def start(self) -> None:
        options = {"port": self.port, "bind": "127.0.0.1", "save": "", "appendonly": "no"}
        options |= {"daemonize": "yes", "dir": self.folder, "logfile": self.folder / "redis.log"}
        words = [word for name, value in options.items() for word in (f"--{name}", str(value))]
        subprocess.run(["redis-server", *words], check=True)
        while not self.answers():
            time.sleep(0.02)

    def stop(self) -> None:
        shutdown = ["redis-cli", "-p", str(self.port), "shutdown", "nosave"]
        subprocess.run(shutdown, capture_output=True)
        while self.answers():
            time.sleep(0.02)


# -- the cluster ------------------------------------------------------------------------


class Cluster(ClusterServer):
    """serve.py: 2 web daphne processes behind one port and one run worker."""

    run_workers = 1

    def web_pid(self, n: int) -> int:
        return int((self.data_dir / "run" / f"web-{n}.pid").read_text())

    def log(self) -> str:
        return (self.data_dir / "daphne.log").read_text(errors="replace")


# -- load -------------------------------------------------------------------------------


@dataclass
class Tally:
    start: float = field(default_factory=time.monotonic)
    acked: dict[str, set[str]] = field(default_factory=dict)  # conversation → event ids
    acked_seqs: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    status_5xx: list[tuple[float, int]] = field(default_factory=list)
    failed_connections: list[float] = field(default_factory=list)
    other_status: list[tuple[float, int]] = field(default_factory=list)
    handshakes_refused: list[tuple[float, str]] = field(default_factory=list)
    closes: dict[int, int] = field(default_factory=dict)

    def now(self) -> float:
        return time.monotonic() - self.start


@dataclass
class Viewer:
    conversation: str
    seqs: list[tuple[float, int]] = field(default_factory=lambda: [(0.0, 0)])
    connects: int = 0

    @property
    def last(self) -> int:
        return self.seqs[-1][1]


async def view(viewer: Viewer, cluster: Cluster, cookie: str, tally: Tally, stop: asyncio.Event):
    retries = 0
    while not stop.is_set():
        url = (
            f"ws://127.0.0.1:{cluster.port}/ws/conversations/{viewer.conversation}/"
            f"?after={viewer.last}"
        )
        code = 1006
        try:
            async with websockets.connect(
                url,
                origin=cluster.url,
                additional_headers={"Cookie": cookie},
                max_size=None,
                open_timeout=20,
                ping_interval=None,
                proxy=None,
            ) as socket:
                retries = 0  # the ws extension resets its backoff when a socket opens
                viewer.connects += 1
                async for text in socket:
                    found = MARKER.match(text)
                    if not found:
                        continue
                    first, last = int(found[1]), int(found[2])
                    if last <= viewer.last:
                        continue
                    if first > viewer.last + 1:  # the page resumes from what it has
                        code = 1006
                        break
                    viewer.seqs.append((tally.now(), last))
                else:
                    code = socket.close_code or 1006
                if stop.is_set():
                    return
        except websockets.InvalidStatus as refused:
            tally.handshakes_refused.append((tally.now(), str(refused.response.status_code)))
            if refused.response.status_code >= 500:
                tally.status_5xx.append((tally.now(), refused.response.status_code))
        except (TimeoutError, OSError, websockets.WebSocketException) as problem:
            tally.handshakes_refused.append((tally.now(), type(problem).__name__))
        tally.closes[code] = tally.closes.get(code, 0) + 1
        if code not in RECONNECT_CODES and not stop.is_set():
            raise RuntimeError(f"a viewer was closed with {code}: the page would not reconnect")
        delay = min(4.0, 2.0**retries) * random.random()  # chatui.js: full jitter, capped at 4 s
        retries += 1
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)


async def write(
    conversation: str, client: httpx.AsyncClient, tally: Tally, batch: int, interval: float, stop
):
    """One writer: a batch every `interval` seconds (its schedule kept across retries)."""
    due = time.monotonic() + random.random() * interval
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, due - time.monotonic()))
        if stop.is_set():
            return
        due += interval
        ids = [uuid.uuid4().hex for _ in range(batch)]
        events = [
            {"type": "user.message", "content": f"fire {i}", "event_id": event_id}
            for i, event_id in enumerate(ids)
        ]
        while True:  # retried with the same ids until acknowledged (REL2)
            try:
                response = await client.post(
                    f"/api/v1/conversations/{conversation}/events", content=json.dumps(events)
                )
            except httpx.HTTPError:
                tally.failed_connections.append(tally.now())
                await asyncio.sleep(0.1)
                continue
            if response.status_code == 200:
                tally.acked.setdefault(conversation, set()).update(ids)
                tally.acked_seqs.setdefault(conversation, []).append(
                    (tally.now(), response.json()["last_seq"])
                )
                break
            if response.status_code >= 500:
                tally.status_5xx.append((tally.now(), response.status_code))
            else:
                tally.other_status.append((tally.now(), response.status_code))
            await asyncio.sleep(0.1)


# -- figures ----------------------------------------------------------------------------


def last_at(timeline: list[tuple[float, int]], moment: float) -> int:
    """The highest seq in a time-sorted (time, seq) timeline by `moment`."""
    index = bisect.bisect_right(timeline, (moment, float("inf")))
    return max((seq for _, seq in timeline[:index]), default=0)


def catch_up(viewer: Viewer, acked: list[tuple[float, int]], since: float, until: float):
    """Seconds from `since` until the viewer shows the last seq its conversation had
    acknowledged at `since` (None: not by `until`)."""
    target = last_at(acked, since)
    for when, seq in viewer.seqs:
        if seq >= target:
            return max(0.0, when - since)
        if when > until:
            break
    return None


#: A viewer that lost its socket at a fault may show, at once, all that was acknowledged
#: by the fault (when frames reach viewers in milliseconds): what was acknowledged this
#: long after it shows whether it is receiving again.
AFTER = 1.0


def frame_delays(viewers: list[Viewer], acked: dict[str, list[tuple[float, int]]]) -> list[float]:
    """For each seq a viewer was shown: how long after its acknowledgement (the lag)."""
    delays = []
    for viewer in viewers:
        timeline = acked.get(viewer.conversation, [])
        seqs_at = {seq: when for when, seq in timeline}
        for when, seq in viewer.seqs[1:]:
            if seq in seqs_at:
                delays.append(max(0.0, when - seqs_at[seq]))
    return delays


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    values = sorted(values)
    pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]  # noqa: E731
    return f"p50 {pick(0.5):.2f} s, p99 {pick(0.99):.2f} s, max {values[-1]:.2f} s"


def log_figures(database_url: str, tally: Tally) -> dict[str, int]:
    lost = duplicated = gaps = logged = 0
    with psycopg.connect(database_url, autocommit=True) as db:
        for conversation, ids in tally.acked.items():
            rows = db.execute(
                "SELECT event_id, seq FROM chatui_event WHERE conversation_id = %s",
                [conversation],
            ).fetchall()
            logged += len(rows)
            counts: dict[str, int] = {}
            for event_id, _ in rows:
                counts[event_id] = counts.get(event_id, 0) + 1
            lost += sum(1 for event_id in ids if event_id not in counts)
            duplicated += sum(count - 1 for count in counts.values())
            seqs = sorted(seq for _, seq in rows)
            gaps += sum(1 for a, b in itertools.pairwise(seqs) if b != a + 1)
    acked = sum(len(ids) for ids in tally.acked.values())
    return {"acked": acked, "logged": logged, "lost": lost, "duplicated": duplicated, "gaps": gaps}


# -- the run ----------------------------------------------------------------------------


@dataclass
class Result:
    figures: dict[str, int]
    status_5xx: int
    failed_connections: int
    other_status: int
    recovery: dict[str, list[float]]
    never_current: dict[str, int]
    log_lines: dict[str, int]
    process_back_after: float | None
    cpu: str

    def ok(self) -> bool:
        f = self.figures
        return (
            f["lost"] == 0
            and f["duplicated"] == 0
            and f["gaps"] == 0
            and self.status_5xx == 0
            and not any(self.never_current.values())
        )


def cpu_by_kind(redis_port: int) -> dict[str, float]:
    """CPU seconds so far of the processes on this machine, by what they are: the web
    processes, the run worker, Redis (ours), PostgreSQL (all of it, shared with others)
    and this script. A process that ended meanwhile (the killed one) is not counted."""
    used: dict[str, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            pid = int(stat.parent.name)
            if pid == os.getpid():
                kind = "bench client"
            elif "daphne" in cmdline and "--fd" in cmdline:
                kind = "web"
            elif "run_worker" in cmdline:
                kind = "run worker"
            elif "redis-server" in cmdline and f":{redis_port}" in cmdline:
                kind = "redis"
            elif cmdline.startswith("postgres") or "/postgres " in cmdline:
                kind = "postgres"
            else:
                continue
            fields = stat.read_text().rsplit(")", 1)[1].split()
            used[kind] = used.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / CLK_TCK
    return used


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_busy() -> tuple[float, float]:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    values = [float(v) for v in fields]
    return values[3] + values[4], sum(values)  # idle + iowait, total


async def run(args: argparse.Namespace) -> Result:
    folder = Path(tempfile.mkdtemp(prefix="chatui-faults-"))
    redis = OwnRedis(folder)
    redis.start()
    database = create_postgres_database(os.environ["DATABASE_URL"])
    cluster = Cluster(
        folder / "cluster",
        database_url=database,
        extra_env={
            "REDIS_URL": redis.url,
            "CHATUI_MAX_SOCKETS_PER_USER": "1000000",
            "CHATUI_RUN_WORKERS": "1",
        },
    )
    try:
        cluster.prepare()
        cluster.start()
        return await load(cluster, redis, database, args)
    finally:
        cluster.stop()
        redis.stop()
        drop_postgres_database(database)
        if not args.keep:
            subprocess.run(["rm", "-rf", str(folder)])
        else:
            print(f"kept: {folder}")


async def load(cluster: Cluster, redis: OwnRedis, database: str, args) -> Result:
    conversations = [cluster.new_conversation(f"fire {n}") for n in range(args.conversations)]
    cookie = cluster.session_cookie()
    tally = Tally()
    stop = asyncio.Event()
    viewers = [Viewer(conversations[n % len(conversations)]) for n in range(args.viewers)]
    headers = {"Authorization": f"Bearer {cluster.token}", "Content-Type": "application/json"}
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=0)
    # No keep-alive: the kernel spreads each new connection over both processes.
    client = httpx.AsyncClient(base_url=cluster.url, headers=headers, timeout=30, limits=limits)
    batches_per_second = args.rate / args.batch
    writers_per_conversation = max(1, round(batches_per_second / len(conversations) / 5))
    interval = writers_per_conversation * len(conversations) / batches_per_second
    tasks = [asyncio.ensure_future(view(v, cluster, cookie, tally, stop)) for v in viewers]
    writers = [
        asyncio.ensure_future(write(c, client, tally, args.batch, interval, stop))
        for c in conversations
        for _ in range(writers_per_conversation)
    ]
    idle0, total0 = cpu_busy()
    cpu0, wall0 = cpu_by_kind(redis.port), time.monotonic()
    victim = cluster.web_pid(1)
    process_back_after = None
    moments: dict[str, float] = {}
    while tally.now() < args.seconds:
        await asyncio.sleep(0.05)
        now = tally.now()
        if "kill" not in moments and now >= args.kill_at:
            os.kill(victim, signal.SIGKILL)
            moments["kill"] = tally.now()
        if "kill" in moments and "process back" not in moments:
            with contextlib.suppress(OSError, ValueError):
                if cluster.web_pid(1) != victim:
                    await asyncio.to_thread(wait_answering, cluster, cluster.web_pid(1))
                    moments["process back"] = tally.now()
                    process_back_after = moments["process back"] - moments["kill"]
        if "redis stop" not in moments and now >= args.redis_at:
            await asyncio.to_thread(redis.stop)
            moments["redis stop"] = tally.now()
        if "redis start" not in moments and now >= args.redis_at + args.redis_down:
            await asyncio.to_thread(redis.start)
            moments["redis start"] = tally.now()
    end = tally.now()
    stop.set()
    idle1, total1 = cpu_busy()
    cpu1, wall = cpu_by_kind(redis.port), time.monotonic() - wall0
    cores = {kind: (cpu1[kind] - cpu0.get(kind, 0.0)) / wall for kind in cpu1}
    # A writer's batch in flight is seen through to its answer, not cancelled: a batch
    # the server committed while its writer was cancelled would be logged, never acked.
    _, unfinished = await asyncio.wait(writers, timeout=60)
    for task in [*tasks, *unfinished]:
        task.cancel()
    outcomes = await asyncio.gather(*tasks, *writers, return_exceptions=True)
    problems = [o for o in outcomes if isinstance(o, Exception)]
    if problems:
        raise problems[0]
    await client.aclose()
    await asyncio.sleep(1)  # the last acknowledged writes are committed before the count

    # From each fault, and from its end (the process answering again, Redis back): how
    # long until each viewer shows the last seq acknowledged at that moment.
    kill, back = moments.get("kill", end), moments.get("process back", end)
    redis_stop, redis_start = moments.get("redis stop", end), moments.get("redis start", end)
    windows = {
        "from the kill": kill,
        "from the killed process answering again": back,
        "from Redis' stop": redis_stop,
        "from Redis' return": redis_start,
    }
    acked = {c: sorted(seqs) for c, seqs in tally.acked_seqs.items()}
    recovery: dict[str, list[float]] = {}
    never: dict[str, int] = {}

    def measure(label: str, since: float, *, after: float = 0.0) -> None:
        """Each viewer's time from `since` until it shows what was acknowledged `after`
        seconds after it (None: never, before the run's end)."""
        if since + after >= end:
            return
        times = [catch_up(v, acked.get(v.conversation, []), since + after, end) for v in viewers]
        never[label] = sum(1 for t in times if t is None)
        recovery[label] = [after + t for t in times if t is not None]

    for label, since in windows.items():
        measure(label, since)
    # The stricter reading of "shows the last seq within 5 s after each fault": how long
    # after it each viewer shows what was acknowledged AFTER s after it.
    for label in ("from the kill", "from Redis' return"):
        measure(
            f"(showing what was acknowledged {AFTER:.0f} s after) {label}",
            windows[label],
            after=AFTER,
        )
    recovery["lag of every frame shown (acknowledged → shown)"] = frame_delays(viewers, acked)
    never["lag of every frame shown (acknowledged → shown)"] = 0
    log = cluster.log()
    busy = 1 - (idle1 - idle0) / max(1.0, total1 - total0)
    return Result(
        figures=log_figures(database, tally),
        status_5xx=len(tally.status_5xx),
        failed_connections=len(tally.failed_connections),
        other_status=len(tally.other_status),
        recovery=recovery,
        never_current=never,
        log_lines={
            "Traceback": log.count("Traceback"),
            "layer unreachable": log.count("channel layer unreachable"),
            "layer back": log.count("channel layer reachable again"),
            "came back empty": log.count("came back empty"),
        },
        process_back_after=process_back_after,
        cpu=f"machine CPU busy {busy:.0%} over the run (2 cores, shared), load {loadavg()}; "
        "cores used: " + ", ".join(f"{kind} {used:.2f}" for kind, used in sorted(cores.items())),
    )


def wait_answering(cluster: Cluster, pid: int) -> None:
    """Until the restarted process answers /healthz (connections reach it by chance)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
            if httpx.get(cluster.url + "/healthz", timeout=2).json()["pid"] == pid:
                return
        time.sleep(0.02)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def report(result: Result, args) -> str:
    f = result.figures
    lines = [
        f"cluster under fire: 2 web processes + 1 run worker, {args.viewers} viewers over "
        f"{args.conversations} conversations, {args.rate} events/s in batches of {args.batch}, "
        f"{args.seconds:.0f} s; SIGKILL web-1 at {args.kill_at:.0f} s; Redis down at "
        f"{args.redis_at:.0f} s for {args.redis_down:.0f} s",
        f"events: {f['acked']} acknowledged, {f['logged']} logged, {f['lost']} lost, "
        f"{f['duplicated']} duplicated, {f['gaps']} seq gaps",
        f"requests: {result.status_5xx} answered 5xx, {result.failed_connections} connections "
        f"failed (the killed process), {result.other_status} other non-200",
        f"killed process answering again after {result.process_back_after or float('nan'):.1f} s",
    ]
    for label, times in result.recovery.items():
        lines.append(
            f"viewers current {label}: {spread(times)}; never: {result.never_current[label]}"
        )
    lines.append(f"log: {result.log_lines}")
    lines.append(result.cpu)
    return "\n".join(lines)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--viewers", type=int, default=300)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--rate", type=float, default=500, help="events per second")
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--kill-at", type=float, default=60)
    parser.add_argument("--redis-at", type=float, default=150)
    parser.add_argument("--redis-down", type=float, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the logs' folder")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> Result:
    args = parse(argv)
    result = asyncio.run(run(args))
    print(report(result, args), flush=True)
    return result


if __name__ == "__main__":
    sys.exit(0 if main().ok() else 1)
