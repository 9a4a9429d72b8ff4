"""docs/rendering.md#admin in a real browser: an auditor logs into the admin and reads a transcript
built through the API, rendered by the page's partials, under the same CSP."""

from __future__ import annotations

import pytest

from tests.support.browser import Watch
from tests.support.showcase import showcase_events

RLO = "\u202e"


@pytest.fixture(scope="module")
def audited(chatui_server) -> str:
    conversation_id = chatui_server.new_conversation(f"Audit {RLO}exe.pdf")
    chatui_server.post_events(conversation_id, showcase_events())
    return conversation_id


@pytest.fixture
def auditor_page(browser, chatui_server, auditor_login):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    watch = Watch(origin=f"127.0.0.1:{chatui_server.port}")
    watch.attach(page)
    page.goto(chatui_server.url + "/admin/login/?next=/admin/")
    page.fill("#id_username", auditor_login[0])
    page.fill("#id_password", auditor_login[1])
    page.click("input[type=submit]")
    page.wait_for_url(chatui_server.url + "/admin/")
    yield page, watch
    context.close()


def test_auditor_reads_a_transcript_in_the_admin_without_csp_errors(
    auditor_page, chatui_server, audited
):
    page, watch = auditor_page
    # The list, its filters and search: the admin's own scripts run under our CSP.
    page.goto(chatui_server.url + "/admin/chatui/conversation/")
    page.fill("#searchbar", "image_generation")
    page.press("#searchbar", "Enter")
    page.wait_for_url("**q=image_generation**")
    row = page.locator("#result_list tbody tr", has_text="Audit")
    assert row.count() == 1
    assert row.locator(".invisible-char").inner_text() == "⟨U+202E⟩"
    row.locator("th a").click()

    page.wait_for_load_state("load")
    page.wait_for_selector("#transcript [data-tool-batch]")
    transcript = page.locator("#transcript")
    assert transcript.locator("[data-tool-batch]").count() >= 3
    assert transcript.locator("[data-role=tool]").count() >= 10
    assert transcript.locator("[data-role=user]").count() == 3
    assert transcript.locator("[data-role=assistant]").count() >= 2
    # G6: the batch holding the failed build is open, its error visible.
    failed = transcript.locator("[data-tool-batch][data-has-error]").first
    assert failed.get_attribute("open") is not None
    assert failed.locator("[data-tool-error]").first.is_visible()
    # A collapsed batch opens natively (no script of ours needed).
    closed_id = transcript.locator("[data-tool-batch]:not([open])").first.get_attribute("id")
    closed = page.locator(f"#{closed_id}")
    closed.locator(":scope > summary").click()
    assert closed.get_attribute("open") is not None
    # chatui's look inside the admin: the user bubble in chatui's primary colour.
    bubble = transcript.locator("[data-role=user] .bubble").first
    assert bubble.evaluate("el => getComputedStyle(el).backgroundColor") == "rgb(59, 91, 219)"
    entry = transcript.locator("li.tool-entry").first
    assert entry.evaluate("el => getComputedStyle(el).listStyleType") == "none"
    # Read-only: no composer, no socket; the tool calls and the raw-events link.
    assert page.locator("#composer").count() == 0
    assert page.locator("[ws-connect]").count() == 0
    assert page.locator("#audit-tool-calls pre.chatui-json").count() >= 10
    assert page.locator(".chatui-audit-title .invisible-char").is_visible()

    page.click("[data-audit-events]")
    page.wait_for_load_state("load")
    page.wait_for_selector("#result_list")
    assert page.locator("#result_list tbody tr").count() == len(showcase_events())

    assert watch.page_errors == []
    assert watch.console_errors == []  # CSP violations are reported here
    assert watch.dialogs == []
    assert watch.foreign_requests == []
