"""W8 (docs/rendering.md#w8) in a real browser: the page's keys — j / k between entries,
e to the next failure, / to search, ? for the list — and never while typing."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

FOCUSED_ENTRY = """() => {
  const entry = document.activeElement && document.activeElement.closest("[data-role]");
  return entry && entry.id;
}"""


@pytest.fixture(scope="module")
def keyed(chatui_server) -> str:
    conversation_id = chatui_server.new_conversation("keys")
    chatui_server.post_events(
        conversation_id,
        [
            {"type": "user.message", "message_id": "u1", "content": "check the build"},
            {"type": "agent.status", "status": "running", "run_id": "r1"},
            {"type": "agent.tool.started", "run_id": "r1", "tool_call_id": "ok1",
             "tool_name": "read_file", "args": {"path": "setup.cfg"}},
            {"type": "agent.tool.completed", "run_id": "r1", "tool_call_id": "ok1",
             "result": "[metadata]"},
            {"type": "agent.tool.started", "run_id": "r1", "tool_call_id": "bad1",
             "tool_name": "bash", "args": {"command": "make"}},
            {"type": "agent.tool.completed", "run_id": "r1", "tool_call_id": "bad1",
             "error": "make: *** [all] Error 2"},
            {"type": "agent.step.completed", "run_id": "r1", "message_id": "a1",
             "content": "The build fails at `make`."},
            {"type": "agent.status", "status": "completed", "run_id": "r1"},
        ],
    )  # fmt: skip
    return conversation_id


def test_w8_j_and_k_move_between_entries_and_e_to_the_next_failure(keyed, open_page):
    page, watch = open_page(f"/c/{keyed}/")
    entries = page.eval_on_selector_all(
        "#transcript [data-role]",
        "els => els.filter(el => el.getClientRects().length).map(el => el.id)",
    )
    page.keyboard.press("j")
    first = page.evaluate(FOCUSED_ENTRY)
    assert first in entries
    page.keyboard.press("j")
    second = page.evaluate(FOCUSED_ENTRY)
    assert entries.index(second) == entries.index(first) + 1
    page.keyboard.press("k")
    assert page.evaluate(FOCUSED_ENTRY) == first

    page.keyboard.press("e")
    failure = page.locator("#transcript [data-role=tool][data-status=error]")
    expect(failure).to_be_focused()
    expect(failure).to_be_in_viewport()
    top_bar = page.locator(".topbar").bounding_box()
    assert failure.bounding_box()["y"] >= top_bar["y"] + top_bar["height"]  # not under it
    assert watch.page_errors == [] and watch.console_errors == []


def test_w8_slash_searches_and_question_mark_lists_the_keys(keyed, open_page):
    page, watch = open_page(f"/c/{keyed}/")
    page.keyboard.press("?")
    dialog = page.locator("#keys-help")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("next failure")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    # Keys are not taken inside the dialog: wait until focus has left it as it closed.
    page.wait_for_function("() => !document.activeElement.closest('dialog')")

    page.keyboard.press("/")  # from a conversation: the list page, its search box focused
    page.wait_for_url("**/#search")
    expect(page.locator("input[name=q]")).to_be_focused()
    page.keyboard.type("build")
    assert page.locator("input[name=q]").input_value() == "build"
    assert watch.page_errors == []


def test_w8_keys_are_plain_letters_while_typing(keyed, open_page):
    page, _ = open_page(f"/c/{keyed}/")
    page.focus("#composer-content")
    page.keyboard.type("jke/?")
    assert page.locator("#composer-content").input_value() == "jke/?"
    expect(page.locator("#keys-help")).to_be_hidden()
    assert page.evaluate(FOCUSED_ENTRY) is None
