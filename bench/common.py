"""Shared helpers for the benchmark scripts (docs/PERFORMANCE.md, P1–P4).

Every script starts its own daphne through `tests.support.live.LiveServer` on a
fresh SQLite file in a temporary folder, talks to it on 127.0.0.1 only, prints a
short table and cleans up. Nothing here is imported by the app or the tests.

The WebSocket client is `tests.support.websocket` (RFC 6455, no extra package).

Why it is long: every benchmark script measures the same way, so the servers under
test (one process, or the PostgreSQL + Redis cluster), the CPU and memory meters, the
timing tables, the event stream and the viewer pool are kept here once.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import itertools
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support.live import LiveServer, create_postgres_database, drop_postgres_database  # noqa: E402
from tests.support.websocket import RawWebSocket, read_forever  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- the machine ------------------------------------------------------------------


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def code_version() -> str:
    """The commit the server runs, and whether the app's code differs from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "chatui", "config", "templates"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return head + (" (app code modified)" if dirty else "")


def machine_line() -> str:
    return (
        f"{dt.datetime.now().strftime('%Y-%m-%d %H:%M')} · commit {code_version()} · "
        f"{os.cpu_count()} cores · Python {platform.python_version()} · load {loadavg()}"
    )


def raise_nofile(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(max(soft, wanted), hard) if hard != resource.RLIM_INFINITY else max(soft, wanted)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# -- the process under test ---------------------------------------------------------


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    """user + system CPU of a process (all its threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def main_thread_cpu_seconds(pid: int) -> float:
    """user + system CPU of a process's main thread (the event loop, under daphne)."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class InstrumentedServer(LiveServer):
    """LiveServer running `bench.instrumented_asgi` (chatui's app + commit stamps)."""

    application = "bench.instrumented_asgi:application"


@dataclass
class Bench:
    """A LiveServer in its own temporary folder, logged-in helpers around it.

    With `stamps=True` daphne runs `bench.instrumented_asgi`, which writes a line per
    committed ingest to `self.stamps_path` (see `read_stamps`)."""

    keep: bool = False
    stamps: bool = False
    experiment: str = ""  # bench.instrumented_asgi experiments (implies stamps)
    launcher: tuple[str, ...] = ()  # LiveServer.launcher: daphne under valgrind
    server: LiveServer = field(init=False)
    tmp: Path = field(init=False)

    @property
    def stamps_path(self) -> Path:
        return self.tmp / "stamps.txt"

    def read_stamps(self) -> dict[tuple[str, str, int], float]:
        """(kind 'C'|'B', conversation id without dashes, last_seq) → time.time()."""
        found = {}
        if self.stamps_path.exists():
            for line in self.stamps_path.read_text().splitlines():
                if line.startswith("G "):
                    continue
                kind, conversation, _first, last, moment = line.split()
                found[(kind, conversation.replace("-", ""), int(last))] = float(moment)
        return found

    def gc_pauses(self) -> list[tuple[float, float, int]]:
        """(start time.time(), ms, generation) of daphne's garbage-collector pauses ≥ 2 ms."""
        pauses = []
        if self.stamps_path.exists():
            for line in self.stamps_path.read_text().splitlines():
                if line.startswith("G "):
                    _g, generation, start, took = line.split()
                    pauses.append((float(start), float(took), int(generation)))
        return pauses

    def __enter__(self) -> Bench:
        self.tmp = Path(tempfile.mkdtemp(prefix="chatui-bench-"))
        # Every benchmark viewer is the one e2e user: lift the per-user socket cap.
        env = {"CHATUI_MAX_SOCKETS_PER_USER": "1000000"}
        if self.stamps or self.experiment:
            env["CHATUI_BENCH_STAMPS"] = str(self.stamps_path)
            if self.experiment:
                env["CHATUI_BENCH_EXPERIMENT"] = self.experiment
            self.server = InstrumentedServer(self.tmp / "data", extra_env=env)
        else:
            self.server = LiveServer(self.tmp / "data", extra_env=env)
        if self.launcher:
            self.server.launcher, self.server.start_timeout = self.launcher, 600
        self.server.prepare()
        self.server.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.server.stop()
        finally:
            if self.keep:
                print(f"(kept {self.tmp})")
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def pid(self) -> int:
        assert self.server.process is not None
        return self.server.process.pid

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def origin(self) -> str:
        return self.server.url

    def api(self, **kwargs) -> httpx.Client:
        return httpx.Client(
            base_url=self.url + "/api/v1",
            headers={"Authorization": f"Bearer {self.server.token}"},
            **{"timeout": 30, **kwargs},
        )

    def new_conversation(self, title: str = "bench") -> str:
        return self.server.new_conversation(title)

    def last_seq(self, conversation_id: str) -> int:
        with self.api() as client:
            response = client.get(f"/conversations/{conversation_id}/events", params={"after": 0})
            response.raise_for_status()
            return response.json()["last_seq"]

    def session_cookie(self) -> str:
        """Log in through the real login form; returns 'sessionid=…'."""
        return self.server.session_cookie()


# -- statistics and tables ----------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "min": min(values),
        "p50": statistics.median(values),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "max": max(values),
        "mean": statistics.fmean(values),
    }


