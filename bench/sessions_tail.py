"""Following a coding agent's session: `chatui-tail --once` sends a long Claude Code session
file to a real daphne, which translates and ingests it (docs/events.md#sessions,
docs/PERFORMANCE.md#sessions).

    .venv/bin/python bench/sessions_tail.py [--copies 40]

The session is the real fixture (tests/fixtures/claude_code/, 53 records) repeated
`--copies` times, each copy's uuids and tool call ids made its own, so it is one long
session of realistic records (Bash, Read, MultiEdit, sub-agents, TodoWrite). The first
pass sends it all; the second pass, with the tail's state file deleted, sends it again
into the same conversation: every event a duplicate (what a tail that lost its place
costs). Prints records/s, and daphne's CPU per record and per stored event.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from common import ROOT, Bench, cpu_seconds, loadavg, machine_line, table

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"


def long_session(copies: int) -> str:
    """The fixture `copies` times; each copy's record uuids and tool call ids its own."""
    text = FIXTURE.read_text()
    uuids = {json.loads(line)["uuid"] for line in text.splitlines() if '"uuid"' in line}
    copied = []
    for copy in range(copies):
        chunk = text.replace('"toolu_', f'"toolu_{copy}x')
        for uuid in uuids:
            chunk = chunk.replace(uuid, f"{uuid}-{copy}")
        copied.append(chunk)
    return "".join(copied)


def tail_once(bench: Bench, path, state, conversation: str | None) -> float:
    env = {
        **os.environ,
        "CHATUI_URL": bench.url,
        "CHATUI_TOKEN": bench.server.token,
        "PYTHONPATH": str(ROOT / "clients" / "python"),
    }
    command = [
        sys.executable,
        "-m",
        "chatui_client.tail",
        str(path),
        "--once",
        "--state",
        str(state),
    ]
    if conversation:
        command += ["--conversation", conversation]
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, default=40)
    args = parser.parse_args()
    print(machine_line())
    with Bench() as bench:
        session = bench.tmp / "session.jsonl"
        session.write_text(long_session(args.copies))
        records = len(session.read_text().splitlines())
        state = bench.tmp / "state.json"
        rows = []
        conversation = None
        for label in ("new", "re-sent (all duplicates)"):
            before = cpu_seconds(bench.pid)
            seconds = tail_once(bench, session, state, conversation)
            cpu = cpu_seconds(bench.pid) - before
            if conversation is None:
                conversation = next(iter(json.loads(state.read_text()).values()))["conversation"]
            events = bench.last_seq(conversation)
            rows.append(
                [label, records, events, f"{records / seconds:,.0f}", f"{cpu / records * 1000:.2f}",
                 f"{cpu / events * 1000:.3f}", loadavg()]
            )  # fmt: skip
            state.unlink()
    print(
        table(
            ["pass", "records", "events stored", "records/s", "daphne CPU ms/record",
             "daphne CPU ms/event", "load"],
            rows,
        )
    )  # fmt: skip


if __name__ == "__main__":
    main()
