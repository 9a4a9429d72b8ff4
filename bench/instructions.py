"""Instructions per ingest request, counted by callgrind: a cost that load does not move.

    .venv/bin/python bench/instructions.py [--modes single,floor,batch] [--requests 300]

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
(`--batch` events a request; also per event).

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
from pathlib import Path

from common import Bench, EventStream, ViewerPool, machine_line, table


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
            callgrind("--zero", str(bench.pid))
            post(client, args.requests)
            time.sleep(1)  # the last frames are sent (they are part of the cost)
            prefix = str(out_dir / f"callgrind.{mode}")
            callgrind("--dump", str(bench.pid))
        pool.stop()
    # A dump is one file per thread, callgrind.out.<pid>.<dump number>-<thread>: kept
    # under this mode's name (for callgrind_annotate). The file without a dump number
    # is written at exit.
    for path in glob.glob(str(out_dir / f"callgrind.out.{bench.pid}.*-*")):
        thread = path.rsplit("-", 1)[-1]
        shutil.move(path, f"{prefix}-{thread}")
    per_thread = totals(prefix + "-")
    main = per_thread.get("01", 0)
    return {
        "mode": mode,
        "batch": batch,
        "requests": args.requests,
        "all": sum(per_thread.values()) / args.requests,
        "main": main / args.requests,
        "threads": len(per_thread),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="single,floor")
    parser.add_argument("--requests", type=int, default=300, help="counted requests per mode")
    parser.add_argument("--warmup", type=int, default=100, help="uncounted requests first")
    parser.add_argument("--batch", type=int, default=100, help="events per request in batch mode")
    parser.add_argument("--keep", metavar="DIR", help="keep the callgrind dumps in DIR")
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("valgrind is not installed (apt-get install -y valgrind)")

    print("Instructions per ingest request (callgrind) ·", machine_line())
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
        with Bench(launcher=launcher) as bench:
            cookie = session_cookie(bench)
            for mode in args.modes.split(","):
                results.append(run_mode(bench, cookie, mode, args, out_dir))
    finally:
        for leftover in glob.glob(str(out_dir / "callgrind.out.*")):
            os.remove(leftover)  # the final dump at exit: startup and shutdown, not requests
        if not args.keep:
            shutil.rmtree(out_dir, ignore_errors=True)

    rows = []
    for r in results:
        label = "floor (401, no DB)" if r["mode"] == "floor" else f"{r['mode']} ({r['batch']}/req)"
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
