"""What W2's run strip adds to a tool event's live frame (docs/rendering.md#w2), in-process.

    .venv/bin/python bench/w2_strip_cost.py [--runs 5,40,200] [--steps 60]

Runs Django in this process on a fresh SQLite file (as bench/profile_ingest.py does),
builds a conversation with a going run of N tools (P1's stream: a text every 5 tools),
then ingests `--steps` more tool calls one event at a time (started, completed) and times
`frames.change_frame` for each event's frame: with the strip, and with the strip's render
replaced by nothing. A run longer than a frame's first read (16 messages) has its strip
read from the database (two prepared queries); a shorter one from the frame's own read.
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import loadavg, percentile
from p1_frame_cost import events_of
from profile_ingest import django_in_process


def frame_times(owner, tools: int, steps: int, strip: bool) -> list[float]:
    from chatui.ingest.service import ingest
    from chatui.live import frames
    from chatui.models import Conversation

    render = frames.render_run_strip
    if not strip:
        frames.render_run_strip = lambda *args, **kwargs: ""
    try:
        conversation = Conversation.objects.create(owner=owner, title="w2")
        ingest(conversation, events_of(tools))
        spent = []
        for n in range(steps):
            for event in (
                {"type": "agent.tool.started", "tool_call_id": f"x{n}", "tool_name": "grep",
                 "run_id": "r"},
                {"type": "agent.tool.completed", "tool_call_id": f"x{n}", "result": "ok",
                 "run_id": "r"},
            ):  # fmt: skip
                result = ingest(conversation, [event])
                conversation.refresh_from_db()
                first = result.last_seq - result.accepted + 1
                start = time.perf_counter()
                frames.change_frame(conversation, first, result.last_seq, result.changes)
                spent.append((time.perf_counter() - start) * 1000)
        return spent
    finally:
        frames.render_run_strip = render


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="5,40,200", help="tools in the run before timing")
    parser.add_argument("--steps", type=int, default=60, help="tool calls timed per case")
    options = parser.parse_args()
    with django_in_process("chatui-w2-") as owner:
        print(f"load {loadavg()}")
        for tools in (int(value) for value in options.runs.split(",")):
            for strip in (True, False):
                times = frame_times(owner, tools, options.steps, strip)
                print(
                    f"run of {tools}+{options.steps} tools, strip {'on ' if strip else 'off'}: "
                    f"frame p50 {statistics.median(times):.2f} ms, "
                    f"p95 {percentile(times, 95):.2f} ms"
                )


if __name__ == "__main__":
    main()
