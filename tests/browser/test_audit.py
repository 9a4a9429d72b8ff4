"""Issue 15's audit view in a real browser: the run summary at the top, a timeline
whose click reaches the entry (opening its collapsed batch), "jump to first error",
Markdown headings not restyled as admin caption bars, and the changelist without
horizontal overflow at 1280 px and on a phone."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import Watch
from tests.support.showcase import showcase_events

HEADING_ANSWER = {
    "type": "agent.step.completed",
    "message_id": "audit-heading",
    "content": "## Findings\n\nThe heading above stays a heading.",
}


@pytest.fixture(scope="module")
def audited(chatui_server) -> str:
    conversation_id = chatui_server.new_conversation("Timeline under review")
    chatui_server.post_events(conversation_id, [*showcase_events(), HEADING_ANSWER])
    return conversation_id


def admin_page(browser, chatui_server, login, width: int, height: int = 900):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    watch = Watch(origin=f"127.0.0.1:{chatui_server.port}")
    watch.attach(page)
    page.goto(chatui_server.url + "/admin/login/?next=/admin/")
    page.fill("#id_username", login[0])
    page.fill("#id_password", login[1])
    page.click("input[type=submit]")
    page.wait_for_url(chatui_server.url + "/admin/")
    return context, page, watch


@pytest.fixture
def auditor_at(browser, chatui_server, auditor_login):
    contexts = []

    def opener(width: int, height: int = 900):
        context, page, watch = admin_page(browser, chatui_server, auditor_login, width, height)
        contexts.append(context)
        return page, watch

    yield opener
    for context in contexts:
        context.close()


#: The elements that reach past the viewport's right edge (for the failure message).
WIDEST = """() => {
  const past = el => el.getBoundingClientRect().right > innerWidth + 0.5;
  return [...document.querySelectorAll('body *')]
    .filter(el => past(el) && !(el.parentElement && past(el.parentElement)))
    .slice(0, 8)
    .map(el => `${el.tagName}#${el.id}.${el.className} ${el.getBoundingClientRect().right}`);
}"""


def wide(page) -> list[str]:
    return page.evaluate(WIDEST)


def in_viewport(locator) -> bool:
    return locator.evaluate(
        "el => { const r = el.getBoundingClientRect();"
        " return r.height > 0 && r.bottom > 0 && r.top < innerHeight; }"
    )


def test_audit_page_opens_with_the_run_summary_and_a_timeline_that_reaches_entries(
    auditor_at, chatui_server, audited
):
    page, watch = auditor_at(1280)
    page.goto(f"{chatui_server.url}/admin/chatui/conversation/{audited}/change/")
    summary = page.locator("[data-run-summary]")
    expect(summary).to_be_visible()
    assert in_viewport(summary)  # at the top, not under 13,000 px of transcript
    rows = summary.locator("[data-run-row]")
    assert rows.count() >= 2
    assert "failed" in rows.locator("[data-run-status]").all_inner_texts()
    # A step of a collapsed batch: the click reaches it and the browser opens the batch.
    steps = page.locator("[data-timeline-entry]")
    assert steps.count() >= 10
    target = None
    for index in range(steps.count()):
        href = steps.nth(index).get_attribute("href")
        if page.locator(f"{href}").evaluate("el => !!el.closest('details:not([open])')"):
            target = steps.nth(index)
            break
    assert target is not None, "expected a step inside a collapsed batch"
    href = target.get_attribute("href")
    target.click()
    page.wait_for_url(f"**{href}")
    entry = page.locator(href)
    expect(entry).to_be_visible()
    assert in_viewport(entry)
    assert entry.evaluate("el => el.matches(':target')")
    assert watch.page_errors == [] and watch.console_errors == []


def test_jump_to_first_error_reaches_the_first_failed_entry(auditor_at, chatui_server, audited):
    page, _ = auditor_at(1280)
    page.goto(f"{chatui_server.url}/admin/chatui/conversation/{audited}/change/")
    jump = page.locator("[data-jump-first-error]")
    href = jump.get_attribute("href")
    first_failed = page.locator(
        "#transcript [data-status=error], #transcript [data-status-type=error]"
    ).first
    assert href == "#" + first_failed.get_attribute("id")
    jump.click()
    page.wait_for_url(f"**{href}")
    expect(first_failed).to_be_visible()
    assert in_viewport(first_failed)


def test_markdown_headings_keep_the_transcripts_look_in_the_admin(
    auditor_at, chatui_server, audited
):
    page, _ = auditor_at(1280)
    page.goto(f"{chatui_server.url}/admin/chatui/conversation/{audited}/change/")
    heading = page.locator("#transcript .markdown h2", has_text="Findings")
    expect(heading).to_be_visible()
    style = heading.evaluate(
        "el => { const s = getComputedStyle(el);"
        " return [s.backgroundColor, s.textTransform, s.color,"
        " getComputedStyle(el.closest('.message')).color]; }"
    )
    background, transform, color, message_color = style
    assert background in ("rgba(0, 0, 0, 0)", "transparent")  # not a caption bar
    assert transform == "none" and color == message_color


@pytest.mark.parametrize("width", [1280, 390])
def test_admin_pages_do_not_overflow_horizontally(auditor_at, chatui_server, audited, width):
    page, _ = auditor_at(width)
    for path in ("/admin/chatui/conversation/", f"/admin/chatui/conversation/{audited}/change/"):
        page.goto(chatui_server.url + path)
        page.wait_for_load_state("load")
        overflow = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
        assert overflow <= 0, f"{path} overflows by {overflow}px at {width}px: {wide(page)}"


def test_a1_timeline_bars_are_in_time_order_on_a_time_axis(auditor_at, chatui_server, audited):
    """docs/rendering.md#a1: per run, the top-level bars start left to right as the rows go
    down (nested ones sit under their parent), and each bar is drawn inside its axis."""
    page, watch = auditor_at(1280)
    page.goto(f"{chatui_server.url}/admin/chatui/conversation/{audited}/change/")
    runs = page.locator("[data-timeline-steps]")
    assert runs.count() >= 2
    for index in range(runs.count()):
        rows = runs.nth(index).evaluate(
            """ol => [...ol.querySelectorAll('[data-timeline-step]')].map(li => {
                 const bar = li.querySelector('svg rect:last-of-type').getBoundingClientRect();
                 const axis = li.querySelector('svg').getBoundingClientRect();
                 return {depth: +li.dataset.depth, start: +li.dataset.startMs,
                         left: bar.left, right: bar.right, axisLeft: axis.left,
                         axisRight: axis.right, width: bar.width};
               })"""
        )
        top = [row for row in rows if row["depth"] == 0]
        assert [row["start"] for row in top] == sorted(row["start"] for row in top)
        assert all(row["width"] > 0 for row in rows)
        assert all(
            row["axisLeft"] - 0.5 <= row["left"] and row["right"] <= row["axisRight"] + 0.5
            for row in rows
        )
    assert page.locator("[data-timeline-step][data-depth='1']").count() >= 1  # G13
    assert page.locator("[data-timeline-step][data-outcome='failed']").count() >= 1
    assert watch.page_errors == [] and watch.console_errors == []  # no CSP refusal either


def test_a3_events_list_is_not_cut_off_at_1280px(auditor_at, chatui_server, audited):
    """docs/rendering.md#a3: every column of one conversation's events is on screen at
    1280 px (no scrolled-away columns), each row with its own time and an as-of link."""
    page, _ = auditor_at(1280)
    page.goto(f"{chatui_server.url}/admin/chatui/event/?conversation={audited}")
    results = page.locator("#changelist .results")
    expect(results).to_be_visible()
    cut = results.evaluate("el => el.scrollWidth - el.clientWidth")
    assert cut <= 0, f"the events list is cut off by {cut}px: {wide(page)}"
    overflow = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
    assert overflow <= 0, f"the page overflows by {overflow}px: {wide(page)}"
    last_header = page.locator("#result_list thead th").last
    assert last_header.evaluate("el => el.getBoundingClientRect().right") <= 1280
    times = page.locator("#result_list td.field-time_shown > time").all_inner_texts()
    assert len(times) >= 40 and len(set(times)) == len(times)  # each event its own time
    assert page.locator("[data-as-of-event]").count() == len(times)
