"""P2: ingest through the HTTP API — persisted, projected and broadcast.

    .venv/bin/python bench/p2_ingest_throughput.py [--threads 4] [--seconds 10]

Each client thread owns one conversation and plays a realistic agent session
into it (`common.EventStream`: user message, running/thinking statuses,
streamed deltas, step.completed with tool calls, tool started/progress/completed
pairs, a final answer and run completed), through httpx with keep-alive. Every
conversation has one viewer socket connected (in a helper process), so each
accepted ingest really renders and sends its frame. With `--rail` each viewer
also opens the list rows socket the conversation page's rail opens (one user:
each rail gets every conversation's rows); without it no list is open, and chatui
renders no rows (chatui.live.broadcast.may_have_members). Two modes:

  batch   POST {"events": [...100 events...]}      target ≥ 2,000 events/s
  single  POST one event per request                target ≥ 400 requests/s
  floor   (reference) the single-event POST without its bearer token: Django on
          daphne answers 401 before touching the database, so this is the most
          requests/s this stack serves per process, whatever ingest costs

Each mode runs `--warmup` seconds unmeasured, then `--seconds` measured (or until
`--max-requests`). Reported: events/s, requests/s, request latency, the CPU daphne
(all threads) and this client process used per event, and daphne's main thread (the
event loop: HTTP parsing, the ASGI side, frames to viewers) per request and as a share
of daphne's CPU.

`--cluster` (docs/SCALING.md, docs/PERFORMANCE.md#p2 cluster row): single-event requests against
PostgreSQL + Redis (scripts/cluster/services.sh on the benchmarks' own ports,
var/bench-cluster), first one daphne process, then two behind one port
(scripts/cluster/serve.py, SO_REUSEPORT: the kernel spreads the client threads'
keep-alive connections and the viewers' sockets by source port, so use --threads 8
or more). Reported per run: events/s, latency, the CPU per event of the web
processes, PostgreSQL and Redis, each web process's share; then the ratio
two processes / one.

    .venv/bin/python bench/p2_ingest_throughput.py --cluster --threads 8 --seconds 20
"""

from __future__ import annotations

import argparse
import os
import threading
import time

from common import (
    Bench,
    ClusterBench,
    CpuMeter,
    EventStream,
    ViewerPool,
    bench_cluster_services,
    cpu_seconds,
    load_threads,
    loadavg,
    machine_line,
    main_thread_cpu_seconds,
    maybe_py_spy,
    measure_window,
    own_cpu_seconds,
    summary,
    table,
)


def run_mode(bench: Bench, cookie: str, mode: str, args, profile: str | None) -> dict:
    batch = args.batch if mode == "batch" else 1
    conversations = [bench.new_conversation(f"p2 {mode} {n}") for n in range(args.threads)]
    paths = [f"/ws/conversations/{c}/?after=0" for c in conversations]
    if args.rail:  # each viewer's page also lists the conversations (the rail's socket)
        paths += ["/ws/rows/"] * len(conversations)
    streams = [EventStream(f"{mode}{n}") for n in range(args.threads)]
    latencies: list[list[float]] = [[] for _ in conversations]
    accepted = [0] * args.threads
    requests = [0] * args.threads
    errors: list[str] = []
    measuring = threading.Event()
    stop = threading.Event()

    def worker(n: int) -> None:
        url = f"/conversations/{conversations[n]}/events"
        floor = mode == "floor"
        with bench.api() as client:
            if floor:  # the same request without its token: Django answers 401 before any query
                del client.headers["Authorization"]
            while not stop.is_set():
                events = streams[n].take(batch)
                body = {"events": events} if mode == "batch" else events[0]
                start = time.perf_counter()
                response = client.post(url, json=body)
                took = time.perf_counter() - start
                if response.status_code != (401 if floor else 200):
                    errors.append(f"{response.status_code} {response.text[:200]}")
                    return
                if measuring.is_set() and not stop.is_set():
                    latencies[n].append(took * 1000)
                    accepted[n] += 1 if floor else response.json()["accepted"]
                    requests[n] += 1
                    if sum(requests) >= args.max_requests:
                        stop.set()

    with ViewerPool(bench, paths, cookie) as pool:
        with load_threads(worker, args.threads, args.warmup, stop):
            with maybe_py_spy(bench.pid, profile, args.seconds, gil=args.gil):
                server_cpu, client_cpu = cpu_seconds(bench.pid), own_cpu_seconds()
                main_cpu = main_thread_cpu_seconds(bench.pid)
                elapsed = measure_window(measuring, stop, args.seconds)
                server_cpu = cpu_seconds(bench.pid) - server_cpu
                main_cpu = main_thread_cpu_seconds(bench.pid) - main_cpu
                client_cpu = own_cpu_seconds() - client_cpu
            load = loadavg()
        frames, closed = pool.stop()
    if errors:
        raise RuntimeError(f"{mode}: {errors[0]}")
    events = sum(accepted)
    mix: dict[str, int] = {}
    for stream in streams:
        for kind, count in stream.counts.items():
            mix[kind] = mix.get(kind, 0) + count
    return {
        "mode": mode,
        "batch": batch,
        "elapsed": elapsed,
        "events": events,
        "requests": sum(requests),
        "events_per_s": events / elapsed,
        "requests_per_s": sum(requests) / elapsed,
        "latency": summary([v for per in latencies for v in per]),
        "server_cpu_pct": 100 * server_cpu / elapsed,
        "server_cpu_ms_per_event": 1000 * server_cpu / max(events, 1),  # floor: per request
        "main_thread_cpu_ms_per_request": 1000 * main_cpu / max(sum(requests), 1),
        "main_thread_share": 100 * main_cpu / max(server_cpu, 1e-9),
        "client_cpu_pct": 100 * client_cpu / elapsed,
        "frames": (min(frames), max(frames)),
        "closed": len(closed),
        "mix": mix,
        "load": load,
    }


