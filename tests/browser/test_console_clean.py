"""A demo run watched live leaves the browser console clean (issue 28).

htmx logs every out-of-band part whose target the page lacks as a console error
(`htmx:oobErrorNoTarget`), even when chatui means it: the delete of a message the page
never showed (an assistant step hidden once its tool calls came), a new conversation's
row on a list that does not have it yet. chatui.js places or drops such parts before
htmx sees them, so a newcomer's console shows no error on an ordinary run.
"""

from __future__ import annotations

from playwright.sync_api import expect


def test_a_demo_run_watched_live_logs_no_console_error(chatui_server, open_page):
    # The list open in one tab (a list with a row has its live socket): the watched
    # conversation's row, not listed yet, arrives there live with the first event.
    chatui_server.new_conversation("Already listed")
    listing, list_watch = open_page("/")
    listing.wait_for_function("() => window.__chatuiRowsSocketOpen === true")
    conversation_id = chatui_server.new_conversation("Console clean")
    row = listing.locator(f"#row-{conversation_id}")
    assert row.count() == 0

    page, watch = open_page(f"/c/{conversation_id}/")
    page.wait_for_function("() => window.__chatuiSocketOpen === true")
    composer = page.locator("form#composer textarea[name=content]")
    # Two tools: the step that calls them is hidden (its text is the calls), and each
    # tool event changes it again, so it is deleted from a page that never showed it.
    composer.fill("list the files in notes, then read notes/todo.txt")
    composer.press("Enter")
    expect(page.locator("#run-state")).to_have_attribute(
        "data-conversation-status", "completed", timeout=30000
    )
    expect(page.locator("#transcript [data-tool-call-id]")).to_have_count(2)
    # The row was placed at the top of the list, and kept up to date.
    expect(row.locator("[data-row-counts]")).to_have_text("2 tools", timeout=10000)
    first_row = listing.locator("[data-conversation-rows] > li").first
    assert first_row.get_attribute("id") == f"row-{conversation_id}"

    assert watch.page_errors == [] and list_watch.page_errors == []
    assert watch.console_errors == [], watch.console_errors
    assert list_watch.console_errors == [], list_watch.console_errors