#: The columns of a request-timing table after its label (`request_row`).
REQUEST_COLUMNS = ["n", "min ms", "p50 ms", "p95 ms", "max ms", "daphne CPU ms/req"]


def request_row(label: str, times_ms: list[float], cpu: float, *extra: object) -> list[object]:
    """One row under REQUEST_COLUMNS: `label`, the timings' n/min/p50/p95/max, the
    server's CPU per request (`cpu` seconds over all of them), then `extra` columns."""
    s = summary(times_ms)
    return [label, s["n"], s["min"], s["p50"], s["p95"], s["max"], 1000 * cpu / s["n"], *extra]


def table(headers: list[str], rows: list[list[object]]) -> str:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for index, row in enumerate(cells):
        lines.append("| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if index == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)


# -- realistic event streams ---------------------------------------------------------

ASSISTANT_TEXT = (
    "Here is what I found in the repository. The failing test is in "
    "`tests/web/test_api.py`, and the cause is a **missing index** on the lookup:\n\n"
    "```python\nEvent.objects.filter(conversation=c, seq__gt=after).order_by('seq')\n```\n\n"
    "- the query scans every event of the conversation\n"
    "- the fix is one migration\n\nShall I apply it?"
)
TOOL_OUTPUT = "\n".join(
    f"src/module_{i}.py: {i * 37} lines, last change 2 days ago" for i in range(8)
)


#: A streamed answer's tokens (P5, instructions' stream mode): ~6 characters each.
STREAM_WORDS = ("token ", "delta ", "words ", "agent ", "reply ", "chunk ", "small ", "text. ")


def stream_tokens(count: int) -> list[str]:
    return [STREAM_WORDS[i % len(STREAM_WORDS)] for i in range(count)]


class EventStream:
    """An endless, realistic agent session for one conversation.

    A run: user.message, status running, then `steps` steps, each a thinking
    status, `deltas` streamed chunks, a step.completed announcing two tool calls,
    and for each call tool.started → tool.progress → tool.completed; then a final
    streamed answer and status completed (which ends the run: S3 reconciliation and
    a full transcript frame)."""

    def __init__(self, prefix: str, *, steps: int = 4, deltas: int = 6):
        self.prefix = prefix
        self.steps = steps
        self.deltas = deltas
        self._iter = self._events()
        self.counts: dict[str, int] = {}

    def take(self, n: int) -> list[dict]:
        batch = list(itertools.islice(self._iter, n))
        for event in batch:
            self.counts[event["type"]] = self.counts.get(event["type"], 0) + 1
        return batch

    def _stream_text(self, run: str, message_id: str) -> Iterator[dict]:
        words = ASSISTANT_TEXT.split(" ")
        size = max(1, len(words) // self.deltas)
        for start in range(0, len(words), size):
            yield {
                "type": "agent.message.delta",
                "run_id": run,
                "message_id": message_id,
                "delta": " ".join(words[start : start + size]) + " ",
            }

    def _events(self) -> Iterator[dict]:
        for turn in itertools.count():
            run = f"{self.prefix}-r{turn}"
            yield {"type": "user.message", "run_id": run, "content": f"Please check item {turn}."}
            yield {"type": "agent.status", "run_id": run, "status": "running"}
            for step in range(self.steps):
                yield {"type": "agent.status", "run_id": run, "status": "thinking"}
                message_id = f"{run}-s{step}"
                yield from self._stream_text(run, message_id)
                calls = [
                    {"id": f"{message_id}-t{n}", "name": name, "args": {"path": f"src/m{n}.py"}}
                    for n, name in enumerate(("read_file", "run_cmd"))
                ]
                yield {
                    "type": "agent.step.completed",
                    "run_id": run,
                    "message_id": message_id,
                    "content": "Let me look at the code first.",
                    "tool_calls": calls,
                    "duration_ms": 850,
                    "tokens": 120,
                }
                for call in calls:
                    yield {
                        "type": "agent.tool.started",
                        "run_id": run,
                        "tool_call_id": call["id"],
                        "tool_name": call["name"],
                        "args": call["args"],
                    }
                    yield {
                        "type": "agent.tool.progress",
                        "run_id": run,
                        "tool_call_id": call["id"],
                        "progress": 0.5,
                        "output": TOOL_OUTPUT[:200],
                    }
                    yield {
                        "type": "agent.tool.completed",
                        "run_id": run,
                        "tool_call_id": call["id"],
                        "result": TOOL_OUTPUT,
                        "duration_ms": 120,
                    }
            final = f"{run}-final"
            yield from self._stream_text(run, final)
            yield {
                "type": "agent.step.completed",
                "run_id": run,
                "message_id": final,
                "content": ASSISTANT_TEXT,
                "duration_ms": 1500,
                "tokens": 400,
            }
            yield {"type": "agent.status", "run_id": run, "status": "completed"}


# -- py-spy (optional) ---------------------------------------------------------------


@contextlib.contextmanager
def load_threads(
    worker: Callable[[int], None], count: int, warmup: float, stop: threading.Event
) -> Iterator[None]:
    """`worker(n)` on `count` threads; `warmup` seconds pass before the block runs, and
    at its end `stop` is set and the threads are joined."""
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(warmup)
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)


def measure_window(measuring: threading.Event, stop: threading.Event, seconds: float) -> float:
    """Open the measured window (`measuring`), hold it `seconds` or until a worker sets
    `stop`, then close it: its length in seconds."""
    started = time.perf_counter()
    measuring.set()
    stop.wait(seconds)
    stop.set()
    return time.perf_counter() - started


@contextlib.contextmanager
def maybe_py_spy(
    pid: int, out: str | None, seconds: float | None, *, gil: bool = False
) -> Iterator[None]:
    """Sample daphne with py-spy while the block runs (if `out` and py-spy exist): for
    `seconds`, or with None until the block ends (py-spy is then interrupted, as Ctrl-C
    would, and writes what it has). With `gil`, only the thread holding the GIL is
    sampled: where the CPU goes, without the time threads spend waiting for the GIL
    (which a plain sample counts as running)."""
    if not out:
        yield
        return
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(exe).exists():
        print("py-spy not installed (pip install py-spy); not profiling")
        yield
        return
    process = subprocess.Popen(
        [
            exe,
            "record",
            "-p",
            str(pid),
            *(["-d", str(int(seconds) + 1)] if seconds is not None else []),
            "-r",
            "200",
            "-f",
            "raw",
            "-o",
            out,
            "--nonblocking",
            "--threads",
            *(["--gil"] if gil else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    try:
        yield
    finally:
        if seconds is None:
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=(seconds or 0) + 30)
        except subprocess.TimeoutExpired:
            process.terminate()
            process.wait(timeout=10)
        print(f"py-spy samples written to {out}")


# -- viewers in a helper process -------------------------------------------------------


def _viewer_main(port, paths, cookie, origin, ready, stop, results) -> None:
    async def run() -> None:
        gate = asyncio.Semaphore(20)

        async def open_one(path: str) -> RawWebSocket:
            async with gate:
                return await RawWebSocket.connect(port, path, cookie=cookie, origin=origin)

        sockets = await asyncio.gather(*(open_one(p) for p in paths))
        readers = [asyncio.create_task(read_forever(ws)) for ws in sockets]
        ready.put(len(sockets))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, stop.wait)
        await asyncio.sleep(0.2)
        counts = [ws.frames for ws in sockets]
        closed = [ws.close_code for ws in sockets if ws.close_code is not None]
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
        results.put((counts, closed))

    try:
        asyncio.run(run())
    except Exception as problem:  # report instead of hanging the parent
        ready.put(f"error: {problem!r}")


class ViewerPool:
    """`len(paths)` plain WebSocket viewers, in their own process (own GIL), that
    keep their sockets drained and count frames."""

    def __init__(self, bench: Bench, paths: list[str], cookie: str):
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self.ready, self.results, self.stop_event = ctx.Queue(), ctx.Queue(), ctx.Event()
        self.process = ctx.Process(
            target=_viewer_main,
            args=(
                bench.server.port,
                paths,
                cookie,
                bench.origin,
                self.ready,
                self.stop_event,
                self.results,
            ),
            daemon=True,
        )
        self.count = len(paths)

    def __enter__(self) -> ViewerPool:
        self.process.start()
        got = self.ready.get(timeout=120)
        if not isinstance(got, int) or got != self.count:
            raise RuntimeError(f"viewers did not connect: {got}")
        return self

    def stop(self) -> tuple[list[int], list[int]]:
        self.stop_event.set()
        counts, closed = self.results.get(timeout=60)
        self.process.join(timeout=30)
        return counts, closed

    def __exit__(self, *exc) -> None:
        if self.process.is_alive():
            self.stop_event.set()
            self.process.join(timeout=30)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout=10)


# -- cluster mode (docs/SCALING.md): PostgreSQL + Redis, several web processes ---------------

#: The benchmarks' own PostgreSQL and Redis: other ports and folder than `make
#: test-cluster` (25432/26379, var/cluster), so a benchmark never disturbs a test run.
BENCH_CLUSTER_ENV = {
    "CLUSTER_DIR": str(ROOT / "var" / "bench-cluster"),
    "CLUSTER_PG_PORT": "25532",
    "CLUSTER_REDIS_PORT": "26479",
}
BENCH_POSTGRES = f"postgres://chatui@127.0.0.1:{BENCH_CLUSTER_ENV['CLUSTER_PG_PORT']}/chatui"
BENCH_REDIS = f"redis://127.0.0.1:{BENCH_CLUSTER_ENV['CLUSTER_REDIS_PORT']}/0"
SERVICES = ROOT / "scripts" / "cluster" / "services.sh"


def cluster_services(action: str) -> None:
    """scripts/cluster/services.sh start|stop on the benchmarks' ports."""
    subprocess.run([str(SERVICES), action], env={**os.environ, **BENCH_CLUSTER_ENV}, check=True)


def service_pids() -> dict[str, list[int]]:
    """PostgreSQL's processes (postmaster and its backends) and Redis's."""
    found: dict[str, list[int]] = {"postgres": [], "redis": []}
    # The postmaster is found by its command line: services.sh puts the data folder
    # in /tmp when the `postgres` user cannot reach the checkout.
    port = f" -p {BENCH_CLUSTER_ENV['CLUSTER_PG_PORT']} "
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            words = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if words.split(" ", 1)[0].endswith("/postgres") and port in words:
                main = int(cmdline.parent.name)
                found["postgres"] = [main, *children(main)]
    redis = Path(BENCH_CLUSTER_ENV["CLUSTER_DIR"]) / "redis.pid"
    if redis.exists():
        found["redis"] = [int(redis.read_text())]
    return found


def children(pid: int) -> list[int]:
    """Direct children of a process (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def _cpu_or_none(pid: int) -> float | None:
    try:
        return cpu_seconds(pid)
    except OSError:  # exited meanwhile
        return None


class CpuMeter:
    """CPU used over a window by each web process, PostgreSQL (all its processes) and
    Redis. PostgreSQL's backends are listed again at the end (the pool opens connections
    lazily); one that started in the window counts whole, one that ended is lost."""

    def __init__(self, web_pids: list[int], **others: list[int]):
        self.web_pids = web_pids
        self.others = others  # e.g. client=[os.getpid()], viewers=[…]

    def sample(self) -> dict[tuple[str, int], float | None]:
        groups = {"web": self.web_pids, **service_pids(), **self.others}
        return {(name, pid): _cpu_or_none(pid) for name, pids in groups.items() for pid in pids}

    def start(self) -> None:
        self.before = self.sample()

    def stop(self) -> dict[str, float]:
        """CPU seconds over the window: "web", "web:<pid>", "postgres", "redis", others."""
        used: dict[str, float] = {}
        for (name, pid), value in self.sample().items():
            if value is None:
                continue
            spent = value - (self.before.get((name, pid)) or 0.0)
            used[name] = used.get(name, 0.0) + spent
            if name == "web":
                used[f"web:{pid}"] = spent
        return used


class ClusterServer(LiveServer):
    """`scripts/cluster/serve.py`: `processes` daphne processes behind one port
    (SO_REUSEPORT) and `run_workers` run workers. `process` is the supervisor."""

    processes: int = 2
    run_workers: int = 0

    def start(self) -> None:
        run_dir = self.data_dir / "run"
        run_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.data_dir / "daphne.log", "ab")  # noqa: SIM115 — lives with the process
        self.process = subprocess.Popen(
            [
                sys.executable,
                "scripts/cluster/serve.py",
                *("--workers", str(self.processes), "--run-workers", str(self.run_workers)),
                *("--host", "127.0.0.1", "--port", str(self.port)),
                *("--run-dir", str(run_dir), "--application", self.application),
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.wait_for_every_process()

    def web_pids(self) -> list[int]:
        run_dir = self.data_dir / "run"
        return [int((run_dir / f"web-{n}.pid").read_text()) for n in range(1, self.processes + 1)]

    def wait_for_every_process(self) -> None:
        """Until /healthz has answered from each process (the kernel spreads new
        connections over them by their source port, so fresh ones reach them all)."""
        seen: set[int] = set()
        deadline = time.monotonic() + 60
        while len(seen) < self.processes:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"serve.py exited: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(seen)} processes answered: {self.log_tail()}")
            try:
                seen.add(httpx.get(self.url + "/healthz", timeout=2).json()["pid"])
            except (httpx.HTTPError, ValueError, KeyError):
                time.sleep(0.1)


class InstrumentedClusterServer(ClusterServer):
    application = InstrumentedServer.application


@contextlib.contextmanager
def bench_cluster_services() -> Iterator[None]:
    """PostgreSQL and Redis on the benchmarks' ports for the block; stopped afterwards
    unless they were already running."""
    env = {**os.environ, **BENCH_CLUSTER_ENV}
    running = subprocess.run([str(SERVICES), "status"], env=env).returncode == 0
    if not running:
        cluster_services("start")
    try:
        yield
    finally:
        if not running:
            cluster_services("stop")


@dataclass
class ClusterBench(Bench):
    """Bench on PostgreSQL + Redis (run inside `bench_cluster_services()`).

    `processes` web processes behind one port (serve.py); or, with `split=True`, two
    daphne processes on two ports: `writer` takes the API requests, `server` (the
    viewers') gets the frames through Redis only — the kernel cannot be told which
    SO_REUSEPORT process takes a connection, two ports can."""

    processes: int = 2
    split: bool = False
    writer: LiveServer = field(init=False)

    def __enter__(self) -> ClusterBench:
        self.tmp = Path(tempfile.mkdtemp(prefix="chatui-bench-cluster-"))
        self.database = database = create_postgres_database(BENCH_POSTGRES)
        env = {"CHATUI_MAX_SOCKETS_PER_USER": "1000000", "REDIS_URL": BENCH_REDIS}
        instrumented = self.stamps or bool(self.experiment)
        if instrumented:
            env["CHATUI_BENCH_STAMPS"] = str(self.stamps_path)  # both processes append
            if self.experiment:
                env["CHATUI_BENCH_EXPERIMENT"] = self.experiment
        if self.split:
            kind = InstrumentedServer if instrumented else LiveServer
            self.writer = kind(self.tmp / "writer", database_url=database, extra_env=env)
            self.server = kind(self.tmp / "viewer", database_url=database, extra_env=env)
        else:
            kind = InstrumentedClusterServer if instrumented else ClusterServer
            self.server = self.writer = kind(
                self.tmp / "data", database_url=database, extra_env=env
            )
            self.server.processes = self.processes
        self.writer.prepare()
        self.server.token = self.writer.token
        self.writer.start()
        if self.server is not self.writer:
            self.server.data_dir.mkdir(parents=True, exist_ok=True)
            self.server.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.server.stop()
            self.writer.stop()
        finally:
            drop_postgres_database(self.database)
            if not self.keep:
                shutil.rmtree(self.tmp, ignore_errors=True)

    def api(self, **kwargs) -> httpx.Client:
        """The API of the writer's process (the viewers' one with `split=False`)."""
        return httpx.Client(
            base_url=self.writer.url + "/api/v1",
            headers={"Authorization": f"Bearer {self.writer.token}"},
            timeout=30,
            **kwargs,
        )
