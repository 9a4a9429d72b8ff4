"""docs/rendering.md#accessibility accessibility: axe-core finds no serious or critical violation on
the login, list, conversation (first load, during a run with a streaming answer, after it),
showcase and admin change pages, in the light and the dark scheme."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.axe import assert_no_serious_violations
from tests.support.browser import Watch, completed, started, wait_connected
from tests.support.showcase import showcase_events

SCHEMES = ["light", "dark"]


@pytest.fixture(scope="module")
def finished(chatui_server) -> str:
    """The showcase conversation: every render rule, its runs over (one still running)."""
    conversation_id = chatui_server.new_conversation("Accessibility")
    chatui_server.post_events(conversation_id, showcase_events())
    return conversation_id


@pytest.fixture
def schemed(browser, auth_state, chatui_server):
    contexts = []

    def opener(path: str, scheme: str, *, logged_in: bool = True):
        context = browser.new_context(
            storage_state=auth_state if logged_in else None,
            color_scheme=scheme,
            viewport={"width": 1280, "height": 900},
        )
        contexts.append(context)
        page = context.new_page()
        watch = Watch(origin=f"127.0.0.1:{chatui_server.port}")
        watch.attach(page)
        page.goto(chatui_server.url + path)
        return page

    yield opener
    for context in contexts:
        context.close()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_sec10_axe_login_page(schemed, scheme):
    page = schemed("/accounts/login/", scheme, logged_in=False)
    assert_no_serious_violations(page, f"login ({scheme})")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_sec10_axe_conversation_list(schemed, finished, scheme):
    page = schemed("/", scheme)
    assert_no_serious_violations(page, f"list ({scheme})")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_sec10_axe_showcase_page(schemed, scheme):
    page = schemed("/showcase", scheme)
    assert_no_serious_violations(page, f"showcase ({scheme})")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_sec10_axe_conversation_first_load(schemed, finished, scheme):
    page = schemed(f"/c/{finished}/", scheme)
    # Open every batch and every Details box: what a reader can reach is checked too.
    page.evaluate(
        "() => document.querySelectorAll('#transcript details').forEach(d => d.open = true)"
    )
    assert_no_serious_violations(page, f"conversation ({scheme})")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_w10_axe_time_travel_page_with_its_steps(schemed, finished, scheme):
    page = schemed(f"/c/{finished}/?at=12", scheme)
    expect(page.locator("[data-moment-step=previous]")).to_be_visible()
    assert_no_serious_violations(page, f"time travel ({scheme})")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_w8_axe_the_keys_list_open(schemed, finished, scheme):
    page = schemed(f"/c/{finished}/", scheme)
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_visible()
    assert_no_serious_violations(page, f"keys list ({scheme})")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_w8_axe_entry_menus_closed_and_open(schemed, finished, scheme):
    page = schemed(f"/c/{finished}/", scheme)
    # Every batch open: every entry's menu button is on the page, its menu closed.
    page.evaluate(
        "() => document.querySelectorAll('#transcript [data-tool-batch]')"
        ".forEach(d => { d.open = true; })"
    )
    buttons = page.locator("#transcript [data-tool-menu-button]")
    assert buttons.count() > 5
    assert_no_serious_violations(page, f"entry menus closed ({scheme})")
    # A menu open, on a succeeded entry and on a failed one (its red card behind it).
    for which in ("success", "error"):
        entry = page.locator(f"#transcript [data-role=tool][data-status={which}]").first
        entry.locator("[data-tool-menu-button]").click()
        expect(entry.locator("[data-tool-menu]")).to_be_visible()
        assert_no_serious_violations(page, f"{which} entry's menu open ({scheme})")
        page.keyboard.press("Escape")
    # Details opened through the menu.
    entry = page.locator("#transcript [data-role=tool]:has([data-tool-menu-details])").first
    entry.locator("[data-tool-menu-button]").click()
    entry.locator("[data-tool-menu-details]").click()
    expect(entry.locator("[data-tool-details]")).to_have_attribute("open", "")
    assert_no_serious_violations(page, f"Details opened from the menu ({scheme})")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_sec10_axe_conversation_during_and_after_a_streaming_run(schemed, chatui_server, scheme):
    conversation_id = chatui_server.new_conversation("Streaming")
    run = [
        {"type": "user.message", "content": "Summarise the logs", "run_id": "s"},
        {"type": "agent.status", "status": "running", "run_id": "s"},
    ]
    chatui_server.post_events(conversation_id, run)
    page = schemed(f"/c/{conversation_id}/", scheme)
    wait_connected(page)
    chatui_server.post_events(
        conversation_id,
        [
            {**started("g1", "grep_logs", args={"pattern": "ERROR"}), "run_id": "s"},
            {**completed("g1", result="\n".join(f"ERROR {n}" for n in range(30))), "run_id": "s"},
            {"type": "agent.message.delta", "message_id": "answer", "delta": "The logs show "},
            {"type": "agent.message.delta", "message_id": "answer", "delta": "30 errors, "},
        ],
    )
    answer = page.locator('[data-message-id="answer"]')
    expect(answer).to_have_attribute("aria-busy", "true")  # streaming: busy, not re-read
    assert page.locator("#transcript[aria-live]").count() == 0
    assert_no_serious_violations(page, f"conversation during a run ({scheme})")
    chatui_server.post_events(
        conversation_id,
        [
            {
                "type": "agent.step.completed",
                "message_id": "answer",
                "content": "The logs show 30 errors, all from the parser.",
                "run_id": "s",
            },
            {"type": "agent.status", "status": "completed", "run_id": "s"},
        ],
    )
    expect(page.locator("#run-state")).to_have_attribute("data-conversation-status", "completed")
    expect(answer).not_to_have_attribute("aria-busy", "true")
    # Each finished message or tool result is announced once, in its own live region.
    expect(page.locator("#announcer")).to_contain_text("all from the parser")
    assert_no_serious_violations(page, f"conversation after a run ({scheme})")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_sec10_axe_admin_change_page(
    browser,
    chatui_server,
    auditor_login,
    finished,
    scheme,
):
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(chatui_server.url + "/admin/login/?next=/admin/")
        page.fill("#id_username", auditor_login[0])
        page.fill("#id_password", auditor_login[1])
        page.click("input[type=submit]")
        page.wait_for_url(chatui_server.url + "/admin/")
        page.goto(f"{chatui_server.url}/admin/chatui/conversation/{finished}/change/")
        page.wait_for_selector("#transcript [data-tool-batch]")
        assert_no_serious_violations(page, f"admin change page ({scheme})")
    finally:
        context.close()