def run_cluster_mode(bench: ClusterBench, cookie: str, args) -> dict:
    """Single-event POSTs from `args.threads` threads (one conversation and one viewer
    socket each) for `args.seconds`, with the CPU of every server-side process."""
    conversations = [bench.new_conversation(f"p2 cluster {n}") for n in range(args.threads)]
    streams = [EventStream(f"cluster{n}") for n in range(args.threads)]
    latencies: list[float] = []
    errors: list[str] = []
    measuring, stop = threading.Event(), threading.Event()

    def worker(n: int) -> None:
        url = f"/conversations/{conversations[n]}/events"
        with bench.api() as client:
            while not stop.is_set():
                start = time.perf_counter()
                response = client.post(url, json=streams[n].take(1)[0])
                took = time.perf_counter() - start
                if response.status_code != 200:
                    errors.append(f"{response.status_code} {response.text[:200]}")
                    return
                if measuring.is_set() and not stop.is_set():
                    latencies.append(took * 1000)  # list.append is atomic under the GIL

    paths = [f"/ws/conversations/{c}/?after=0" for c in conversations]
    with ViewerPool(bench, paths, cookie) as pool:
        meter = CpuMeter(bench.server.web_pids(), client=[os.getpid()], viewers=[pool.process.pid])
        with load_threads(worker, args.threads, args.warmup, stop):
            meter.start()
            elapsed = measure_window(measuring, stop, args.seconds)
            cpu = meter.stop()
            load = loadavg()
        frames, closed = pool.stop()
    if errors:
        raise RuntimeError(f"cluster: {errors[0]}")
    events = len(latencies)
    return {
        "processes": bench.server.processes,
        "elapsed": elapsed,
        "events": events,
        "events_per_s": events / elapsed,
        "latency": summary(latencies),
        "cpu_ms_per_event": {k: 1000 * v / max(events, 1) for k, v in cpu.items()},
        "cpu_pct": {k: 100 * v / elapsed for k, v in cpu.items()},
        "frames": (min(frames), max(frames)),
        "closed": len(closed),
        "load": load,
    }


def model_bound(one: dict, processes: int, cores: int) -> float:
    """The capacity model's events/s for `processes` web processes on `cores` cores,
    from the one-process run's CPU per event (docs/SCALING.md): each process is held
    to one core by its GIL, and every event also costs PostgreSQL, Redis and the load
    generator (client threads, viewer sockets) CPU on the same cores."""
    ms = one["cpu_ms_per_event"]
    web = ms["web"]
    others = sum(ms.get(name, 0.0) for name in ("postgres", "redis", "client", "viewers"))
    return min(processes * 1000 / web, cores * 1000 / (web + others))


