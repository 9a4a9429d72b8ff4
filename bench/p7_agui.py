"""P7: an AG-UI agent's `TOOL_CALL_START` → tool card in a real Chromium DOM, through the
`agui` backend; and chatui's CPU per AG-UI event against its CPU per native single event.

    .venv/bin/python bench/p7_agui.py [--tools 100] [--gap-min 50 --gap-max 100]

daphne runs chatui with `CHATUI_AGENT=agui`, pointed at an AG-UI agent served by
uvicorn in this process. The agent speaks AG-UI through the `ag-ui-protocol` package's
own models and encoder (`EventEncoder`, SSE): for each of `--tools` tool calls it streams
`TOOL_CALL_START` (this script notes `time.time()` just before the bytes go to uvicorn),
`TOOL_CALL_ARGS` ×2, `TOOL_CALL_END`, and halfway through the gap `TOOL_CALL_RESULT`;
after every `--batch` tools a short text message (START, CONTENT, END) closes the batch,
as a model's next turn would. A run is RUN_STARTED … RUN_FINISHED.

One real Chromium page (logged in through the real login form) shows the conversation;
P1's MutationObserver (bench/p1_card_latency.py) stamps when each `[data-tool-call-id]`
enters the document. The run is started as a person starts it: typing into the composer.
The clocks are matched as P1 matches them (round trips through Playwright).

CPU: daphne's user + system CPU over the stream, divided by the AG-UI events it received
(every event: the args deltas, results and texts too). The same page then watches a
second conversation while this script posts the native equivalent of the same run
(`agent.tool.started`, `agent.tool.completed`, `agent.step.completed`), one event per
request on a keep-alive connection, with the same gaps: daphne's CPU per native single
event. Both are measured in the same daphne with the same viewer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sys
import threading
import time

from common import Bench, cpu_seconds, loadavg, machine_line, summary, table
from p1_card_latency import OBSERVER, calibrate

from tests.browser.conftest import CHROMIUM_ARGS  # common put the repository on sys.path
from tests.support.agui_agents import serve_agents
from tests.support.delivery import stored_events

# The agent and its timings live in this process; daphne reaches it over loopback.
STARTS: dict[str, float] = {}
AGUI_EVENTS = {"count": 0}
DONE = threading.Event()


def agent_app(args):
    from ag_ui.core import (
        RunAgentInput,
        RunFinishedEvent,
        RunStartedEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageStartEvent,
        ToolCallArgsEvent,
        ToolCallEndEvent,
        ToolCallResultEvent,
        ToolCallStartEvent,
    )
    from ag_ui.encoder import EventEncoder
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def run(request: Request) -> StreamingResponse:
        run_input = RunAgentInput.model_validate(await request.json())
        encoder = EventEncoder(accept=request.headers.get("accept"))
        rng = random.Random(7)
        names = ("read_file", "run_cmd", "web_search")

        async def stream():
            def out(event) -> bytes:
                AGUI_EVENTS["count"] += 1
                return encoder.encode(event).encode()

            yield out(RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id))
            for index in range(-args.warmup, args.tools):
                call = f"p7-{index}" if index >= 0 else f"warm{index}"
                gap = rng.uniform(args.gap_min, args.gap_max) / 1000
                if index >= 0:
                    STARTS[call] = time.time()
                yield out(ToolCallStartEvent(tool_call_id=call, tool_call_name=names[index % 3]))
                yield out(ToolCallArgsEvent(tool_call_id=call, delta='{"path": "src/'))
                yield out(ToolCallArgsEvent(tool_call_id=call, delta=f'module_{index}.py"}}'))
                yield out(ToolCallEndEvent(tool_call_id=call))
                await asyncio.sleep(gap / 2)
                yield out(
                    ToolCallResultEvent(
                        message_id=f"{call}-result",
                        tool_call_id=call,
                        content=f"ok: {index} lines read",
                    )
                )
                if (index + 1) % args.batch == 0:
                    message = f"p7-text-{index}"
                    yield out(TextMessageStartEvent(message_id=message, role="assistant"))
                    yield out(
                        TextMessageContentEvent(
                            message_id=message, delta=f"Checked {index + 1} files so far."
                        )
                    )
                    yield out(TextMessageEndEvent(message_id=message))
                await asyncio.sleep(gap / 2)
            yield out(RunFinishedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id))
            DONE.set()

        return StreamingResponse(stream(), media_type=encoder.get_content_type())

    return Starlette(routes=[Route("/agent", run, methods=["POST"])])


def open_page(bench: Bench, browser, cookie: str, conversation: str):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    name, value = cookie.split("=", 1)
    context.add_cookies([{"name": name, "value": value, "url": bench.url}])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{bench.url}/c/{conversation}/")
    page.wait_for_function("() => window.__chatuiSocketOpen === true", timeout=15000)
    page.evaluate(OBSERVER)
    return context, page, errors


def commit_ranges(bench: Bench) -> list[tuple[int, int, float, int]]:
    """(first seq, last seq, time.time() committed, events) of every committed ingest."""
    ranges = []
    for line in bench.stamps_path.read_text().splitlines():
        if line.startswith("C "):
            _kind, _conversation, first, last, moment = line.split()
            ranges.append((int(first), int(last), float(moment), int(last) - int(first) + 1))
    return ranges


def agui_scenario(bench: Bench, browser, cookie: str, args) -> dict:
    conversation = bench.new_conversation("p7 AG-UI")
    context, page, errors = open_page(bench, browser, cookie, conversation)
    try:
        offset_before, error_before = calibrate(page)
        STARTS.clear()
        DONE.clear()
        AGUI_EVENTS["count"] = 0
        cpu_start = cpu_seconds(bench.pid)
        composer = page.locator("form#composer textarea[name=content]")
        composer.fill("Check every module.")
        composer.press("Enter")
        seconds = (args.tools + args.warmup) * (args.gap_min + args.gap_max) / 2000
        if not DONE.wait(seconds * 3 + 30):
            raise RuntimeError("the agent's stream did not finish")
        page.wait_for_function(
            "() => document.querySelector('#run-state')"
            "?.dataset.conversationStatus === 'completed'",
            timeout=30000,
        )
        cpu = cpu_seconds(bench.pid) - cpu_start
        events = AGUI_EVENTS["count"]
        load_after = loadavg().split()[0]
        page.wait_for_timeout(100)
        cards = page.evaluate("() => window.__cards")
        offset_after, error_after = calibrate(page)
    finally:
        context.close()
    offset = (offset_before + offset_after) / 2
    latencies = [
        (cards[call]["dom"] / 1000 - offset - started) * 1000
        for call, started in STARTS.items()
        if call in cards
    ]
    # Where the time goes: the commit of the ingest that held each TOOL_CALL_START
    # (bench.instrumented_asgi's stamps), from its seq in the log.
    seqs = {
        event["payload"].get("toolCallId"): event["seq"]
        for event in stored_events(bench.server, conversation)
        if event["type"] == "agui.TOOL_CALL_START"
    }
    commits = commit_ranges(bench)
    sent_commit, commit_card, batch_sizes = [], [], []
    for call, started in STARTS.items():
        found = next(
            ((c, n) for first, last, c, n in commits if first <= seqs.get(call, -1) <= last), None
        )
        if found is None or call not in cards:
            continue
        committed, size = found
        sent_commit.append((committed - started) * 1000)
        commit_card.append((cards[call]["dom"] / 1000 - offset - committed) * 1000)
        batch_sizes.append(size)
    return {
        "latency": summary(latencies),
        "sent_commit": summary(sent_commit) if sent_commit else None,
        "commit_card": summary(commit_card) if commit_card else None,
        "batch": summary(batch_sizes) if batch_sizes else None,
        "missing": len(STARTS) - len(latencies),
        "not_running": sum(
            1 for call in STARTS if call in cards and cards[call]["status"] != "running"
        ),
        "cpu_ms_per_event": 1000 * cpu / events,
        "events": events,
        "offset_err_ms": max(error_before, error_after) * 1000,
        "page_errors": errors,
        "load_after": load_after,
    }


def native_scenario(bench: Bench, browser, cookie: str, args) -> dict:
    """The same run in chatui's own events, one per request, the same page watching."""
    conversation = bench.new_conversation("p7 native")
    run = "p7-native"
    bench.server.post_events(
        conversation,
        [
            {"type": "user.message", "content": "Check every module.", "run_id": run},
            {"type": "agent.status", "status": "running", "run_id": run},
        ],
    )
    context, _page, _errors = open_page(bench, browser, cookie, conversation)
    rng = random.Random(7)
    names = ("read_file", "run_cmd", "web_search")
    url = f"/conversations/{conversation}/events"
    posted = 0
    try:
        with bench.api() as client:
            cpu_start = cpu_seconds(bench.pid)

            def post(body: dict) -> None:
                nonlocal posted
                client.post(url, json={**body, "run_id": run}).raise_for_status()
                posted += 1

            for index in range(-args.warmup, args.tools):
                call = f"n-{index}"
                gap = rng.uniform(args.gap_min, args.gap_max) / 1000
                post(
                    {
                        "type": "agent.tool.started",
                        "tool_call_id": call,
                        "tool_name": names[index % 3],
                        "args": {"path": f"src/module_{index}.py"},
                    }
                )
                time.sleep(gap / 2)
                post(
                    {
                        "type": "agent.tool.completed",
                        "tool_call_id": call,
                        "result": f"ok: {index} lines read",
                    }
                )
                if (index + 1) % args.batch == 0:
                    post(
                        {
                            "type": "agent.step.completed",
                            "message_id": f"n-text-{index}",
                            "content": f"Checked {index + 1} files so far.",
                        }
                    )
                time.sleep(gap / 2)
            post({"type": "agent.status", "status": "completed"})
            cpu = cpu_seconds(bench.pid) - cpu_start
    finally:
        context.close()
    return {"cpu_ms_per_event": 1000 * cpu / posted, "events": posted}


