"""W8 (docs/rendering.md#w8) in a real browser: the page's keys — j / k between entries,
e to the next failure, / to search, ? for the list — and never while typing; Tab through
the showcase, one stop per collapsed entry and every focused element in view; an entry's
actions menu by keyboard."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import completed, started, wait_connected
from tests.support.showcase import showcase_events

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


#: One Tab stop, as the walk records it: where it is and whether anything covers it.
#: `action`: a tool entry's own Copy output / Copy args / Details control (W8: behind its menu).
STOP = """() => {
  const ACTIONS =
    "[data-copy-output], [data-copy-args], [data-tool-details] > summary, .copy-button";
  const el = document.activeElement;
  if (!el || el === document.body || el === document.documentElement) return null;
  const rect = el.getBoundingClientRect();
  const top = document.querySelector(".topbar").getBoundingClientRect();
  const bottom = document.querySelector(".composer-bar").getBoundingClientRect();
  const batch = el.closest("[data-tool-batch]");
  const entry = el.closest("[data-role=tool]");
  return {
    key: el.id || el.outerHTML.slice(0, 160),
    what: el.tagName + " " + (el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 40),
    batch: batch && !batch.open ? batch.id : null,
    entry: entry ? entry.id : null,
    action: !!entry && el.matches(ACTIONS),
    menuButton: el.matches("[data-tool-menu-button]"),
    inChrome: !!el.closest(".topbar, .composer-bar, .skip-link"),
    top: rect.top, bottom: rect.bottom, height: rect.height,
    topBar: top.bottom, bottomBar: bottom.top, viewport: window.innerHeight,
  };
}"""


def tab_walk(page) -> list[dict]:
    """Every Tab stop of the page from its start, in order, once round."""
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); }")
    stops: list[dict] = []
    for _ in range(400):
        page.keyboard.press("Tab")
        stop = page.evaluate(STOP)
        if stop is None or (stops and stop["key"] == stops[0]["key"]):
            break
        stops.append(stop)
    else:
        raise AssertionError("Tab never came round")
    return stops


def assert_in_view(stop: dict) -> None:
    """Not under the sticky top bar, not under the composer and run strip: the element's
    top edge is between them, and all of it unless it is taller than the room there."""
    if stop["inChrome"]:
        assert stop["top"] >= 0 and stop["bottom"] <= stop["viewport"] + 1, stop
        return
    room = stop["bottomBar"] - stop["topBar"]
    assert stop["top"] >= stop["topBar"] - 1, f"under the top bar: {stop}"
    assert stop["top"] < stop["bottomBar"], f"under the composer: {stop}"
    if stop["height"] <= room:
        assert stop["bottom"] <= stop["bottomBar"] + 1, f"under the composer: {stop}"


@pytest.fixture(scope="module")
def showcase(chatui_server) -> str:
    conversation_id = chatui_server.new_conversation("W8 showcase")
    chatui_server.post_events(conversation_id, showcase_events())
    return conversation_id


@pytest.mark.parametrize("size", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
def test_w8_tab_through_the_showcase_stops_at_most_once_per_collapsed_entry_and_focus_is_always_visible(  # noqa: E501
    showcase, open_page, size
):
    page, watch = open_page(f"/c/{showcase}/", width=size[0], height=size[1])
    page.wait_for_selector("#transcript [data-tool-batch]")
    batches = page.locator("#transcript [data-tool-batch]")
    closed = page.eval_on_selector_all(
        "#transcript [data-tool-batch]:not([open])", "els => els.map(el => el.id)"
    )
    assert closed and len(closed) < batches.count()  # as rendered: some open, some collapsed

    def check(stops: list[dict], collapsed: list[str]) -> None:
        for stop in stops:
            assert_in_view(stop)
        per_batch = {batch: [s for s in stops if s["batch"] == batch] for batch in collapsed}
        for batch, inside in per_batch.items():
            assert [s["key"] for s in inside] == [f"{batch}-summary"], (batch, inside)
        # An open entry: its Copy output / Copy args / Details are behind one menu button.
        assert [s for s in stops if s["action"]] == []
        for entry in {s["entry"] for s in stops if s["entry"]}:
            assert len([s for s in stops if s["entry"] == entry and s["menuButton"]]) <= 1

    as_rendered = tab_walk(page)
    check(as_rendered, closed)
    assert any(s["menuButton"] for s in as_rendered)  # the open batches' entries have menus

    # Every batch collapsed, as a reader who closed them all sees the page.
    page.evaluate(
        "() => document.querySelectorAll('#transcript [data-tool-batch]')"
        ".forEach(d => { d.open = false; })"
    )
    all_closed = page.eval_on_selector_all(
        "#transcript [data-tool-batch]", "els => els.map(el => el.id)"
    )
    collapsed = tab_walk(page)
    check(collapsed, all_closed)
    assert not any(s["entry"] for s in collapsed)  # nothing inside a collapsed entry
    assert len(collapsed) < len(as_rendered)
    assert watch.page_errors == [] and watch.console_errors == []


def test_w8_the_entry_menu_works_by_keyboard_and_copy_output_copies(
    keyed, open_page, chatui_server
):
    page, watch = open_page(f"/c/{keyed}/")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=chatui_server.url)
    entry = page.locator('[data-tool-call-id="ok1"]')
    button = entry.locator("[data-tool-menu-button]")
    menu = entry.locator("[data-tool-menu]")
    items = menu.locator("[role=menuitem]")
    expect(button).to_have_attribute("aria-haspopup", "menu")
    expect(menu).to_be_hidden()

    button.focus()
    page.keyboard.press("Enter")  # opens on its first item
    expect(menu).to_be_visible()
    expect(button).to_have_attribute("aria-expanded", "true")
    expect(items.nth(0)).to_be_focused()
    expect(items).to_have_text(["Copy output", "Copy args", "Details"])
    page.keyboard.press("ArrowDown")
    expect(items.nth(1)).to_be_focused()
    page.keyboard.press("j")  # the page's keys wait while the menu is open
    expect(items.nth(1)).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")  # past the last: round to the first
    expect(items.nth(0)).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(items.nth(2)).to_be_focused()
    page.keyboard.press("Home")
    expect(items.nth(0)).to_be_focused()
    page.keyboard.press("End")
    expect(items.nth(2)).to_be_focused()
    page.keyboard.press("Escape")  # closes, focus back on the button
    expect(menu).to_be_hidden()
    expect(button).to_be_focused()
    expect(button).to_have_attribute("aria-expanded", "false")

    page.keyboard.press("ArrowDown")  # ↓ on the button opens it too
    expect(items.nth(0)).to_be_focused()
    page.keyboard.press("Enter")  # Copy output
    expect(items.nth(0)).to_have_text("Copied")  # the feedback, on the item the reader chose
    assert page.evaluate("navigator.clipboard.readText()") == "[metadata]"
    expect(page.locator("#announcer")).to_have_text("Output copied")
    page.keyboard.press("Tab")  # leaves the menu, closed, for the stop after its button
    expect(menu).to_be_hidden()
    assert page.evaluate("() => !document.activeElement.closest('[data-tool-menu]')")
    assert page.evaluate("() => document.activeElement !== document.body")

    button.focus()
    page.keyboard.press("ArrowUp")  # ↑ opens it on its last item: Details
    expect(items.nth(2)).to_be_focused()
    page.keyboard.press("Enter")
    details = entry.locator("[data-tool-details]")
    expect(details).to_have_attribute("open", "")
    expect(menu).to_be_hidden()
    expect(details.locator("summary")).to_be_focused()
    expect(entry.locator("[data-tool-json]")).to_be_visible()
    page.keyboard.press("Enter")  # its summary closes it: focus goes back to the button
    expect(details).not_to_have_attribute("open", "")
    expect(button).to_be_focused()

    button.click()  # by mouse: a click elsewhere closes it
    expect(menu).to_be_visible()
    page.locator("#conversation-title").click()
    expect(menu).to_be_hidden()
    assert watch.page_errors == [] and watch.console_errors == []


def test_w8_without_javascript_details_is_a_plain_disclosure_and_no_menu_shows(
    keyed, browser, auth_state, chatui_server
):
    context = browser.new_context(storage_state=auth_state, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{chatui_server.url}/c/{keyed}/")
        entry = page.locator('[data-tool-call-id="ok1"]')
        expect(entry.locator("[data-tool-menu-button]")).to_be_hidden()  # it needs a script
        entry.locator("[data-tool-details] > summary").click()
        expect(entry.locator("[data-tool-json]")).to_be_visible()
    finally:
        context.close()


def test_w8_details_opened_from_the_menu_stay_open_when_the_entry_is_rendered_anew(
    chatui_server, open_page
):
    """A retry re-renders its entry under the same id (G14): Details the reader opened
    through the menu is the reader's choice, kept like a batch they opened by hand."""
    conversation_id = chatui_server.new_conversation("W8 details kept")
    chatui_server.post_events(
        conversation_id,
        [
            {"type": "user.message", "content": "go", "run_id": "r"},
            {"type": "agent.status", "status": "running", "run_id": "r"},
            started("d1", "flaky", args={"q": 1}, attempt=1, max_attempts=3),
            completed("d1", error="timeout"),
        ],
    )
    page, watch = open_page(f"/c/{conversation_id}/")
    wait_connected(page)
    entry = page.locator('[data-tool-call-id="d1"]')
    expect(entry).to_have_attribute("data-status", "error")
    entry.locator("[data-tool-menu-button]").click()
    entry.locator("[data-tool-menu-details]").click()
    expect(entry.locator("[data-tool-json]")).to_be_visible()
    entry_id = entry.get_attribute("id")
    page.evaluate(f"() => {{ document.getElementById('{entry_id}').__before = true; }}")
    chatui_server.post_events(
        conversation_id, [started("d2", "flaky", args={"q": 1}, attempt=2, max_attempts=3)]
    )
    # The entry was rendered anew under its id (not the element Details was opened in).
    page.wait_for_function(
        f"() => {{ const el = document.getElementById('{entry_id}'); return el && !el.__before; }}"
    )
    anew = page.locator(f"#{entry_id}")
    expect(anew.locator(":scope > [data-tool-details]")).to_have_attribute("open", "")
    expect(anew.locator(":scope > [data-tool-details] [data-tool-json]")).to_be_visible()
    assert watch.page_errors == []
