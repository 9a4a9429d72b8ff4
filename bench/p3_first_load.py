"""P3: first load of a long conversation — server time, independent of history length.

    .venv/bin/python bench/p3_first_load.py [--sizes 200,1000,5000] [--requests 40] [--giant 2500]
    .venv/bin/python bench/p3_first_load.py --rich --giant 0 --huge 0    # P9

`--rich` (P9): every tool result renders rich (docs/rendering.md#rich-output): the
read_file call returns a Python file (G19), the other by turns a coloured test run (G17),
a diff (G18), 12 records (G20) or an MCP result with a PNG chart, a link and structured
content (G21; the demo's `chart_cities`). The first (cold) load of each size is printed too.

Builds one conversation per size through the ingest API in big batches. Each
agent run is: user.message, status running, step.completed (Markdown prose plus
two tool calls), tool.started/tool.completed for both calls (multi-line
results), a final Markdown answer, status completed — 5 messages per run, so a
conversation of N messages has N/5 runs. Then, logged in with a session cookie
(through the real login form), it times `GET /c/<id>/` on a keep-alive
connection, round-robin over the sizes so load drift hits all alike, after a
few unmeasured warm-up loads. Also timed: the "load earlier" fragment
(`GET /c/<id>/earlier?before=…`) of the largest conversation, and P3's giant-batch
case — 5,000 messages that are 2,500 tool calls with no text between them
(docs/rendering.md#long-transcripts: the page shows the batch's latest 200 entries) — with its "show
N earlier calls" fragment. For the giant rows, "messages in HTML" counts the tool entries rendered.

And issue 28's case (`--huge 60 --huge-bytes 900000`): one batch of 60 tool results of
900 KB each. Its first load (cold: nothing presented yet in the process) and the loads
after it are timed apart, with the page's bytes and daphne's RSS before and after; while
they run, another reader loads the 200-message conversation in a loop, and its times
say how long other users wait meanwhile.

Why it is long: one script per figure (docs/PERFORMANCE.md), and P3 has four cases that
share its conversations and its timed loop (the usual runs, the giant batch, issue 28's huge
results, P9's rich results).

Server time is measured client-side on loopback: from sending the request to
having the whole body (includes loopback HTTP and httpx, ~1 ms). The daphne CPU
column is daphne's own CPU time (all threads, /proc/<pid>/stat, 10 ms ticks)
divided by the number of requests: Django's own cost per page without the
client.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import threading
import time
from functools import cache
from pathlib import Path

import httpx
from common import (
    ASSISTANT_TEXT,
    REQUEST_COLUMNS,
    TOOL_OUTPUT,
    Bench,
    cpu_seconds,
    loadavg,
    machine_line,
    request_row,
    rss_kb,
    summary,
    table,
)

MESSAGES_PER_RUN = 5

# P9 (`--rich`): every tool result renders rich (docs/rendering.md#rich-output) — a Python
# file highlighted (G19), and by turns a coloured test run (G17), a diff (G18), records
# (G20) or an MCP result with a chart (G21) — each different per run, so none is a copy of
# another's text.
RICH_SOURCE = "\n".join(
    [
        '"""Module {run}: parsing and checks."""',
        "",
        "from dataclasses import dataclass",
        "",
        "",
        "@dataclass",
        "class Record{run}:",
        "    name: str",
        "    size: int = {run}",
        "",
        "    def check(self, limit: int = 80) -> bool:",
        '        """True when the record fits."""',
        "        return len(self.name) <= limit and self.size >= 0  # bounds",
        "",
        "",
        "def parse(text: str) -> list[Record{run}]:",
        '    return [Record{run}(part.strip()) for part in text.split(",") if part]',
    ]
    * 2
)
RICH_TERMINAL = "\n".join(
    [f"tests/test_m{{run}}.py::test_{i} \x1b[32mPASSED\x1b[0m [{i * 10}%]" for i in range(8)]
    + ["\x1b[1;32m===== 8 passed in 0.{run}s =====\x1b[0m"]
)
RICH_DIFF = (
    "--- a/src/m{run}.py\n+++ b/src/m{run}.py\n@@ -10,7 +10,8 @@\n context a\n context b\n"
    "-    return old_{run}(x)\n+    value = new_{run}(x)\n+    return value\n context c\n"
    " context d\n context e\n"
)


@cache
def _cities_chart():
    """The demo's MCP chart (chatui/agents/tools/charts.py: no Django in it), loaded by its
    path: importing it as a package would set up chatui.agents, and Django with it."""
    path = Path(__file__).resolve().parent.parent / "chatui" / "agents" / "tools" / "charts.py"
    spec = importlib.util.spec_from_file_location("bench_charts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.cities_chart


def rich_result(name: str, run: int) -> object:
    if name == "read_file":
        return RICH_SOURCE.replace("{run}", str(run))
    turn = run % 4
    if turn == 0:
        return RICH_TERMINAL.replace("{run}", str(run))
    if turn == 1:
        return RICH_DIFF.replace("{run}", str(run))
    if turn == 3:  # G21: an MCP result, its PNG (one per 8 runs) stored as an attachment
        return _cities_chart()(
            [{"city": f"city {i}", "population": (run % 8 + 1) * (i + 1)} for i in range(3)]
        )
    return [{"id": run * 100 + i, "name": f"user {i}", "logins": i * run} for i in range(12)]


#: Set by `--rich`.
RICH = False


def run_events(conversation_tag: str, run: int) -> list[dict]:
    run_id = f"{conversation_tag}-r{run}"
    calls = [
        {"id": f"{run_id}-t{n}", "name": name, "args": {"path": f"src/m{n}.py"}}
        for n, name in enumerate(("read_file", "run_cmd"))
    ]
    events = [
        {"type": "user.message", "run_id": run_id, "content": f"Please look at issue #{run}."},
        {"type": "agent.status", "run_id": run_id, "status": "running"},
        {
            "type": "agent.step.completed",
            "run_id": run_id,
            "message_id": f"{run_id}-a",
            "content": "I will read the module and run the tests.",
            "tool_calls": calls,
            "duration_ms": 900,
            "tokens": 150,
        },
    ]
    for call in calls:
        events.append(
            {
                "type": "agent.tool.started",
                "run_id": run_id,
                "tool_call_id": call["id"],
                "tool_name": call["name"],
                "args": call["args"],
            }
        )
        events.append(
            {
                "type": "agent.tool.completed",
                "run_id": run_id,
                "tool_call_id": call["id"],
                "result": rich_result(call["name"], run) if RICH else TOOL_OUTPUT,
                "duration_ms": 85,
            }
        )
    events += [
        {
            "type": "agent.step.completed",
            "run_id": run_id,
            "message_id": f"{run_id}-b",
            "content": ASSISTANT_TEXT,
            "duration_ms": 1400,
            "tokens": 420,
        },
        {"type": "agent.status", "run_id": run_id, "status": "completed"},
    ]
    return events


def giant_batch_events(calls: int) -> list[dict]:
    """docs/PERFORMANCE.md#p3's other case: one user message, then `calls` tool calls with no text
    between them, each a step with tool_calls and no prose (a hidden assistant message)
    and its tool: 2 messages a call, so 2,500 calls are 5,000 messages in one batch."""
    events = [{"type": "user.message", "run_id": "giant", "content": "Check every module."}]
    for n in range(calls):
        call = {"id": f"giant-t{n}", "name": "read_file", "args": {"path": f"src/m{n}.py"}}
        events += [
            {
                "type": "agent.step.completed",
                "run_id": "giant",
                "message_id": f"giant-a{n}",
                "content": "",
                "tool_calls": [call],
            },
            {
                "type": "agent.tool.started",
                "run_id": "giant",
                "tool_call_id": call["id"],
                "tool_name": call["name"],
                "args": call["args"],
            },
            {
                "type": "agent.tool.completed",
                "run_id": "giant",
                "tool_call_id": call["id"],
                "result": TOOL_OUTPUT,
                "duration_ms": 85,
            },
        ]
    return events


def build_giant(bench: Bench, calls: int) -> tuple[str, float]:
    conversation = bench.new_conversation(f"p3 giant batch of {calls} calls")
    events = giant_batch_events(calls)
    started = time.perf_counter()
    with bench.api() as client:
        for first in range(0, len(events), 300):
            response = client.post(
                f"/conversations/{conversation}/events",
                json={"events": events[first : first + 300]},
            )
            response.raise_for_status()
    return conversation, time.perf_counter() - started


def huge_text(tag: int, size: int) -> str:
    """About `size` bytes of a tool's log output, different for each `tag`."""
    line = f"[{tag}] " + TOOL_OUTPUT.replace("\n", f"\n[{tag}] ")
    return "\n".join([line] * (size // (len(line) + 1) + 1))[:size]


def build_huge(bench: Bench, results: int, size: int) -> tuple[str, float]:
    """Issue 28: one batch of `results` tool results of `size` bytes, one request each
    (an event may hold 1 MiB)."""
    conversation = bench.new_conversation(f"p3 {results} results of {size} bytes")
    started = time.perf_counter()
    with bench.api(timeout=120) as client:
        first = {"type": "user.message", "run_id": "huge", "content": "Read every log."}
        client.post(f"/conversations/{conversation}/events", json=first).raise_for_status()
        for n in range(results):
            call = f"huge-t{n}"
            events = [
                {
                    "type": "agent.tool.started",
                    "run_id": "huge",
                    "tool_call_id": call,
                    "tool_name": "read_log",
                    "args": {"path": f"logs/{n}.log"},
                },
                {
                    "type": "agent.tool.completed",
                    "run_id": "huge",
                    "tool_call_id": call,
                    "result": huge_text(n, size),
                    "duration_ms": 85,
                },
            ]
            response = client.post(f"/conversations/{conversation}/events", json={"events": events})
            response.raise_for_status()
    return conversation, time.perf_counter() - started


def time_huge(bench: Bench, cookie: str, huge: str, other: str, loads: int) -> dict:
    """Loads of the huge conversation's page (the first one cold), its bytes, daphne's
    RSS around them, and what a reader of `other` waited meanwhile."""
    name, value = cookie.split("=", 1)
    stop = threading.Event()
    waits: list[float] = []

    def other_reader() -> None:
        with httpx.Client(base_url=bench.url, cookies={name: value}, timeout=120) as client:
            while not stop.is_set():
                start = time.perf_counter()
                client.get(f"/c/{other}/").raise_for_status()
                waits.append((time.perf_counter() - start) * 1000)
                stop.wait(0.05)

    rss_before = rss_kb(bench.pid)
    times, cpu, size = [], [], 0
    reader = threading.Thread(target=other_reader)
    reader.start()
    try:
        with httpx.Client(base_url=bench.url, cookies={name: value}, timeout=600) as client:
            for _ in range(loads):
                before_cpu = cpu_seconds(bench.pid)
                start = time.perf_counter()
                response = client.get(f"/c/{huge}/")
                times.append((time.perf_counter() - start) * 1000)
                cpu.append(cpu_seconds(bench.pid) - before_cpu)
                response.raise_for_status()
                size = len(response.content)
    finally:
        stop.set()
        reader.join()
    return {
        "times": times,
        "cpu": cpu,
        "bytes": size,
        "rss_before": rss_before // 1024,
        "rss_after": rss_kb(bench.pid) // 1024,
        "waits": waits,
    }


def build(bench: Bench, messages: int, runs_per_request: int) -> tuple[str, float, list[float]]:
    """The conversation, the total build time, and ms per event of each build request."""
    conversation = bench.new_conversation(f"p3 {messages} messages")
    runs = messages // MESSAGES_PER_RUN
    started = time.perf_counter()
    per_event = []
    with bench.api() as client:
        for first in range(0, runs, runs_per_request):
            events = []
            for run in range(first, min(runs, first + runs_per_request)):
                events += run_events(f"m{messages}", run)
            took = time.perf_counter()
            response = client.post(f"/conversations/{conversation}/events", json={"events": events})
            response.raise_for_status()
            per_event.append((time.perf_counter() - took) * 1000 / len(events))
        detail = client.get(f"/conversations/{conversation}").json()
    got = len(detail["messages"])
    if got != messages:
        raise RuntimeError(f"built {got} messages, wanted {messages}")
    return conversation, time.perf_counter() - started, per_event


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200,1000,5000", help="messages per conversation")
    parser.add_argument("--requests", type=int, default=40, help="timed loads per size")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--runs-per-request", type=int, default=50, help="build batch size")
    parser.add_argument(
        "--giant",
        type=int,
        default=2500,
        help="tool calls in the giant-batch case (2 messages each); 0 skips it",
    )
    parser.add_argument(
        "--huge", type=int, default=60, help="tool results in issue 28's case; 0 skips it"
    )
    parser.add_argument("--huge-bytes", type=int, default=900_000, help="bytes per result")
    parser.add_argument("--huge-loads", type=int, default=5, help="page loads, the first cold")
    parser.add_argument(
        "--rich",
        action="store_true",
        help="P9: every tool result renders rich (code, terminal, diff, records, MCP)",
    )
    args = parser.parse_args()
    global RICH
    RICH = args.rich
    sizes = [int(s) for s in args.sizes.split(",")]

    print("P3 first load ·", machine_line())
    with Bench() as bench:
        built = {}
        for size in sizes:
            built[size], took, per_event = build(bench, size, args.runs_per_request)
            print(
                f"built {size} messages in {took:.1f} s ({len(per_event)} requests; ingest "
                f"ms/event of the first {per_event[0]:.2f}, of the last {per_event[-1]:.2f})"
            )
        if args.giant:
            giant, took = build_giant(bench, args.giant)
            print(f"built a giant batch of {args.giant} calls in {took:.1f} s")
        if args.huge:
            huge, took = build_huge(bench, args.huge, args.huge_bytes)
            print(f"built {args.huge} results of {args.huge_bytes} bytes in {took:.1f} s")
        cookie = bench.session_cookie()
        # First, before anything else is loaded: its first load is a cold one.
        huge_run = (
            time_huge(bench, cookie, huge, built[min(sizes)], args.huge_loads)
            if args.huge
            else None
        )
        name, value = cookie.split("=", 1)
        timings = {size: [] for size in sizes}
        cold: dict[int, tuple[float, float]] = {}  # the first load: nothing presented yet
        cpu = dict.fromkeys(sizes, 0.0)
        shape = {}
        earlier_times, earlier_cpu = [], 0.0
        # The giant batch: the page, and the "show N earlier calls" fragment (htmx).
        giant_times = {"page": [], "calls": []}
        giant_cpu = {"page": 0.0, "calls": 0.0}
        giant_shape: dict = {}
        biggest = max(sizes)
        with httpx.Client(base_url=bench.url, cookies={name: value}, timeout=30) as client:
            for round_ in range(args.warmup + args.requests):
                for size in sizes:
                    before_cpu = cpu_seconds(bench.pid)
                    start = time.perf_counter()
                    response = client.get(f"/c/{built[size]}/")
                    took = time.perf_counter() - start
                    spent = cpu_seconds(bench.pid) - before_cpu
                    if response.status_code != 200:
                        raise RuntimeError(f"GET {size}: {response.status_code}")
                    if round_ == 0:
                        cold[size] = (took * 1000, spent * 1000)
                    if round_ >= args.warmup:
                        timings[size].append(took * 1000)
                        cpu[size] += spent
                    if size not in shape:
                        html = response.text
                        before = re.search(r"earlier\?before=(\d+)", html)
                        shape[size] = {
                            "bytes": len(response.content),
                            "messages": len(re.findall(r'data-message-id="', html)),
                            "before": before.group(1) if before else None,
                        }
                if shape[biggest]["before"]:
                    before_cpu = cpu_seconds(bench.pid)
                    start = time.perf_counter()
                    response = client.get(
                        f"/c/{built[biggest]}/earlier", params={"before": shape[biggest]["before"]}
                    )
                    took = time.perf_counter() - start
                    response.raise_for_status()
                    if round_ >= args.warmup:
                        earlier_times.append(took * 1000)
                        earlier_cpu += cpu_seconds(bench.pid) - before_cpu
                if args.giant:
                    time_giant(client, giant, round_ >= args.warmup, giant_times, giant_cpu, bench)
                    giant_shape = giant_shape or _giant_shape(client, giant)
        load = loadavg()

    rows = [
        request_row(
            f"GET /c/<id>/ ({size} msgs)",
            timings[size],
            cpu[size],
            shape[size]["messages"],
            shape[size]["bytes"] // 1024,
        )
        for size in sizes
    ]
    if earlier_times:
        rows.append(
            request_row(f"GET earlier ({biggest} msgs)", earlier_times, earlier_cpu, "", "")
        )
    for what, label in (("page", "GET /c/<id>/ (giant batch)"), ("calls", "GET earlier calls")):
        if giant_times[what]:
            shape = giant_shape.get(what, {})
            rows.append(
                request_row(
                    f"{label} ({args.giant} calls)",
                    giant_times[what],
                    giant_cpu[what],
                    shape.get("entries", ""),
                    shape.get("bytes", 0) // 1024 or "",
                )
            )
    print(table(["request", *REQUEST_COLUMNS, "messages in HTML", "KiB"], rows))
    print(
        "first (cold) load, ms / daphne CPU ms: "
        + ", ".join(f"{size} msgs {cold[size][0]:.0f} / {cold[size][1]:.0f}" for size in sizes)
        + (" · rich results (--rich)" if RICH else "")
    )
    if huge_run:
        print_huge(huge_run, args.huge, args.huge_bytes, min(sizes))
    print(f"load after: {load}")


def print_huge(run: dict, results: int, size: int, other_size: int) -> None:
    times, cpu = run["times"], run["cpu"]
    rows = [["GET /c/<id>/ first (cold)", f"{times[0]:.0f}", f"{1000 * cpu[0]:.0f}"]]
    if len(times) > 1:
        rest = summary(times[1:])
        rows.append(
            [
                f"GET /c/<id>/ next {len(times) - 1} (p50)",
                f"{rest['p50']:.0f}",
                f"{1000 * sum(cpu[1:]) / len(cpu[1:]):.0f}",
            ]
        )
    print(f"\nissue 28: {results} tool results of {size} bytes in one batch")
    print(table(["request", "ms", "daphne CPU ms"], rows))
    waits = summary(run["waits"]) if run["waits"] else None
    print(
        f"page {run['bytes'] / 1024:.0f} KiB · daphne RSS {run['rss_before']} → "
        f"{run['rss_after']} MiB"
        + (
            f" · another reader's {other_size}-message page meanwhile: n {waits['n']}, "
            f"p50 {waits['p50']:.0f} ms, max {waits['max']:.0f} ms"
            if waits
            else ""
        )
    )


EARLIER_CALLS = re.compile(r'data-earlier-calls\s+href="([^"]+)"')


def time_giant(client, conversation: str, measured: bool, times, cpu, bench: Bench) -> None:
    """One load of the giant batch's page, then of its first "earlier calls" fragment."""
    before_cpu = cpu_seconds(bench.pid)
    start = time.perf_counter()
    page = client.get(f"/c/{conversation}/")
    took = time.perf_counter() - start
    spent = cpu_seconds(bench.pid) - before_cpu
    page.raise_for_status()
    if measured:
        times["page"].append(took * 1000)
        cpu["page"] += spent
    link = EARLIER_CALLS.search(page.text)
    if link is None:
        raise RuntimeError("the giant batch has no 'show N earlier calls' control")
    before_cpu = cpu_seconds(bench.pid)
    start = time.perf_counter()
    calls = client.get(link.group(1).replace("&amp;", "&"), headers={"HX-Request": "true"})
    took = time.perf_counter() - start
    calls.raise_for_status()
    if measured:
        times["calls"].append(took * 1000)
        cpu["calls"] += cpu_seconds(bench.pid) - before_cpu


def _giant_shape(client, conversation: str) -> dict:
    page = client.get(f"/c/{conversation}/").text
    link = EARLIER_CALLS.search(page).group(1).replace("&amp;", "&")
    calls = client.get(link, headers={"HX-Request": "true"}).text
    return {
        what: {"entries": html.count('class="tool-entry"'), "bytes": len(html.encode())}
        for what, html in (("page", page), ("calls", calls))
    }


if __name__ == "__main__":
    main()
