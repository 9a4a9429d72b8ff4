"""P1: `agent.tool.started` accepted → tool card in a real Chromium DOM.

    .venv/bin/python bench/p1_card_latency.py [--events 100] [--viewers 1,100]

One real Chromium page (Debian's /usr/bin/chromium through Playwright) logged in
(session from the real login form) shows a conversation. A MutationObserver in
the page stamps `performance.timeOrigin + performance.now()` when each
`[data-tool-call-id]` element first enters the document (and again at the next
animation frame). The script posts `agent.tool.started` events, one per request
on a keep-alive connection, 50–100 ms apart, and notes `time.time()` just before
each POST is sent and when its 200 is in (= accepted). The matching
`agent.tool.completed` follows halfway through the gap, and every `--batch` tools
an assistant message closes the tool batch, as a real agent would. With
`--viewers 100` the other 99 viewers are plain WebSocket clients (session cookie
+ Origin, frames read and counted) in a helper process; they join the
conversation's group before the page, so the page is served last (the in-memory
layer delivers in join order); the latency is measured in the one real page.

"Accepted" is when the event's transaction commits. daphne runs
`bench.instrumented_asgi` (chatui's app unchanged, plus a receiver of the app's
own `events_ingested` signal, sent in on_commit, that logs `time.time()` before
the broadcaster runs and after it returns; `--plain` runs config.asgi alone).
Because the server broadcasts on commit *before* it answers the POST, the card
can beat the 200 to the client, so more reference points are reported:
  committed → card            P1 as specified;
  200 received → card         negative when the card wins;
  POST sent → card            what an agent sees end to end;
  server ingest start → card  from `Event.received_at` (set before the ingest
                              transaction; read back through the events API as
                              the event's timestamp, since the bench posts none);
and the server-side split: ingest start → commit → broadcast returned → 200 in.

`--cluster` (docs/SCALING.md, docs/PERFORMANCE.md#p1 cluster row): PostgreSQL + Redis on the
benchmarks' own ports (scripts/cluster/services.sh, var/bench-cluster) and two daphne processes
on two ports sharing them: the POSTs go to one, the page and the other viewers are
served by the other, so every card crosses Redis. "daphne CPU" is then the viewers'
process.

Clocks: Python's `time.time()` and the page's `timeOrigin + now()` both come from
this machine's wall clock; their offset is measured by round trips through
Playwright (Python time before and after `page.evaluate(timeOrigin + now())`,
the shortest of 40 round trips wins, error ≤ half of it), before and after each
scenario, and the mean is subtracted.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import random
import shutil
import time
from pathlib import Path

from common import (
    Bench,
    ClusterBench,
    ViewerPool,
    bench_cluster_services,
    cpu_seconds,
    loadavg,
    machine_line,
    summary,
    table,
)

from tests.browser.conftest import CHROMIUM_ARGS  # common put the repository on sys.path
from tests.support.delivery import stored_events

OBSERVER = """() => {
  window.__cards = {};
  const cards = window.__cards;
  let lastMessage = null;  // when htmx got the socket message being swapped
  document.addEventListener('htmx:wsBeforeMessage', () => {
    lastMessage = performance.timeOrigin + performance.now();
  });
  const seen = (el, now) => {
    const id = el.getAttribute('data-tool-call-id');
    if (!id || cards[id]) return;
    const card = {dom: now, message: lastMessage, status: el.getAttribute('data-status')};
    cards[id] = card;
    requestAnimationFrame(() => { card.frame = performance.timeOrigin + performance.now(); });
  };
  new MutationObserver((records) => {
    const now = performance.timeOrigin + performance.now();
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType !== 1) continue;
        if (node.matches('[data-tool-call-id]')) seen(node, now);
        node.querySelectorAll('[data-tool-call-id]').forEach((el) => seen(el, now));
      }
    }
  }).observe(document.body, {childList: true, subtree: true});
  return true;
}"""


def calibrate(page, samples: int = 40) -> tuple[float, float]:
    """(page clock − Python clock, ± error) in seconds, from the fastest round trip."""
    best = None
    for _ in range(samples):
        before = time.time()
        page_now = page.evaluate("() => performance.timeOrigin + performance.now()") / 1000
        after = time.time()
        trip = after - before
        if best is None or trip < best[1]:
            best = (page_now - (before + after) / 2, trip)
    assert best is not None
    return best[0], best[1] / 2


SERIES = [
    ("commit_card", "committed → card in DOM (P1)"),
    ("commit_frame", "committed → next animation frame"),
    ("commit_message", "  committed → socket message in page"),
    ("message_card", "  socket message → card in DOM (htmx)"),
    ("accept_card", "200 received → card in DOM"),
    ("sent_card", "POST sent → card in DOM"),
    ("received_card", "server ingest start → card"),
    ("received_commit", "  server: ingest start → commit"),
    ("commit_broadcast", "  server: commit → broadcast returned"),
    ("broadcast_accept", "  broadcast returned → 200 received"),
]


def server_received(bench: Bench, conversation: str) -> dict[str, float]:
    """tool_call_id → when ingest began on the server (events posted without a
    timestamp get `received_at`, set before the transaction, as their timestamp)."""
    stamps: dict[str, float] = {}
    for event in stored_events(bench, conversation):
        if event["type"] == "agent.tool.started":
            moment = dt.datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00"))
            stamps[event["payload"]["tool_call_id"]] = moment.timestamp()
    return stamps


def start_page_profile(context, page):
    """Chromium's own sampling profiler on the page (CDP), 50 µs a sample: which of the
    page's functions (and the layouts they force) the frames' swaps spend their time in."""
    context.browser.start_tracing(page=page, categories=["devtools.timeline"])
    session = context.new_cdp_session(page)
    session.send("Profiler.enable")
    session.send("Profiler.setSamplingInterval", {"interval": 50})
    session.send("Profiler.start")
    return session


def write_page_profile(session, browser, path: str) -> None:
    """The profile, and beside it Chromium's timeline trace (`.trace.json`): the style
    recalculations and layouts, each with how long it took and how many elements."""
    profile = session.send("Profiler.stop")["profile"]
    Path(path).write_text(json.dumps(profile))
    Path(path).with_suffix(".trace.json").write_bytes(browser.stop_tracing())
    print(f"page CPU profile: {path} (bench/cpuprofile_top.py {path})")


def run_scenario(bench: Bench, browser, cookie: str, viewers: int, args) -> dict:
    conversation = bench.new_conversation(f"p1 {viewers} viewers")
    run = "p1"
    bench.server.post_events(
        conversation,
        [
            {"type": "user.message", "content": "Run the checks.", "run_id": run},
            {"type": "agent.status", "status": "running", "run_id": run},
        ],
    )
    pool = None

    def start_pool() -> None:
        nonlocal pool
        if viewers > 1:
            after = bench.last_seq(conversation)
            path = f"/ws/conversations/{conversation}/?after={after}"
            pool = ViewerPool(bench, [path] * (viewers - 1), cookie).__enter__()

    # The in-memory layer hands a frame to a group's consumers in the order they
    # joined: by default the real page joins last, so it is served last (worst case).
    if not args.page_first:
        start_pool()
    context = browser.new_context(
        viewport={"width": 1280, "height": 900},
        reduced_motion="reduce" if args.reduced_motion else "no-preference",
    )
    name, value = cookie.split("=", 1)
    context.add_cookies([{"name": name, "value": value, "url": bench.url}])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{bench.url}/c/{conversation}/")
    page.wait_for_function("() => window.__chatuiSocketOpen === true", timeout=15000)
    page.evaluate(OBSERVER)
    if args.page_first:
        start_pool()
    profiler = start_page_profile(context, page) if args.page_profile else None
    try:
        cpu_start, wall_start = cpu_seconds(bench.pid), time.perf_counter()
        wall_window = [time.time(), 0.0]
        offset_before, error_before = calibrate(page)
        sent, accepted, seqs = {}, {}, {}
        rng = random.Random(1)
        events_url = f"/conversations/{conversation}/events"
        with bench.api() as client:
            for index in range(-args.warmup, args.events):
                call = f"p1-{index}" if index >= 0 else f"warm{index}"
                gap = rng.uniform(args.gap_min, args.gap_max) / 1000
                body = {
                    "type": "agent.tool.started",
                    "run_id": run,
                    "tool_call_id": call,
                    "tool_name": ("read_file", "run_cmd", "web_search")[index % 3],
                    "args": {"path": f"src/module_{index}.py"},
                }
                t_sent = time.time()
                response = client.post(events_url, json=body)
                t_accepted = time.time()
                if response.status_code != 200 or response.json()["accepted"] != 1:
                    raise RuntimeError(f"POST failed: {response.status_code} {response.text}")
                if index >= 0:
                    sent[call], accepted[call] = t_sent, t_accepted
                    seqs[call] = response.json()["last_seq"]
                time.sleep(gap / 2)
                client.post(
                    events_url,
                    json={
                        "type": "agent.tool.completed",
                        "run_id": run,
                        "tool_call_id": call,
                        "result": f"ok: {index} lines read",
                        "duration_ms": 20,
                    },
                ).raise_for_status()
                if (index + 1) % args.batch == 0:
                    client.post(
                        events_url,
                        json={
                            "type": "agent.step.completed",
                            "run_id": run,
                            "message_id": f"p1-text-{index}",
                            "content": f"Checked {index + 1} files so far; continuing.",
                        },
                    ).raise_for_status()
                time.sleep(gap / 2)
        daphne_cpu = (cpu_seconds(bench.pid) - cpu_start) / (time.perf_counter() - wall_start)
        wall_window[1] = time.time()
        load_after = loadavg().split()[0]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            cards = page.evaluate("() => window.__cards")
            if all(f"p1-{i}" in cards for i in range(args.events)):
                break
            time.sleep(0.1)
        page.wait_for_timeout(100)  # let the last animation frame stamp land
        cards = page.evaluate("() => window.__cards")
        if profiler is not None:
            write_page_profile(profiler, browser, f"{args.page_profile}-{viewers}.cpuprofile")
        offset_after, error_after = calibrate(page)
        socket_open = page.evaluate("() => window.__chatuiSocketOpen === true")
        received = server_received(bench, conversation)
    finally:
        frames = closed = None
        if pool is not None:
            frames, closed = pool.stop()
            pool.__exit__(None, None, None)
        context.close()

    offset = (offset_before + offset_after) / 2
    stamps = bench.read_stamps()
    key = conversation.replace("-", "")
    missing = [c for c in sent if c not in cards]
    series: dict[str, list[float]] = {name: [] for name, _ in SERIES}
    not_running = 0
    rows: list[dict] = []
    pauses = bench.gc_pauses()
    for call, t_sent in sent.items():
        card = cards.get(call)
        if card is None:
            continue
        dom = card["dom"] / 1000 - offset
        committed = stamps.get(("C", key, seqs[call]))
        broadcast_done = stamps.get(("B", key, seqs[call]))
        series["commit_card"].append((dom - committed) * 1000 if committed else None)
        if card.get("message") and committed:
            series["commit_message"].append((card["message"] / 1000 - offset - committed) * 1000)
            series["message_card"].append(card["dom"] - card["message"])
        if card.get("frame") and committed:
            series["commit_frame"].append((card["frame"] / 1000 - offset - committed) * 1000)
        series["accept_card"].append((dom - accepted[call]) * 1000)
        series["sent_card"].append((dom - t_sent) * 1000)
        if call in received:
            series["received_card"].append((dom - received[call]) * 1000)
            if committed:
                series["received_commit"].append((committed - received[call]) * 1000)
        if committed and broadcast_done:
            series["commit_broadcast"].append((broadcast_done - committed) * 1000)
            series["broadcast_accept"].append((accepted[call] - broadcast_done) * 1000)
        if card["status"] != "running":
            not_running += 1
        if committed:
            rows.append(
                {
                    "call": call,
                    "seq": seqs[call],
                    "committed_to_card_ms": (dom - committed) * 1000,
                    "commit_to_broadcast_ms": ((broadcast_done or committed) - committed) * 1000,
                    "sent_to_card_ms": (dom - t_sent) * 1000,
                    "gc_pause_ms": sum(
                        took
                        for start, took, _generation in pauses
                        if committed - 0.001 <= start + took / 1000 and start <= dom
                    ),
                }
            )
    if args.dump:
        with open(f"{args.dump}-{viewers}.json", "w") as out:
            json.dump(rows, out, indent=1)
    return {
        "viewers": viewers,
        "series": {
            name: summary([v for v in values if v is not None])
            for name, values in series.items()
            if any(v is not None for v in values)
        },
        "missing": len(missing),
        "not_running": not_running,
        "offset_ms": (offset_before * 1000, offset_after * 1000),
        "offset_err_ms": max(error_before, error_after) * 1000,
        "page_errors": errors,
        "socket_open": socket_open,
        "other_viewers_frames": (min(frames), max(frames)) if frames else None,
        "other_viewers_closed": len(closed) if closed else 0,
        "load_after": load_after,
        "gc": (
            len(during := [p for p in pauses if wall_window[0] <= p[0] <= wall_window[1]]),
            sum(p[1] for p in during),
            sum(1 for r in rows if r["gc_pause_ms"] > 0),
            max((p[1] for p in during if p[2] == 2), default=0.0),
        ),
        "daphne_cpu": daphne_cpu,
    }


def make_bench(args) -> Bench:
    if args.cluster:
        return ClusterBench(stamps=not args.plain, experiment=args.experiment, split=True)
    return Bench(stamps=not args.plain, experiment=args.experiment)


def bench_services(cluster: bool) -> contextlib.AbstractContextManager[None]:
    """PostgreSQL and Redis for `--cluster`; nothing otherwise."""
    return bench_cluster_services() if cluster else contextlib.nullcontext()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100, help="tool cards per scenario")
    parser.add_argument("--viewers", default="1,100", help="comma-separated viewer counts")
    parser.add_argument("--gap-min", type=float, default=50, help="ms between started events")
    parser.add_argument("--gap-max", type=float, default=100)
    parser.add_argument("--batch", type=int, default=5, help="tools per batch before a text")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured cards first")
    parser.add_argument(
        "--page-first",
        action="store_true",
        help="let the page join the group before the other viewers (served first: best case)",
    )
    parser.add_argument("--py-spy", metavar="OUT", help="profile daphne during the last scenario")
    parser.add_argument(
        "--experiment",
        default="",
        help="opt-in bench.instrumented_asgi experiment(s), e.g. frame-dispatch",
    )
    parser.add_argument(
        "--page-profile",
        metavar="PREFIX",
        help="record the page's CPU profile (Chromium's profiler) to PREFIX-N.cpuprofile",
    )
    parser.add_argument("--dump", metavar="PREFIX", help="write per-card timings to PREFIX-N.json")
    parser.add_argument(
        "--plain",
        action="store_true",
        help="run config.asgi itself, without bench.instrumented_asgi's commit stamps",
    )
    parser.add_argument(
        "--reduced-motion",
        action="store_true",
        help="the page prefers reduced motion: no spinner animates, so the browser makes a "
        "frame only when something changes (an animation aligns every frame to the display's)",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="PostgreSQL + Redis, the page on another daphne process than the writer",
    )
    args = parser.parse_args()
    from common import maybe_py_spy
    from playwright.sync_api import sync_playwright

    print("P1 tool card latency ·", machine_line())
    if args.cluster:
        print("CLUSTER: PostgreSQL + Redis; POSTs to process A, page and viewers on process B")
    results = []
    if args.experiment:
        print(
            f"EXPERIMENT {args.experiment}: not the app as it is (see bench/instrumented_asgi.py)"
        )
    with (
        bench_services(args.cluster),
        make_bench(args) as bench,
        sync_playwright() as playwright,
    ):
        executable = shutil.which("chromium") or "/usr/bin/chromium"
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        cookie = bench.session_cookie()
        try:
            counts = [int(v) for v in args.viewers.split(",")]
            for n, viewers in enumerate(counts):
                seconds = args.events * (args.gap_min + args.gap_max) / 2000 + 5
                out = args.py_spy if n == len(counts) - 1 else None
                with maybe_py_spy(bench.pid, out, seconds):
                    results.append(run_scenario(bench, browser, cookie, viewers, args))
        finally:
            browser.close()

    rows = []
    for result in results:
        for key, label in SERIES:
            s = result["series"].get(key)
            if s:
                rows.append(
                    [
                        result["viewers"],
                        label,
                        s["n"],
                        s["min"],
                        s["p50"],
                        s["p95"],
                        s["p99"],
                        s["max"],
                    ]
                )
    print(table(["viewers", "latency (ms)", "n", "min", "p50", "p95", "p99", "max"], rows))
    for result in results:
        print(
            f"viewers={result['viewers']}: missing cards {result['missing']}, "
            f"first seen not running {result['not_running']}, "
            f"clock offset page−python {result['offset_ms'][0]:+.2f}/"
            f"{result['offset_ms'][1]:+.2f} ms "
            f"(±{result['offset_err_ms']:.2f}), page errors {len(result['page_errors'])}, "
            f"page socket open {result['socket_open']}, "
            f"other viewers' frames min/max {result['other_viewers_frames']}, "
            f"closed {result['other_viewers_closed']}, "
            f"daphne CPU {100 * result['daphne_cpu']:.0f}%, "
            f"daphne GC pauses ≥2 ms {result['gc'][0]} ({result['gc'][1]:.0f} ms in all; "
            f"longest full collection {result['gc'][3]:.0f} ms; "
            f"{result['gc'][2]} cards waited on one), "
            f"load after {result['load_after']}"
        )


if __name__ == "__main__":
    main()