SERIES = [
    ("latency", "TOOL_CALL_START sent → card in DOM (P7)"),
    ("sent_commit", "  sent → its ingest committed"),
    ("commit_card", "  committed → card in DOM"),
    ("batch", "  (events in that ingest)"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=100, help="tool calls measured")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured tool calls first")
    parser.add_argument("--gap-min", type=float, default=50, help="ms between tool starts")
    parser.add_argument("--gap-max", type=float, default=100)
    parser.add_argument("--batch", type=int, default=5, help="tools per batch before a text")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    print("P7 AG-UI TOOL_CALL_START → card ·", machine_line())
    with serve_agents(agent_app(args)) as agent:
        # daphne inherits the environment (tests.support.live.LiveServer.env).
        os.environ["CHATUI_AGENT"] = "agui"
        os.environ["CHATUI_AGUI_URL"] = agent.url("/agent")
        with Bench(stamps=True) as bench, sync_playwright() as playwright:
            executable = shutil.which("chromium") or "/usr/bin/chromium"
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            cookie = bench.session_cookie()
            try:
                agui = agui_scenario(bench, browser, cookie, args)
                native = native_scenario(bench, browser, cookie, args)
            finally:
                browser.close()
    rows = []
    for key, label in SERIES:
        s = agui[key]
        if s:
            rows.append([label, s["n"], s["min"], s["p50"], s["p95"], s["p99"], s["max"]])
    print(table(["latency (ms)", "n", "min", "p50", "p95", "p99", "max"], rows))
    print(
        table(
            ["daphne CPU", "events", "ms an event"],
            [
                ["AG-UI events through the agui backend", agui["events"],
                 agui["cpu_ms_per_event"]],
                ["native events, one a request", native["events"], native["cpu_ms_per_event"]],
            ],
        )
    )  # fmt: skip
    ratio = agui["cpu_ms_per_event"] / native["cpu_ms_per_event"]
    print(
        f"AG-UI / native CPU an event: {ratio:.2f}; missing cards {agui['missing']}, "
        f"first seen not running {agui['not_running']}, "
        f"clock error ±{agui['offset_err_ms']:.2f} ms, "
        f"page errors {len(agui['page_errors'])}, load after {agui['load_after']}"
    )
    sys.exit(0)


if __name__ == "__main__":
    main()
