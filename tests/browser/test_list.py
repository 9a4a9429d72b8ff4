"""docs/rendering.md#list-and-rail / issue 15 in a real browser: the conversation list opens at the
top, its rows show a preview and counts, a running run's status updates live; the rail lists
the reader's other conversations beside the transcript on wide screens, not on phones."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

ROWS = 30  # enough rows to make the list page scroll on a phone


def tool_events(call_id: str, *, error: str | None = None) -> list[dict]:
    ended = {"type": "agent.tool.completed", "tool_call_id": call_id}
    ended.update({"error": error} if error else {"result": "ok"})
    return [{"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": "ls"}, ended]


@pytest.fixture(scope="module")
def listed(chatui_server) -> dict[str, str]:
    for number in range(ROWS):
        filler = chatui_server.new_conversation(f"Filler {number}")
        chatui_server.post_events(filler, [{"type": "user.message", "content": f"hi {number}"}])
    counted = chatui_server.new_conversation("Counted tools")
    chatui_server.post_events(
        counted,
        [
            {"type": "user.message", "content": "List twice", "run_id": "r1"},
            *tool_events("c1"),
            *tool_events("c2", error="permission denied"),
            {"type": "agent.step.completed", "message_id": "a1", "content": "Listed twice."},
            {"type": "agent.status", "status": "completed", "run_id": "r1"},
        ],
    )
    return {"counted": counted}


def test_list_opens_at_the_top_with_preview_and_counts(open_page, listed):
    page, watch = open_page("/", width=390, height=700)
    page.wait_for_load_state("load")
    expect(page.locator("[data-conversation-rows]")).to_be_visible()
    page.wait_for_function("() => window.__chatuiRowsSocketOpen === true")
    # The page is taller than the phone's screen, and still shows its heading.
    assert page.evaluate("document.scrollingElement.scrollHeight > innerHeight")
    assert page.evaluate("window.scrollY") == 0
    row = page.locator(f"#row-{listed['counted']}")
    expect(row.locator("[data-row-preview]")).to_have_text("Listed twice.")
    expect(row.locator("[data-row-counts]")).to_have_text("2 tools · 1 failed")
    # The relative time fits one line on a phone.
    time = row.locator("time")
    assert time.get_attribute("title")
    height = time.evaluate("el => el.getBoundingClientRect().height")
    line = time.evaluate("el => parseFloat(getComputedStyle(el).lineHeight) || 20")
    assert height <= line * 1.5
    assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")
    assert watch.page_errors == [] and watch.console_errors == []


def test_a_running_runs_status_updates_live_in_the_list(open_page, chatui_server, listed):
    watched = chatui_server.new_conversation("Watched live")
    chatui_server.post_events(watched, [{"type": "user.message", "content": "start"}])
    page, watch = open_page("/")
    page.wait_for_function("() => window.__chatuiRowsSocketOpen === true")
    row = page.locator(f"#row-{watched}")
    expect(row.locator("[data-status-badge]")).to_have_count(0)
    chatui_server.post_events(
        watched, [{"type": "agent.status", "status": "running", "run_id": "w1"}]
    )
    expect(row.locator("[data-status-badge]")).to_have_text("Running")
    chatui_server.post_events(
        watched,
        [
            *tool_events("w-c1", error="boom"),
            {"type": "agent.status", "status": "failed", "run_id": "w1", "error_message": "x"},
        ],
    )
    expect(row.locator("[data-status-badge]")).to_have_text("Failed")
    expect(row.locator("[data-row-counts]")).to_have_text("1 tool · 1 failed")
    # A changed row moves to the top: newest first, as a fresh load orders them.
    expect(page.locator("[data-conversation-rows] > li").first).to_have_id(f"row-{watched}")
    assert page.evaluate("window.scrollY") == 0
    assert watch.page_errors == []


def test_rail_lists_other_conversations_beside_the_transcript_on_wide_screens(open_page, listed):
    page, watch = open_page(f"/c/{listed['counted']}/", width=1400, height=900)
    rail = page.locator("#rail")
    expect(rail).to_be_visible()
    expect(rail.locator("li")).not_to_have_count(0)
    assert rail.locator("li").count() > 1  # other conversations too
    expect(rail.locator(f"#row-{listed['counted']} a")).to_have_attribute("aria-current", "page")
    expect(rail.get_by_role("button", name="New conversation")).to_be_visible()
    rail_box = rail.bounding_box()
    transcript_box = page.locator("#transcript").bounding_box()
    assert rail_box["x"] + rail_box["width"] <= transcript_box["x"]  # beside, not over
    assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")
    assert watch.page_errors == []


def test_rail_is_not_shown_at_phone_width(open_page, listed):
    page, _ = open_page(f"/c/{listed['counted']}/", width=390, height=800)
    expect(page.locator("#transcript")).to_be_visible()
    expect(page.locator("#rail")).to_be_hidden()
    assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")


def test_rail_marks_a_running_conversation_live_without_touching_the_transcript(
    open_page, chatui_server, listed
):
    other = chatui_server.new_conversation("Rail live")
    chatui_server.post_events(other, [{"type": "user.message", "content": "later"}])
    page, watch = open_page(f"/c/{listed['counted']}/", width=1400, height=500)
    page.wait_for_function("() => window.__chatuiRowsSocketOpen === true")
    page.wait_for_function("() => window.__chatuiSocketOpen === true")
    page.evaluate("window.scrollTo(0, 0)")  # the reader scrolled up: not at the bottom
    chatui_server.post_events(other, [{"type": "agent.status", "status": "running", "run_id": "x"}])
    badge = page.locator(f"#rail #row-{other} [data-status-badge]")
    expect(badge).to_have_text("Running")
    # Another conversation's row is no activity of this transcript.
    expect(page.locator("#new-activity")).to_be_hidden()
    assert page.evaluate("window.scrollY") == 0
    # The current conversation stays marked after its own row is re-rendered.
    # (W6: a row previews the latest answer.)
    chatui_server.post_events(
        listed["counted"], [{"type": "agent.step.completed", "content": "One more answer."}]
    )
    current = page.locator(f"#rail #row-{listed['counted']} a")
    expect(current.locator("[data-row-preview]")).to_have_text("One more answer.")
    expect(current).to_have_attribute("aria-current", "page")
    assert watch.page_errors == []
