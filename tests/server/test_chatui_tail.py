"""docs/events.md#sessions: `chatui-tail` (the client package's command, no Django) following
a real Claude Code session file into a real daphne server while lines are appended to it,
resuming after a restart without duplicates, and moving on to a newer session in a folder."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.support.tail import (
    CLAUDE,
    CODEX,
    PATIENCE,
    events_of,
    lines_of,
    saved,
    saved_or_none,
    start_tail,
    stop,
    tail_command,
    wait_for,
)


@pytest.mark.timeout(180)
def test_tail_streams_appended_lines_live_and_resumes_without_duplicates(chatui_server, tmp_path):
    session = tmp_path / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    state = tmp_path / "state.json"
    lines = lines_of(CLAUDE)
    session.write_bytes(b"".join(lines[:10]))
    tail = start_tail(chatui_server, session, state)
    try:
        conversation = wait_for(lambda: saved_or_none(state, session), "the first lines")[
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
        first = wait_for(lambda: saved_or_none(state, older), "the first session")["conversation"]
        time.sleep(0.2)  # a later modification time
        newer = folder / "rollout-2025-11-17T16-00-00-b.jsonl"
        newer.write_bytes(b"".join(codex_lines[:6]))
        second = wait_for(lambda: saved_or_none(state, newer), "the newer session")["conversation"]
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


@pytest.mark.timeout(180)
def test_tail_follows_a_sessions_sub_agent_files_into_the_same_conversation(
    chatui_server, tmp_path
):
    """Newer Claude Code writes a sub-agent's records to `<session>/subagents/agent-<id>.jsonl`
    (each with its `agentId`, as is the Task's result): the real session's records laid out
    that way nest under their Task as they do in one file."""
    main, agents = [], {"a1": [], "a2": []}
    tasks = {"toolu_014YF9TXhDRR7BnpasNJ7gjC": "a1", "toolu_01LKfUwrsnof18CpWZQcJH44": "a2"}
    current = None
    for line in lines_of(CLAUDE):
        record = json.loads(line)
        content = (record.get("message") or {}).get("content")
        if record.get("isSidechain"):
            if isinstance(content, str):  # a sub-agent's first prompt: which Task it is
                current = "a1" if "package.json" in content else "a2"
            agents[current].append({**record, "agentId": current})
            continue
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result" and block.get("tool_use_id") in tasks:
                record = {**record, "agentId": tasks[block["tool_use_id"]]}
        main.append(record)
    session = tmp_path / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    session.write_text("".join(json.dumps(r) + "\n" for r in main))
    folder = tmp_path / session.stem / "subagents"
    folder.mkdir(parents=True)
    for agent, records in agents.items():
        (folder / f"agent-{agent}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    state = tmp_path / "state.json"
    command, env = tail_command(chatui_server, session, state, "--once")
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=PATIENCE)
    conversation = saved(state, session)["conversation"]
    assert saved(state, session)["sub_offsets"] == {
        "agent-a1.jsonl": (folder / "agent-a1.jsonl").stat().st_size,
        "agent-a2.jsonl": (folder / "agent-a2.jsonl").stat().st_size,
    }
    with chatui_server.api() as client:
        messages = client.get(f"/conversations/{conversation}").json()["messages"]
    parents = {
        m["metadata"]["tool_call_id"]: m["metadata"].get("parent_tool_call_id")
        for m in messages
        if m["role"] == "tool"
    }
    assert parents["toolu_019jdVD71Nj1AexezqLfBwgn"] == "toolu_01LKfUwrsnof18CpWZQcJH44"  # Bash
    assert parents["toolu_017Uj8NydfpTP1sKZ8hxWeko"] == "toolu_014YF9TXhDRR7BnpasNJ7gjC"  # Read
    assert parents["toolu_01LKfUwrsnof18CpWZQcJH44"] is None
