"""`chatui-tail` (clients/python/chatui_client/tail.py) run as its console script runs it,
against a LiveServer, and what it saved (docs/events.md#sessions)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.fixtures import FIXTURES
from tests.support.live import ROOT

CLAUDE = FIXTURES / "claude_code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
CODEX = (
    FIXTURES / "codex" / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
)
PATIENCE = 30.0


def tail_command(server, path: Path, state: Path, *extra: str) -> tuple[list[str], dict]:
    """`chatui-tail` as the console script runs it, with only the client package on the
    path (its own: no Django, no chatui)."""
    env = {
        **os.environ,
        "CHATUI_URL": server.url,
        "CHATUI_TOKEN": server.token,
        "PYTHONPATH": str(ROOT / "clients" / "python"),
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    command = [
        sys.executable, "-m", "chatui_client.tail", str(path),
        "--state", str(state), "--interval", "0.1", *extra,
    ]  # fmt: skip
    return command, env


def start_tail(server, path: Path, state: Path, *extra: str) -> subprocess.Popen:
    command, env = tail_command(server, path, state, *extra)
    return subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True, cwd="/")


def stop(process: subprocess.Popen) -> str:
    process.send_signal(signal.SIGTERM)
    try:
        _, err = process.communicate(timeout=PATIENCE)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
    return err


def saved(state: Path, path: Path) -> dict:
    data = json.loads(state.read_text())
    (entry,) = [value for key, value in data.items() if key.endswith(str(path.resolve()))]
    return entry


def wait_for(check, what: str):
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"waited {PATIENCE} s for {what}")


def events_of(server, conversation: str) -> list[dict]:
    with server.api() as client:
        return client.get(f"/conversations/{conversation}/events").json()["events"]


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def saved_or_none(state: Path, path: Path) -> dict | None:
    """The tail's saved place in `path`, once it sent some of it."""
    try:
        entry = saved(state, path)
    except (ValueError, OSError):  # no state file yet, or no entry for the file
        return None
    return entry if entry["offset"] > 0 else None
