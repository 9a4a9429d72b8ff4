"""The client's OpenAI Agents SDK extra (docs/runtimes.md#openai-agents-sdk): how soon a tool
that starts in an SDK run is stored in chatui, and what relaying costs the run.

    .venv/bin/python bench/agents_sdk_relay.py [--runs 20] [--slow 0.2]

The release check of the tests (tests/support/agents_sdk.py: the real SDK, a scripted
model; 7 tool calls a run, two of them nested, a handoff, a streamed answer), its slow
tool shortened to `--slow` seconds and its answer streamed without pauses, run `--runs`
times against one daphne (bench.instrumented_asgi stamps each commit):

- tool start → stored: from the SDK starting a tool's function span (a second tracing
  processor stamps `time.time()`) to the commit of that tool's `agent.tool.started` in
  chatui. A card reaches a page's DOM about P1 later (docs/PERFORMANCE.md#p1).
- events and requests a run: the queue sends what waited while a request was in flight
  together, so a run costs a request per round trip, not one per event.
- the run's wall time relayed and not relayed (the same run consumed with
  ``stream_events()`` alone), alternating, and the tail: from the SDK's last stream
  event to every event stored (what `stream_to_chatui` waits for before it returns).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from agents.tracing import FunctionSpanData, TracingProcessor, add_trace_processor
from chatui_client import AsyncChatuiClient, PostResult
from chatui_client.openai_agents import relay
from common import Bench, loadavg, machine_line, summary, table

from tests.support.agents_sdk import only_chatui_tracing, release_check


class ToolStarts(TracingProcessor):
    """span id → time.time() when a tool's function span started."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}

    def on_span_start(self, span: Any) -> None:
        if isinstance(span.span_data, FunctionSpanData):
            self.started[span.span_id] = time.time()

    def on_span_end(self, span: Any) -> None:
        pass

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


class CountingClient(AsyncChatuiClient):
    requests = 0

    async def post_events(self, conversation_id, events) -> PostResult:
        self.requests += 1
        return await super().post_events(conversation_id, events)


async def relayed(bench: Bench, slow: float) -> tuple[str, float, float, int, int]:
    """One relayed run: (conversation id, wall s, tail s, events, requests)."""
    conversation_id = bench.new_conversation("agents sdk bench")
    async with CountingClient(bench.url, bench.server.token) as chatui:
        began = time.perf_counter()
        last_event = began
        result = release_check(answer_delay=0.0, slow_seconds=slow).run()
        async for _ in relay(chatui, conversation_id, result):
            last_event = time.perf_counter()
        ended = time.perf_counter()
        with bench.api() as api:
            events = api.get(f"/conversations/{conversation_id}").json()["last_seq"]
        return conversation_id, ended - began, ended - last_event, events, chatui.requests


async def alone(slow: float) -> float:
    began = time.perf_counter()
    result = release_check(answer_delay=0.0, slow_seconds=slow).run()
    async for _ in result.stream_events():
        pass
    return time.perf_counter() - began


def commit_times(bench: Bench) -> dict[tuple[str, int], float]:
    """(conversation id without dashes, seq) → when its commit happened."""
    found = {}
    for line in bench.stamps_path.read_text().splitlines():
        kind, *rest = line.split()
        if kind != "C":
            continue
        conversation, first, last, moment = rest
        for seq in range(int(first), int(last) + 1):
            found[(conversation.replace("-", ""), seq)] = float(moment)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--slow", type=float, default=0.2, help="the slow tool's seconds")
    options = parser.parse_args()

    starts = ToolStarts()
    only_chatui_tracing()  # no export to OpenAI
    add_trace_processor(starts)
    print(machine_line())
    print(f"load before: {loadavg()}")
    with Bench(stamps=True) as bench:
        runs, walls_alone = [], []
        for _ in range(options.runs):
            runs.append(asyncio.run(relayed(bench, options.slow)))
            walls_alone.append(asyncio.run(alone(options.slow)))
        commits = commit_times(bench)
        lags = []
        for conversation_id, *_ in runs:
            with bench.api() as api:
                logged = api.get(f"/conversations/{conversation_id}/events").json()["events"]
            for event in logged:
                started = starts.started.get(event["payload"].get("tool_call_id"))
                if event["type"] != "agent.tool.started" or started is None:
                    continue  # a handoff's card has no function span
                stored = commits[(conversation_id.replace("-", ""), event["seq"])]
                lags.append(1000 * (stored - started))
    print(f"load after: {loadavg()}")
    lag = summary(lags)
    print(
        table(
            ["measure", "n", "p50", "p95", "max"],
            [
                ["tool start → stored, ms", lag["n"], lag["p50"], lag["p95"], lag["max"]],
                [
                    "run wall, relayed, ms",
                    len(runs),
                    *_stats([1000 * run[1] for run in runs]),
                ],
                ["run wall, not relayed, ms", len(runs), *_stats([1000 * w for w in walls_alone])],
                [
                    "tail: last SDK event → all stored, ms",
                    len(runs),
                    *_stats([1000 * r[2] for r in runs]),
                ],
            ],
        )
    )
    events = statistics.mean(run[3] for run in runs)
    requests = statistics.mean(run[4] for run in runs)
    print(f"events a run {events:.1f}, requests a run {requests:.1f}")
    print(f"({events / requests:.1f} events a request)")


def _stats(values: list[float]) -> list[float]:
    s = summary(values)
    return [s["p50"], s["p95"], s["max"]]


if __name__ == "__main__":
    main()
