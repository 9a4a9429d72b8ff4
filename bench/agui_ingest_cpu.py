"""chatui's CPU for an AG-UI event against a native one (docs/PERFORMANCE.md#agui-cpu).

    .venv/bin/python bench/agui_ingest_cpu.py [--runs 40]

In-process, as bench/profile_ingest.py runs (a fresh SQLite file, the real API view
through Django's test client with a bearer token, the connection closed after each
request, one viewer's channel so frames are rendered): the same agent run posted one
event a request, twice — as Pydantic AI streamed it in AG-UI (the real capture
tests/fixtures/agui/pydantic_ai.jsonl, 38 events, its ids made unique per run), and as
the native events that say the same (status, tool started/completed, deltas: 18 events).
Reports the process CPU time per request by kind of event, and per run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, table
from profile_ingest import setup_django, watch

CAPTURE = ROOT / "tests" / "fixtures" / "agui" / "pydantic_ai.jsonl"


def agui_run(number: int) -> list[dict]:
    """The capture with every id made this run's own."""
    text = CAPTURE.read_text()
    for old in ("run-pydantic-1", "call_read_1", "call_cmd_1", "call_cmd_2", "call_fetch_1"):
        text = text.replace(old, f"{old}-{number}")
    events = [json.loads(line) for line in text.splitlines() if line.strip()]
    for event in events:  # message ids are uuids: suffixed as well
        for key in ("messageId", "parentMessageId", "entityId"):
            if key in event:
                event[key] = f"{event[key]}-{number}"
    return events


def native_run(number: int) -> list[dict]:
    """The same run in chatui's own events."""
    run = f"native-{number}"
    events: list[dict] = [{"type": "agent.status", "status": "running", "run_id": run}]
    for call, name, args, result, error in (
        ("read", "read_file", {"path": "README.md"}, "# demo-service…", None),
        ("cmd1", "run_cmd", {"command": "make test"}, None, "make: *** Error 2"),
        ("cmd2", "run_cmd", {"command": "make test"}, "12 passed", None),
        ("fetch", "fetch", {"url": "https://ci.example.test/"}, {"status": "green"}, None),
    ):
        call_id = f"{call}-{number}"
        started = {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": name}
        events.append({**started, "args": args, "run_id": run})
        done = {"type": "agent.tool.completed", "tool_call_id": call_id, "run_id": run}
        events.append({**done, "error": error} if error else {**done, "result": result})
    for piece in (
        "## Result\n\n",
        "- **README**: read\n",
        "- **Tests**: passed\n",
        "- **CI**: green\n",
    ):
        events.append(
            {
                "type": "agent.message.delta",
                "message_id": f"a-{number}",
                "delta": piece,
                "run_id": run,
            }
        )
    events.append(
        {
            "type": "agent.step.completed",
            "message_id": f"a-{number}",
            "content": "done",
            "run_id": run,
        }
    )
    events.append({"type": "agent.status", "status": "completed", "run_id": run})
    return events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="chatui-agui-cpu-"))
    try:
        setup_django(data)
        measure(args.runs)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def measure(runs: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import close_old_connections
    from django.test import Client

    from chatui.models import ApiToken, Conversation

    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    _, raw = ApiToken.issue(user)
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    cpu: dict[str, list[float]] = {}
    per_run: dict[str, list[float]] = {"AG-UI": [], "native": []}
    for number in range(runs):
        for dialect, events in (("AG-UI", agui_run(number)), ("native", native_run(number))):
            conversation = Conversation.objects.create(owner=user, title=dialect)
            watch(conversation)
            url = f"/api/v1/conversations/{conversation.pk}/events"
            total = 0.0
            for event in events:
                started = time.process_time()
                answer = api.post(url, json.dumps(event), content_type="application/json")
                close_old_connections()
                spent = time.process_time() - started
                assert answer.status_code == 200, answer.content
                cpu.setdefault(f"{dialect} {event['type']}", []).append(spent * 1000)
                total += spent * 1000
            per_run[dialect].append(total)
    rows = [
        [kind, len(values), statistics.median(values), statistics.mean(values)]
        for kind, values in sorted(cpu.items())
    ]
    print(table(["event", "requests", "p50 CPU ms", "mean CPU ms"], rows))
    for dialect, totals in per_run.items():
        events = sum(len(v) for k, v in cpu.items() if k.startswith(dialect))
        print(
            f"{dialect}: {statistics.median(totals):.1f} ms CPU a run (median of {runs}),"
            f" {sum(totals) / events:.2f} ms a request"
        )


if __name__ == "__main__":
    sys.exit(main())
