"""Summarise a Chromium `.cpuprofile` (`bench/p1_card_latency.py --page-profile`): where the
page's main thread spends its time.

    .venv/bin/python bench/cpuprofile_top.py PROFILE.cpuprofile [--top 30] [--match chatui]

Prints the functions with the most self time (on top of the stack: a forced layout or
style recalculation is charged to the script function that asked for it, e.g. a read of
`scrollHeight`) and with the most inclusive time (the function or anything it called), in
ms and as a share of the busy time (idle and the profiler's own samples left out).
`--match` keeps only functions whose script URL contains the text in the inclusive table.
With the timeline trace the bench writes beside the profile (`.trace.json`), it also
prints the style recalculations and layouts: how many, how long, over how many elements.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

NOT_BUSY = {"(idle)", "(program)", "(root)"}


def label(node: dict) -> str:
    frame = node["callFrame"]
    name = frame["functionName"] or "(anonymous)"
    url = frame["url"].rsplit("/", 1)[-1]
    return f"{name} ({url}:{frame['lineNumber'] + 1})" if url else name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--match", default="")
    args = parser.parse_args()

    profile = json.loads(Path(args.profile).read_text())
    nodes = {node["id"]: node for node in profile["nodes"]}
    parent: dict[int, int] = {}
    for node in profile["nodes"]:
        for child in node.get("children", []):
            parent[child] = node["id"]

    # Each sample lasted until the next one: its time delta (µs) is charged to the node.
    spent: Counter[int] = Counter()
    for node_id, delta in zip(profile["samples"][1:], profile["timeDeltas"][1:], strict=True):
        spent[node_id] += delta

    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    busy = 0
    for node_id, micros in spent.items():
        node = nodes[node_id]
        name = label(node)
        if name in NOT_BUSY or node["callFrame"]["functionName"] == "(program)":
            continue
        busy += micros
        self_time[name] += micros
        seen = set()
        walk: int | None = node_id
        while walk is not None:
            walked = label(nodes[walk])
            if walked not in seen and walked not in NOT_BUSY:
                seen.add(walked)
                if args.match in nodes[walk]["callFrame"]["url"] or not args.match:
                    inclusive[walked] += micros
            walk = parent.get(walk)

    total = (profile["endTime"] - profile["startTime"]) / 1000
    print(f"{total:.0f} ms profiled, {busy / 1000:.1f} ms busy (idle and (program) left out)")
    for title, counter in (("self", self_time), ("inclusive", inclusive)):
        print(f"\n{title}:")
        for name, micros in counter.most_common(args.top):
            print(f"  {micros / 1000:8.1f} ms  {100 * micros / max(busy, 1):5.1f}%  {name}")
    trace = Path(args.profile).with_suffix(".trace.json")
    if trace.exists():
        print_rendering(json.loads(trace.read_text()))


RENDERING = ("UpdateLayoutTree", "Layout", "Paint", "PrePaint", "Layerize", "HitTest")


def print_rendering(trace: dict) -> None:
    """The main thread's rendering work from the timeline trace, by kind of event."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    kinds: dict[str, list[float]] = {name: [] for name in RENDERING}
    elements: list[int] = []
    for event in events:
        name = event.get("name")
        if name in kinds and event.get("ph") == "X":
            kinds[name].append(event.get("dur", 0) / 1000)
            if name == "UpdateLayoutTree":
                elements.append(event.get("args", {}).get("elementCount", 0))
    print("\nrendering (timeline trace):")
    for name, durations in kinds.items():
        if durations:
            durations.sort()
            median = durations[len(durations) // 2]
            print(
                f"  {name:17} {len(durations):6} × median {median:6.2f} ms, "
                f"max {durations[-1]:6.2f} ms, total {sum(durations):8.1f} ms"
            )
    if elements:
        elements.sort()
        print(f"  style recalculations: median {elements[len(elements) // 2]} elements")


if __name__ == "__main__":
    main()