def cluster_main(args) -> None:
    print("P2 cluster (PostgreSQL + Redis, single-event requests) ·", machine_line())
    results = []
    with bench_cluster_services():
        for processes in (1, 2):
            with ClusterBench(processes=processes) as bench:
                results.append(run_cluster_mode(bench, bench.session_cookie(), args))
    rows = []
    for r in results:
        ms, pct = r["cpu_ms_per_event"], r["cpu_pct"]
        shares = [round(v) for k, v in sorted(pct.items()) if k.startswith("web:")]
        rows.append(
            [
                r["processes"],
                r["events_per_s"],
                r["latency"]["p50"],
                r["latency"]["p99"],
                ms.get("web", 0.0),
                ms.get("postgres", 0.0),
                ms.get("redis", 0.0),
                " / ".join(f"{v}%" for v in shares),
                ms.get("client", 0.0) + ms.get("viewers", 0.0),
                model_bound(results[0], r["processes"], os.cpu_count() or 1),
            ]
        )
    print(
        table(
            [
                "web processes",
                "events/s",
                "p50 ms",
                "p99 ms",
                "web CPU ms/event",
                "PostgreSQL ms/event",
                "Redis ms/event",
                "CPU per web process",
                "load generator ms/event",
                "model events/s",
            ],
            rows,
        )
    )
    for r in results:
        print(
            f"{r['processes']} process(es): {r['events']} events over {r['elapsed']:.1f} s; "
            f"viewer frames min/max {r['frames']}, viewers closed {r['closed']}; load {r['load']}"
        )
    one, two = results[0]["events_per_s"], results[1]["events_per_s"]
    cores = os.cpu_count() or 1
    bound = model_bound(results[0], 2, cores) / model_bound(results[0], 1, cores)
    print(
        f"two processes / one: {two / one:.2f}× measured, {bound:.2f}× the model's bound "
        f"on {cores} otherwise idle cores (docs/PERFORMANCE.md#p2 cluster: ≥ 1.6×)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="batch,single,floor")
    parser.add_argument("--threads", type=int, default=4, help="client threads (one conv each)")
    parser.add_argument("--batch", type=int, default=100, help="events per request in batch mode")
    parser.add_argument("--seconds", type=float, default=10, help="measured time per mode")
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--max-requests", type=int, default=20000)
    parser.add_argument(
        "--rail",
        action="store_true",
        help="each viewer also opens the rail's /ws/rows/ socket, as the conversation page "
        "does (then every list row is rendered and sent; without it, none is rendered)",
    )
    parser.add_argument("--py-spy", metavar="PREFIX", help="profile daphne: PREFIX-<mode>.txt")
    parser.add_argument("--gil", action="store_true", help="py-spy: the GIL holder only (CPU)")
    parser.add_argument(
        "--experiment",
        default="",
        help="bench.instrumented_asgi experiments (writer-profile: cProfile of the writer's "
        "work per events POST; the temporary folder is kept for its .prof)",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="PostgreSQL + Redis, single-event requests, one then two web processes",
    )
    args = parser.parse_args()
    if args.cluster:
        cluster_main(args)
        return

    print("P2 ingest throughput ·", machine_line())
    results = []
    with Bench(experiment=args.experiment, keep=bool(args.experiment)) as bench:
        cookie = bench.session_cookie()
        for mode in args.modes.split(","):
            profile = f"{args.py_spy}-{mode}.txt" if args.py_spy else None
            results.append(run_mode(bench, cookie, mode, args, profile))

    rows = []
    for r in results:
        lat = r["latency"]
        label = "floor (401, no DB)" if r["mode"] == "floor" else f"{r['mode']} ({r['batch']}/req)"
        events_per_s = "" if r["mode"] == "floor" else r["events_per_s"]
        rows.append(
            [
                label,
                events_per_s,
                r["requests_per_s"],
                lat["p50"],
                lat["p95"],
                lat["p99"],
                r["server_cpu_pct"],
                r["server_cpu_ms_per_event"],
                r["main_thread_cpu_ms_per_request"],
                r["main_thread_share"],
                r["client_cpu_pct"],
            ]
        )
    print(
        table(
            [
                "mode",
                "events/s",
                "requests/s",
                "p50 ms",
                "p95 ms",
                "p99 ms",
                "daphne CPU %",
                "daphne CPU ms/req-or-event",
                "main thread ms/req",
                "main thread % of daphne CPU",
                "client CPU %",
            ],
            rows,
        )
    )
    for r in results:
        print(
            f"{r['mode']}: {r['events']} events in {r['requests']} requests over "
            f"{r['elapsed']:.1f} s; viewer frames min/max {r['frames']}, viewers closed "
            f"{r['closed']}; load {r['load']}; mix {r['mix']}"
        )


if __name__ == "__main__":
    main()
