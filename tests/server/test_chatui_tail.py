"""docs/events.md#sessions: `chatui-tail` (the client package's command, no Django) following
a real Claude Code session file into a real daphne server while lines are appended to it,
resuming after a restart without duplicates, and moving on to a newer session in a folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


@pytest.mark.timeout(180)
def test_tail_streams_appended_lines_live_and_resumes_without_duplicates(chatui_server, tmp_path):
    session = tmp_path / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    state = tmp_path / "state.json"
    lines = lines_of(CLAUDE)
    session.write_bytes(b"".join(lines[:10]))
    tail = start_tail(chatui_server, session, state)
    try:
        conversation = wait_for(lambda: _saved_or_none(state, session), "the first lines")[
            "conversation"
        ]
        first = events_of(chatui_server, conversation)
        assert any(e["type"] == "user.message" for e in first)
        # Lines appended while the tail runs arrive: the sub-agent's Bash call among them.
        with session.open("ab") as handle:
            handle.writelines(lines[10:30])
        wait_for(
            lambda: any(
                e["payload"].get("tool_call_id") == "toolu_019jdVD71Nj1AexezqLfBwgn"
                for e in events_of(chatui_server, conversation)
            ),
            "the appended Bash call",
        )
        # Half a line is not sent until it is whole.
        with session.open("ab") as handle:
            handle.write(lines[30][:40])
            handle.flush()
            time.sleep(0.5)
            handle.write(lines[30][40:])
        wait_for(
            lambda: saved(state, session)["offset"] == sum(len(line) for line in lines[:31]),
            "the completed line",
        )
    finally:
        err = stop(tail)
    assert "Traceback" not in err, err
    before = events_of(chatui_server, conversation)

    # A restart resumes where it was: the rest of the file, and nothing twice.
    with session.open("ab") as handle:
        handle.writelines(lines[31:])
    tail = start_tail(chatui_server, session, state)
    try:
        wait_for(
            lambda: saved(state, session)["offset"] == session.stat().st_size,
            "the rest of the file",
        )
    finally:
        stop(tail)
    after = events_of(chatui_server, conversation)
    ids = [e["event_id"] for e in after]
    assert len(ids) == len(set(ids))
    assert [e["event_id"] for e in after[: len(before)]] == [e["event_id"] for e in before]
    messages = {e["payload"].get("tool_call_id") for e in after}
    assert "toolu_018awfyyafbNVMNu6kfSRuKi" in messages  # the MultiEdit near the end

    # Even a tail that lost its state file sends only duplicates into that conversation.
    command, env = tail_command(
        chatui_server, session, tmp_path / "fresh.json", "--once", "--conversation", conversation
    )
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=PATIENCE)
    assert len(events_of(chatui_server, conversation)) == len(after)


@pytest.mark.timeout(180)
def test_tail_of_a_folder_moves_on_to_the_newer_session(chatui_server, tmp_path):
    folder = tmp_path / "sessions" / "2025" / "11" / "17"
    folder.mkdir(parents=True)
    state = tmp_path / "state.json"
    older = folder / "rollout-2025-11-17T15-30-28-a.jsonl"
    codex_lines = lines_of(CODEX)
    older.write_bytes(b"".join(codex_lines[:12]))
    tail = start_tail(chatui_server, tmp_path / "sessions", state)
    try:
        first = wait_for(lambda: _saved_or_none(state, older), "the first session")["conversation"]
        time.sleep(0.2)  # a later modification time
        newer = folder / "rollout-2025-11-17T16-00-00-b.jsonl"
        newer.write_bytes(b"".join(codex_lines[:6]))
        second = wait_for(lambda: _saved_or_none(state, newer), "the newer session")["conversation"]
    finally:
        stop(tail)
    assert second != first
    # Moving on ended the older session's open run.
    ends = [e for e in events_of(chatui_server, first) if e["payload"].get("status") == "completed"]
    assert ends and ends[-1]["event_id"].endswith(":end")
    titles = {}
    with chatui_server.api() as client:
        for conversation in client.get("/conversations").json()["conversations"]:
            titles[conversation["id"]] = conversation["title"]
    assert titles[second].startswith("finish up the users work")


def _saved_or_none(state: Path, path: Path) -> dict | None:
    """The tail's saved place in `path`, once it sent some of it."""
    try:
        entry = saved(state, path)
    except (ValueError, OSError):  # no state file yet, or no entry for the file
        return None
    return entry if entry["offset"] > 0 else None
