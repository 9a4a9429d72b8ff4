"""Issue 28 in a real browser: a result beyond the page's bound is expanded in place
(G16) and copied whole, its text fetched when the reader asks for it; its hostile
markup stays text; without JavaScript the control opens the text as a page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.huge_results import HOSTILE, huge_result

SECRET = "sk-live0123456789abcdefWXYZ"


@pytest.fixture(scope="module")
def long_result(chatui_server) -> tuple[str, str]:
    """A conversation with one tool whose result (300 KB) is far beyond the bound."""
    result = huge_result("long", 300_000)
    conversation_id = chatui_server.new_conversation("Long result")
    chatui_server.post_events(
        conversation_id,
        [
            {"type": "user.message", "content": "Read the log"},
            {
                "type": "agent.tool.started",
                "tool_call_id": "long",
                "tool_name": "read_log",
                "args": {"path": "app.log"},
            },
            {"type": "agent.tool.completed", "tool_call_id": "long", "result": result},
        ],
    )
    return conversation_id, result


def test_g16_a_long_result_expands_in_place_when_its_text_arrives(long_result, open_page):
    conversation_id, result = long_result
    page, watch = open_page(f"/c/{conversation_id}/")
    entry = page.locator('[data-tool-call-id="long"]')
    page.locator("[data-tool-batch] > summary").first.click()
    assert entry.locator("[data-tool-full-text]").count() == 0  # not in the page yet
    entry.locator("summary.tool-more").click()
    full = entry.locator("[data-tool-full-text]")
    full.wait_for()
    shown = full.text_content()
    assert shown == result.replace(SECRET, "••••WXYZ")  # whole, escaped, masked (T3)
    assert HOSTILE.replace(SECRET, "••••WXYZ") in shown
    # Details (W8: behind the entry's menu): opened, they arrive whole too.
    entry.locator("[data-tool-menu-button]").click()
    entry.locator("[data-tool-menu-details]").click()
    details = entry.locator("[data-tool-json]")
    details.wait_for()
    assert "long THE END" in details.text_content()
    assert watch.dialogs == [] and watch.page_errors == [] and watch.console_errors == []
    # The hostile markup stayed text: no element it names reached the DOM.
    assert page.locator('#transcript script, #transcript [hx-get="/accounts/logout/"]').count() == 0


def test_g16_copy_output_copies_the_whole_text_it_fetches(long_result, open_page, chatui_server):
    conversation_id, result = long_result
    page, watch = open_page(f"/c/{conversation_id}/")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=chatui_server.url)
    page.locator("[data-tool-batch] > summary").first.click()
    page.locator('[data-tool-call-id="long"] [data-tool-menu-button]').click()  # W8
    button = page.locator('[data-tool-call-id="long"] [data-copy-output]')
    button.click()
    expect(button).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == result.replace(SECRET, "••••WXYZ")
    assert watch.page_errors == []


def test_g16_without_javascript_the_control_opens_the_full_text(
    long_result, browser, auth_state, chatui_server
):
    conversation_id, _ = long_result
    context = browser.new_context(storage_state=auth_state, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{chatui_server.url}/c/{conversation_id}/")
        page.locator("[data-tool-batch] > summary").first.click()
        page.locator('[data-tool-call-id="long"] summary.tool-more').click()
        page.locator('[data-tool-call-id="long"] .tool-result a[data-tool-load]').click()
        page.wait_for_url(f"**/c/{conversation_id}/tools/*/output")
        assert page.locator("[data-tool-full-text]").text_content().endswith("long THE END")
    finally:
        context.close()
