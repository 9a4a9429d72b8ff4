"""The server's half of P1, in-process: what a tool event's live frame costs to build, and
its size (docs/PERFORMANCE.md#p1-strip).

    .venv/bin/python bench/p1_frame_cost.py [--before 40] [--steps 100] [--rounds 3]

Runs Django in this process on a fresh SQLite file (as bench/profile_ingest.py does),
builds a going run of `--before` tools (P1's stream: a text every 5 tools), then ingests
`--steps` more tool calls one event at a time, as a runtime posting single events does,
and times `frames.change_frame` for every event's frame (each frame leads on from the one
before, so the kept batch and tail are used as they are live). Prints the p50 time and
bytes by event type. The time is CPU-bound Python and moves with the machine's load: run
old and new builds alternately (docs/PERFORMANCE.md#how-to-measure).
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import loadavg, machine_line, percentile
from profile_ingest import django_in_process


def tool_events(name: str, n: int) -> list[dict]:
    events = [
        {"type": "agent.tool.started", "tool_call_id": f"{name}{n}", "tool_name": "read_file",
         "args": {"path": f"src/{name}{n}.py"}, "run_id": "r"},
        {"type": "agent.tool.completed", "tool_call_id": f"{name}{n}", "result": f"ok {n}",
         "duration_ms": 20, "run_id": "r"},
    ]  # fmt: skip
    if n % 5 == 4:
        events.append({"type": "agent.step.completed", "content": f"Checked {n}.", "run_id": "r"})
    return events


def events_of(tools: int) -> list[dict]:
    """A going run of `tools` tool calls, P1's stream."""
    events = [{"type": "user.message", "run_id": "r", "content": "Run the checks."}]
    events.append({"type": "agent.status", "status": "running", "run_id": "r"})
    return events + [event for n in range(tools) for event in tool_events("p", n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=int, default=40, help="tools in the run first")
    parser.add_argument("--steps", type=int, default=100, help="tool calls timed a round")
    parser.add_argument("--rounds", type=int, default=3, help="conversations, one after another")
    options = parser.parse_args()
    with django_in_process("chatui-p1-frame-") as owner:
        from chatui.ingest.service import ingest
        from chatui.live import frames
        from chatui.models import Conversation

        print("P1 frame cost, in process ·", machine_line())
        times: dict[str, list[float]] = {}
        sizes: dict[str, list[int]] = {}
        for _ in range(options.rounds):
            conversation = Conversation.objects.create(owner=owner, title="p1 frames")
            ingest(conversation, events_of(options.before))
            for n in range(options.steps):
                for event in tool_events("x", n):
                    result = ingest(conversation, [event])
                    conversation.refresh_from_db()
                    first = result.last_seq - result.accepted + 1
                    began = time.perf_counter()
                    frame = frames.change_frame(
                        conversation, first, result.last_seq, result.changes
                    )
                    times.setdefault(event["type"], []).append((time.perf_counter() - began) * 1000)
                    sizes.setdefault(event["type"], []).append(len(frame.html))
        print(f"| event | frames | build p50 | p95 | bytes p50 |  (load after {loadavg()})")
        print("|---|---|---|---|---|")
        for kind, spent in times.items():
            print(
                f"| {kind} | {len(spent)} | {statistics.median(spent):.2f} ms | "
                f"{percentile(spent, 95):.2f} ms | {statistics.median(sizes[kind]):,.0f} |"
            )


if __name__ == "__main__":
    main()
