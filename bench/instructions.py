"""Instructions per ingest request, counted by callgrind: a cost that load does not move.

    .venv/bin/python bench/instructions.py [--modes single,floor,batch,stream] [--requests 300]

On this 2-core machine CPU time per request moves by ±15 % between runs a minute apart,
and by 2× between days (P2's floor, the same code: 0.42 against 0.78 ms a request),
more than most changes to the write path save. Valgrind's callgrind counts the
instructions daphne executes instead: the same code and the same requests give the same
count to within a few per cent whatever else runs, so a change can be measured while
other work runs beside it.

daphne runs under `valgrind --tool=callgrind` (~50× slower; startup takes a minute or
two). The requests are P2's (`common.EventStream`, through httpx with keep-alive), sent
one at a time from one thread to one conversation with one viewer socket open, so frames
are really rendered and sent. Counting starts after `--warmup` requests (imports, caches
and the first connection are not counted) and covers `--requests` requests. Reported
per request: all of daphne's threads, and its main thread (the event loop: HTTP parsing,
frames to viewers) on its own. Modes as P2's: `single` (one event a request), `floor`
(the same POST without its bearer token: a 401 before any database work), `batch`
(`--batch` events a request; also per event), and `stream`: P5's streamed answer (one
`agent.message.delta` of ~6 characters a request, `--deltas` of them to one message),
its first and its last `--requests` deltas counted apart. Equal counts mean a delta
costs O(delta); P5's CPU figures for the same windows move by ±20 % between runs.

Under valgrind one thread runs at a time and everything is slower, so what depends on
timing (frames merged in a consumer's tick) can differ from a real run: compare counts
with counts, not with P2's milliseconds.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from common import Bench, EventStream, ViewerPool, machine_line, stream_tokens, table


def callgrind(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], check=True, capture_output=True, timeout=300)


def totals(prefix: str) -> dict[str, int]:
    """Instructions per thread in the dumps `prefix`<thread>: {thread number: Ir}."""
    found: dict[str, int] = {}
    for path in glob.glob(prefix + "*"):
        thread = path.removeprefix(prefix)
        for line in Path(path).read_text(errors="replace").splitlines():
            if line.startswith(("summary:", "totals:")):
                found[thread] = int(line.split()[1])
                break
    return found


def session_cookie(bench: Bench) -> str:
    """A logged-in session made outside daphne: under valgrind the login form's password
    hashing alone would take minutes."""
    made = bench.server.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; from django.test import Client;"
        "c = Client(); c.force_login(User.objects.get(username='e2e'));"
        "print(c.cookies['sessionid'].value)",
    )
    return f"sessionid={made.strip().splitlines()[-1]}"


def counted(bench: Bench, out_dir: Path, name: str, send: Callable[[], None]) -> dict[str, int]:
    """Instructions per daphne thread while `send()` runs and its frames go out, kept as
    `out_dir/callgrind.<name>-<thread>` (for callgrind_annotate)."""
    callgrind("--zero", str(bench.pid))
    send()
    time.sleep(1)  # the last frames are sent (they are part of the cost)
    callgrind("--dump", str(bench.pid))
    # A dump is one file per thread, callgrind.out.<pid>.<dump number>-<thread>. The
    # file without a dump number is written at exit.
    prefix = str(out_dir / f"callgrind.{name}")
    for path in glob.glob(str(out_dir / f"callgrind.out.{bench.pid}.*-*")):
        thread = path.rsplit("-", 1)[-1]
        shutil.move(path, f"{prefix}-{thread}")
    return totals(prefix + "-")


def run_mode(bench: Bench, cookie: str, mode: str, args, out_dir: Path) -> dict:
    batch = args.batch if mode == "batch" else 1
    conversation = bench.new_conversation(f"instructions {mode}")
    stream = EventStream(f"instructions-{mode}")
    url = f"/conversations/{conversation}/events"
    expected = 401 if mode == "floor" else 200

    def post(client, count: int) -> None:
        for _ in range(count):
            events = stream.take(batch)
            response = client.post(url, json={"events": events} if mode == "batch" else events[0])
            if response.status_code != expected:
                raise RuntimeError(f"{mode}: {response.status_code} {response.text[:200]}")

    with ViewerPool(bench, [f"/ws/conversations/{conversation}/?after=0"], cookie) as pool:
        with bench.api(timeout=120) as client:
            if mode == "floor":
                del client.headers["Authorization"]
            post(client, args.warmup)
            time.sleep(1)  # the warm-up's frames and list rows are sent
            per_thread = counted(bench, out_dir, mode, lambda: post(client, args.requests))
        pool.stop()
    return {
        "mode": mode,
        "batch": batch,
        "requests": args.requests,
        "all": sum(per_thread.values()) / args.requests,
        "main": per_thread.get("01", 0) / args.requests,
        "threads": len(per_thread),
    }


def run_stream(bench: Bench, cookie: str, args, out_dir: Path) -> list[dict]:
    """P5's streamed answer, one delta a request: its first and its last `--requests`
    deltas of `--deltas`, counted apart. Flat (O(delta)) means equal counts; unlike CPU
    time, a count does not move with the machine, so a small growth shows."""
    conversation = bench.new_conversation("instructions stream")
    url = f"/conversations/{conversation}/events"
    texts = stream_tokens(args.deltas)
    window = args.requests
    if args.deltas < 2 * window:
        raise SystemExit("--deltas must be at least twice --requests")
    results = []

    def post(client, part: list[str]) -> None:
        for text in part:
            body = {"type": "agent.message.delta", "message_id": "stream", "delta": text}
            response = client.post(url, json=body)
            if response.status_code != 200:
                raise RuntimeError(f"stream: {response.status_code} {response.text[:200]}")

    with ViewerPool(bench, [f"/ws/conversations/{conversation}/?after=0"], cookie) as pool:
        with bench.api(timeout=120) as client:
            client.post(url, json={"type": "user.message", "content": "Stream."})
            parts = {
                "first": texts[:window],
                "middle": texts[window:-window],
                "last": texts[-window:],
            }
            for name, part in parts.items():
                if name == "middle":
                    post(client, part)
                    continue
                per_thread = counted(bench, out_dir, f"stream-{name}", partial(post, client, part))
                results.append(
                    {
                        "mode": f"stream, {name} {window} of {args.deltas} deltas",
                        "batch": 1,
                        "requests": window,
                        "all": sum(per_thread.values()) / window,
                        "main": per_thread.get("01", 0) / window,
                        "threads": len(per_thread),
                    }
                )
        pool.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="single,floor")
    parser.add_argument("--requests", type=int, default=300, help="counted requests per mode")
    parser.add_argument("--warmup", type=int, default=100, help="uncounted requests first")
    parser.add_argument("--batch", type=int, default=100, help="events per request in batch mode")
    parser.add_argument(
        "--deltas", type=int, default=3000, help="stream mode: the answer's deltas (P5's 3,000)"
    )
    parser.add_argument("--keep", metavar="DIR", help="keep the callgrind dumps in DIR")
    parser.add_argument(
        "--experiment",
        default="",
        help="bench.instrumented_asgi experiments (no-chain: P9's before, PERFORMANCE.md#p9-chain)",
    )
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("valgrind is not installed (apt-get install -y valgrind)")

    print("Instructions per ingest request (callgrind) ·", machine_line())
    if args.experiment:
        print("experiment:", args.experiment)
    out_dir = Path(args.keep or tempfile.mkdtemp(prefix="chatui-callgrind-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    launcher = (
        "valgrind",
        "--tool=callgrind",
        "--separate-threads=yes",
        "--dump-instr=no",
        f"--callgrind-out-file={out_dir}/callgrind.out.%p",
    )
    results = []
    try:
        with Bench(launcher=launcher, experiment=args.experiment) as bench:
            cookie = session_cookie(bench)
            for mode in args.modes.split(","):
                if mode == "stream":
                    results.extend(run_stream(bench, cookie, args, out_dir))
                else:
                    results.append(run_mode(bench, cookie, mode, args, out_dir))
    finally:
        for leftover in glob.glob(str(out_dir / "callgrind.out.*")):
            os.remove(leftover)  # the final dump at exit: startup and shutdown, not requests
        if not args.keep:
            shutil.rmtree(out_dir, ignore_errors=True)

    rows = []
    for r in results:
        label = {"floor": "floor (401, no DB)", "single": "single (1/req)"}.get(
            r["mode"], r["mode"] if r["mode"].startswith("stream") else f"batch ({r['batch']}/req)"
        )
        per_event = r["all"] / r["batch"] if r["mode"] == "batch" else ""
        rows.append(
            [label, r["requests"], r["all"] / 1e3, r["main"] / 1e3, per_event, r["threads"]]
        )
    print(
        table(
            [
                "mode",
                "requests",
                "k instructions/request, all threads",
                "k instructions/request, main thread",
                "per event",
                "threads",
            ],
            rows,
        )
    )
    if args.keep:
        print(f"dumps in {args.keep} (callgrind_annotate FILE)")


if __name__ == "__main__":
    main()
