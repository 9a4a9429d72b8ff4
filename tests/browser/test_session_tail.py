"""docs/events.md#sessions in a real browser: a page open on a conversation that `chatui-tail`
is feeding from a real Claude Code session file updates live as lines are appended."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import wait_connected
from tests.support.tail import (
    CLAUDE,
    events_of,
    lines_of,
    saved_or_none,
    start_tail,
    stop,
    wait_for,
)


@pytest.mark.timeout(180)
def test_the_page_shows_a_followed_session_growing_live(chatui_server, open_page, tmp_path):
    session = tmp_path / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    state = tmp_path / "state.json"
    lines = lines_of(CLAUDE)
    session.write_bytes(b"".join(lines[:5]))  # the prompt and the first TodoWrite
    tail = start_tail(chatui_server, session, state)
    try:
        conversation = wait_for(lambda: saved_or_none(state, session), "the first lines")[
            "conversation"
        ]
        wait_for(lambda: len(events_of(chatui_server, conversation)) > 3, "the first events")
        page, watch = open_page(f"/c/{conversation}/")
        wait_connected(page)
        expect(page.locator('[data-role="user"]').first).to_contain_text("/orchestrator")
        assert page.locator('[data-tool-call-id="toolu_019jdVD71Nj1AexezqLfBwgn"]').count() == 0

        with session.open("ab") as handle:  # up to the sub-agent's first Bash call, answered
            handle.writelines(lines[5:29])
        bash = page.locator('[data-tool-call-id="toolu_019jdVD71Nj1AexezqLfBwgn"]')
        expect(bash).to_have_attribute("data-status", "success", timeout=15_000)
        # G13: nested in its Task's entry, not a top-level card of its own.
        task = page.locator('[data-tool-call-id="toolu_01LKfUwrsnof18CpWZQcJH44"]')
        expect(task.locator('[data-tool-call-id="toolu_019jdVD71Nj1AexezqLfBwgn"]')).to_have_count(
            1
        )
        expect(task).to_have_attribute("data-status", "running")

        with session.open("ab") as handle:  # the Task's answer and the rest of the session
            handle.writelines(lines[29:])
        expect(task).to_have_attribute("data-status", "success", timeout=15_000)
        edit = page.locator('[data-tool-call-id="toolu_018awfyyafbNVMNu6kfSRuKi"]')
        expect(edit).to_have_count(1, timeout=15_000)
        expect(page.locator('[data-role="assistant"]').last).to_contain_text(
            "CLAUDE.mdファイルを最新の状態にアップデートしました", timeout=15_000
        )
        assert watch.page_errors == []
    finally:
        stop(tail)
