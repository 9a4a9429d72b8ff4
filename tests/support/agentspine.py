"""AgentSpine's real captures and their golden transcripts: reading the goldens, and
the snapshots of an entry while its tool runs (tests/importers, tests/browser)."""

from __future__ import annotations

from pathlib import Path

from tests.support.fixtures import FIXTURES

CAPTURES = sorted(path.stem for path in (FIXTURES / "agentspine").glob("*.jsonl"))


GOLDEN = FIXTURES / "agentspine" / "golden"


RUNNING_HEADER = "## while a tool runs: its entry after each tool_execution_start / _update\n"


FINAL_HEADER = "## at the end: the transcript\n"


def golden_path(name: str, suffix: str) -> Path:
    return GOLDEN / f"{name}{suffix}"


def running_snapshots(golden: str) -> dict[str, str]:
    """`#seq type call_id` → the entry's text, as recorded in a golden file."""
    running = golden.split(RUNNING_HEADER, 1)[1].split(FINAL_HEADER, 1)[0]
    snapshots = {}
    for block in running.strip("\n").split("\n\n"):
        if block:
            key, _, text = block.partition("\n")
            snapshots[key] = text
    return snapshots


def snapshot_key(seq: int, event: dict) -> str:
    return f"#{seq} {event['type']} {event['tool_call_id']}"


def final_part(golden: str) -> str:
    return golden.split(FINAL_HEADER, 1)[1]
