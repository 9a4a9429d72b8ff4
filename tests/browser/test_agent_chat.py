"""Talking to the demo agent in a real browser (issue 5): the composer, live tool
cards, a streamed answer, and the showcase that shows every render rule."""

from __future__ import annotations

from playwright.sync_api import expect

from chatui.agents.showcase import SHOWCASE_CLOSING_PROMPT


def test_l4_composer_message_appears_once_and_demo_tools_stream_live(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation()
    page, watch = open_page(f"/c/{conversation_id}/")
    page.wait_for_function("() => window.__chatuiSocketOpen === true")
    # Record every tool card state and streaming text the page ever shows.
    page.evaluate(
        """() => {
            window.__seen = {running: new Set(), streaming: false};
            new MutationObserver(() => {
                document.querySelectorAll('[data-tool-call-id][data-status=running]')
                    .forEach(e => window.__seen.running.add(e.dataset.toolCallId));
                if (document.querySelector('[data-role=assistant][data-streaming]'))
                    window.__seen.streaming = true;
            }).observe(document.getElementById('transcript').parentNode,
                       {subtree: true, childList: true, attributes: true});
        }"""
    )
    composer = page.locator("form#composer textarea[name=content]")
    composer.fill("list the files in notes\nthen read notes/todo.txt")
    composer.press("Enter")
    user_messages = page.locator("#transcript [data-role=user]")
    expect(user_messages).to_have_count(1, timeout=2000)  # at once…
    expect(page.locator("#run-state")).to_have_attribute(
        "data-conversation-status", "completed", timeout=20000
    )
    expect(user_messages).to_have_count(1)  # …and only once
    assert "then read notes/todo.txt" in user_messages.inner_text()
    assert composer.input_value() == ""
    entries = page.locator("#transcript [data-tool-call-id]")
    assert entries.count() >= 2
    assert page.evaluate("() => window.__seen.running.size") >= 1  # cards while running
    assert page.evaluate("() => window.__seen.streaming")  # the answer streamed
    answer = page.locator("#transcript [data-role=assistant]").last
    assert answer.get_attribute("data-streaming") is None
    assert watch.page_errors == []


def test_composer_works_without_javascript(chatui_server, browser, auth_state):
    context = browser.new_context(storage_state=auth_state, java_script_enabled=False)
    page = context.new_page()
    conversation_id = chatui_server.new_conversation()
    page.goto(f"{chatui_server.url}/c/{conversation_id}/")
    page.fill("form#composer textarea[name=content]", "calculate (2+3)*4")
    page.click("form#composer button[type=submit]")
    page.wait_for_url(f"{chatui_server.url}/c/{conversation_id}/")
    assert (
        page.locator("#transcript [data-role=user]")
        .inner_text()
        .strip()
        .startswith("calculate (2+3)*4")
    )
    context.close()


def test_showcase_renders_every_rule(chatui_server, open_page):
    page, watch = open_page("/showcase")
    page.click("[data-start-showcase]")
    page.wait_for_url("**/c/*/")
    page.wait_for_function("() => window.__chatuiSocketOpen === true", timeout=10000)
    # docs/rendering.md#composer: the composer is disabled while the demo runs, and says why.
    expect(page.locator("#composer-busy")).to_be_visible()
    expect(page.locator("#composer-content")).to_be_disabled()
    expect(page.locator("[data-run-error]")).to_be_attached(timeout=60000)  # S2, run 2
    # The real end: the closing third run completes after the failed one (issue 15).
    closing = page.locator("#transcript [data-role=user]", has_text=SHOWCASE_CLOSING_PROMPT)
    expect(closing).to_be_attached(timeout=30000)
    expect(page.locator("#run-state")).to_have_attribute(
        "data-conversation-status", "completed", timeout=30000
    )
    expect(page.locator("#transcript [data-role=assistant]").last).to_contain_text(
        "stays in the history"
    )
    hooks = {
        "R1 user": "[data-role=user]",
        "R2 markdown": "[data-role=assistant] .markdown table, [data-role=assistant] pre",
        "R5 continuation": "[data-status-type=continuation]",
        "G1 batch of many": "[data-tool-batch]:not([data-count='1'])",
        "G1 batch of one": "[data-tool-batch][data-count='1']",
        "G4 block result": ".tool-result",
        "G4 inline result": ".tool-inline-result",
        "G6 open error batch": "[data-tool-batch][open][data-has-error]",
        "G7 duration": "[data-tool-duration]:not(:empty)",
        "G8 details": "[data-tool-json]",
        "G9 file": "[data-tool-kind=file]",
        "G9 command": "[data-tool-kind=command]",
        "G9 fetch": "[data-tool-kind=fetch]",
        "G9 subagent": "[data-tool-kind=subagent]",
        "G9 custom": "[data-tool-kind=custom]",
        "G13 nested": ".tool-children [data-tool-call-id]",
        "G14 retry": "[data-tool-attempts]",
        "G21 MCP image": "[data-mcp] img[data-attachment]",
        "G21 MCP link": "[data-mcp] a[data-mcp-link]",
        "S1 meta line": "[data-meta-line]",
        "S2 banner": "[data-run-error]",
    }
    missing = [
        rule
        for rule, selector in hooks.items()
        if page.locator(f"#transcript :is({selector})").count() == 0
    ]
    assert missing == []
    text = page.text_content("#transcript")
    assert "@\u200b" in text  # T1
    assert "more lines)" in text or "truncated," in text  # G4 truncation
    # Issue 15: the list row of the finished showcase shows its latest run, completed.
    conversation_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    page.goto(chatui_server.url + "/")
    expect(page.locator(f"#row-{conversation_id}")).to_have_attribute(
        "data-run-status", "completed"
    )
    assert watch.page_errors == [] and watch.console_errors == [], watch.console_errors
