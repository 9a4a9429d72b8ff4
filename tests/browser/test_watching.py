"""docs/rendering.md#watching-a-run "Watching a run" and G14–G16 in a real browser over a real
WebSocket: live batch summaries, entry-by-entry updates that keep the reader's place, autoscroll
with batches open, one honest outcome, attempt history, full output in place, one
status line, the heading and the composer's reason."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import completed, post, started, wait_connected

AT_BOTTOM = (
    "() => { const s = document.scrollingElement;"
    " return s.scrollHeight - s.scrollTop - s.clientHeight < 80; }"
)


def progress(call_id: str, **fields) -> dict:
    return {"type": "agent.tool.progress", "tool_call_id": call_id, "run_id": "live", **fields}


def say(text: str, message_id: str) -> dict:
    return {
        "type": "agent.step.completed",
        "message_id": message_id,
        "content": text,
        "run_id": "live",
    }


@pytest.fixture
def watching(chatui_server, open_page):
    """A conversation with a run going, open in a page whose socket is connected."""

    def opener(*, height: int = 900, width: int = 1280, before: list | None = None):
        conversation_id = chatui_server.new_conversation("watching")
        events = [
            *(before or []),
            {"type": "user.message", "content": "go", "run_id": "live"},
            {"type": "agent.status", "status": "running", "run_id": "live"},
        ]
        chatui_server.post_events(conversation_id, events)
        page, watch = open_page(f"/c/{conversation_id}/", width=width, height=height)
        page.wait_for_function(
            f"() => document.querySelector('#transcript[data-last-seq=\"{len(events)}\"]')"
        )
        wait_connected(page)
        pages.append((page, watch))
        return page, conversation_id

    pages: list = []
    yield opener
    for _, watch in pages:
        assert watch.page_errors == []


def summary_of(page, call_id: str):
    batch = page.locator("[data-tool-batch]", has=page.locator(f'[data-tool-call-id="{call_id}"]'))
    return batch, batch.locator(":scope > summary")


def test_sec10_running_batch_summary_names_tools_and_shows_progress_live(chatui_server, watching):
    page, cid = watching()
    post(chatui_server, cid, started("l1", "list_files"), completed("l1", result="a.txt"))
    post(chatui_server, cid, started("r1", "read_file"), started("r2", "read_file"))
    post(chatui_server, cid, started("w1", "write_file"), started("d1", "delete_file"))
    batch, summary = summary_of(page, "r1")
    expect(batch).to_have_attribute("data-count", "5", timeout=5000)
    expect(summary.locator("[data-batch-names]")).to_have_text("List Files, Read File +2")
    expect(summary.locator("[data-batch-running]")).to_have_text("4 running")
    spinner = summary.locator("[data-batch-running] .spinner")
    size = spinner.evaluate("el => [el.offsetWidth, el.offsetHeight]")  # unrotated box
    assert size == [14, 14]  # a round spinner, not a 4×19 px sliver
    expect(batch).to_have_attribute("open", "")  # a running batch the reader left alone is open
    summary.click()  # the reader closes it: the summary alone must tell what runs
    expect(batch).not_to_have_attribute("open", "")
    live = summary.locator("[data-batch-live]")
    for n in range(1, 4):
        post(chatui_server, cid, progress("r1", message=f"reading chunk {n}"))
        expect(live.locator("[data-batch-progress]")).to_have_text(f"reading chunk {n}")
    expect(live).to_contain_text("Read File")
    expect(live.locator("time[data-elapsed]")).to_have_text(re.compile(r"^\d+ s$"))
    assert summary.is_visible() and live.is_visible()
    assert batch.get_attribute("open") is None  # the reader's choice held


def test_sec10_reader_choices_survive_20_live_updates_and_the_runs_end(chatui_server, watching):
    page, cid = watching()
    post(chatui_server, cid, started("a1", "crawl"))
    first, first_summary = summary_of(page, "a1")
    expect(first).to_have_attribute("open", "")  # running, untouched: open
    first_summary.click()  # the reader closes it
    post(chatui_server, cid, say("Now the second part.", "mid"))
    post(chatui_server, cid, started("b1", "grep"), completed("b1", result="one\ntwo\nthree"))
    second, second_summary = summary_of(page, "b1")
    expect(second.locator('[data-tool-call-id="b1"]')).to_have_attribute("data-status", "success")
    expect(second).to_have_attribute("open", "")  # W1: the run is still in it
    post(chatui_server, cid, say("And that is the second part.", "after"))
    expect(second).not_to_have_attribute("open", "")  # W1: the run moved past it
    second_summary.click()  # the reader opens it
    for n in range(20):
        post(chatui_server, cid, progress("a1", message=f"page {n}"))
        expect(first_summary.locator("[data-batch-progress]")).to_have_text(f"page {n}")
        assert first.get_attribute("open") is None
        assert second.get_attribute("open") == ""
    post(
        chatui_server,
        cid,
        completed("a1", result="done"),
        {"type": "agent.status", "status": "completed", "run_id": "live"},
    )
    expect(page.locator("#run-state")).to_have_attribute("data-conversation-status", "completed")
    expect(page.locator('[data-tool-call-id="a1"]')).to_have_attribute("data-status", "success")
    assert page.locator(f"#{first.get_attribute('id')}").get_attribute("open") is None
    assert page.locator(f"#{second.get_attribute('id')}").get_attribute("open") == ""


def test_sec10_selection_and_focus_survive_a_live_update_of_another_entry(chatui_server, watching):
    page, cid = watching()
    text = "\n".join(f"row {n}" for n in range(5))
    post(chatui_server, cid, started("s1", "query", args={"q": "x"}), completed("s1", result=text))
    post(chatui_server, cid, started("s2", "crawl"))
    batch, _ = summary_of(page, "s2")
    expect(batch).to_have_attribute("open", "")
    toggle = page.locator('[data-tool-call-id="s1"] [data-tool-menu-button]')  # W8: its actions
    toggle.focus()
    page.evaluate(
        """() => {
        document.activeElement.__mark = "kept";
        const result = '[data-tool-call-id="s1"] .tool-result span';
        const node = document.querySelector(result).firstChild;
        const range = document.createRange();
        range.setStart(node, 0); range.setEnd(node, 11);
        const selection = window.getSelection();
        selection.removeAllRanges(); selection.addRange(range);
    }"""
    )
    for n in range(3):
        post(chatui_server, cid, progress("s2", message=f"step {n}"))
        expect(page.locator('[data-tool-call-id="s2"] [data-tool-progress-line]')).to_have_text(
            f"step {n}"
        )
    assert page.evaluate("() => document.activeElement.__mark") == "kept"
    assert page.evaluate("() => window.getSelection().toString()") == "row 0\nrow 1"


def test_sec10_with_a_batch_open_at_the_bottom_new_entries_stay_in_view(chatui_server, watching):
    history = [{"type": "user.message", "content": f"line {n}\n" * 5} for n in range(20)]
    page, cid = watching(height=600, before=history)
    page.wait_for_function(AT_BOTTOM)
    post(chatui_server, cid, started("v0", "step"))
    batch, _ = summary_of(page, "v0")
    expect(batch).to_have_attribute("open", "")
    for n in range(1, 9):
        post(chatui_server, cid, started(f"v{n}", "step", args={"n": n}))
        entry = page.locator(f'[data-tool-call-id="v{n}"]')
        expect(entry).to_be_in_viewport()
        page.wait_for_function(AT_BOTTOM)
    assert page.locator("#new-activity").is_hidden()


def test_sec10_new_activity_pill_docks_above_the_composer_not_over_output(chatui_server, watching):
    history = [{"type": "user.message", "content": f"line {n}\n" * 5} for n in range(20)]
    page, cid = watching(height=600, before=history)
    page.evaluate("window.scrollTo(0, 0)")
    post(chatui_server, cid, started("p1", "step"))
    pill = page.locator("#new-activity")
    expect(pill).to_be_visible()
    box = pill.bounding_box()
    form = page.locator("form#composer").bounding_box()
    assert box["y"] + box["height"] <= form["y"]  # above the composer, inside its bar
    bar = page.locator(".composer-bar").bounding_box()
    assert box["y"] >= bar["y"]


def test_g16_more_lines_expands_in_place(chatui_server, watching):
    page, cid = watching()
    long = "\n".join(f"line {n}: <b>&amp;</b>" for n in range(1, 21))
    post(chatui_server, cid, started("m1", "cat"), completed("m1", result=long))
    entry = page.locator('[data-tool-call-id="m1"]')
    expect(entry).to_have_attribute("data-status", "success")
    expect(summary_of(page, "m1")[0]).to_have_attribute("open", "")  # W1: the run is in it
    more = entry.locator("[data-tool-full] > summary")
    expect(more.locator(".tool-more-closed")).to_have_text("… (12 more lines)")
    full = entry.locator("[data-tool-full-text]")
    assert full.is_hidden()
    more.click()
    expect(full).to_be_visible()
    assert full.inner_text() == long  # escaped, not JSON-quoted, every line
    assert entry.locator(".tool-result-preview").is_hidden()  # in place of the preview
    assert full.evaluate("el => getComputedStyle(el).fontFamily").lower().find("mono") >= 0
    entry.locator("[data-tool-menu-button]").click()  # W8: the copies are in its menu
    expect(entry.locator("[data-copy-output]")).to_be_visible()
    expect(entry.locator("[data-copy-args]")).to_have_count(0)  # no args sent: nothing to copy


def test_g15_a_404_fetch_and_an_exit_2_command_are_failures(chatui_server, watching):
    page, cid = watching()
    post(
        chatui_server,
        cid,
        started("f1", "fetch", args={"url": "https://example.org/x"}),
        completed(
            "f1",
            result="Not Found",
            details={"kind": "fetch", "url": "https://example.org/x", "status_code": 404},
        ),
        started("c1", "run_cmd", args={"cmd": "make"}),
        completed(
            "c1", result="make: *** [all] Error 2", details={"kind": "command", "exit_code": 2}
        ),
    )
    for call in ("f1", "c1"):
        entry = page.locator(f'[data-tool-call-id="{call}"]')
        expect(entry).to_have_attribute("data-status", "error")
        expect(entry.locator(".tool-icon .icon--circle-x")).to_have_count(1)  # W7
    batch, summary = summary_of(page, "f1")
    expect(batch).to_have_attribute("data-has-error", "")
    expect(summary.locator("[data-batch-failed]")).to_have_text("2 failed")


def test_g14_a_retried_call_that_succeeded_is_one_entry_not_counted_failed(chatui_server, watching):
    page, cid = watching()
    post(
        chatui_server,
        cid,
        started("t1", "flaky", args={"q": 1}, attempt=1, max_attempts=3),
        completed("t1", error="timeout"),
    )
    found, _ = summary_of(page, "t1")
    expect(found.locator(":scope > summary [data-batch-failed]")).to_have_text("1 failed")
    batch = page.locator(f"#{found.get_attribute('id')}")  # the entry will show t2's call id
    summary = batch.locator(":scope > summary")
    post(
        chatui_server,
        cid,
        started("t2", "flaky", args={"q": 1}, attempt=2, max_attempts=3),
        completed("t2", result="ok"),
    )
    entry = page.locator("[data-attempts]")
    expect(entry).to_have_attribute("data-status", "success")
    expect(entry.locator("[data-tool-attempts]")).to_have_text("failed once, succeeded on 2/3")
    assert page.locator("li[data-role=tool]").count() == 1
    expect(summary.locator("[data-batch-failed]")).to_have_count(0)
    assert batch.get_attribute("data-has-error") is None


def test_sec10_one_status_line_at_a_time(chatui_server, watching):
    page, cid = watching()
    thinking = page.locator("[data-status-type=thinking]")
    for text in ("Reading your message…", "Planning…"):
        post(
            chatui_server,
            cid,
            {"type": "agent.status", "status": "thinking", "message": text, "run_id": "live"},
        )
        expect(thinking).to_have_text(text)
        expect(thinking).to_have_count(1)
    post(chatui_server, cid, started("x1", "list_files"))
    expect(page.locator('[data-tool-call-id="x1"]')).to_be_attached()
    expect(thinking).to_have_count(0)  # the run's work took the line's place


def test_sec10_heading_follows_the_first_message(chatui_server, open_page):
    cid = chatui_server.new_conversation()
    page, _ = open_page(f"/c/{cid}/")
    wait_connected(page)
    heading = page.locator("h1#conversation-title")
    expect(heading).to_have_text("New conversation")
    assert page.locator("#composer-busy").is_hidden()  # idle: the composer takes input
    chatui_server.post_events(
        cid,
        [
            {"type": "user.message", "content": "Find the flaky test", "run_id": "h"},
            {"type": "agent.status", "status": "running", "run_id": "h"},
        ],
    )
    expect(heading).to_have_text("Find the flaky test")


def test_sec10_the_failure_banner_is_brought_into_view_when_following(chatui_server, watching):
    history = [{"type": "user.message", "content": f"line {n}\n" * 5} for n in range(20)]
    page, cid = watching(height=600, before=history)
    page.wait_for_function(AT_BOTTOM)
    post(chatui_server, cid, started("e1", "step"))
    expect(page.locator('[data-tool-call-id="e1"]')).to_be_in_viewport()
    post(chatui_server, cid, progress("e1", output="x\n" * 12))
    post(
        chatui_server,
        cid,
        completed("e1", error="boom"),
        {"type": "agent.status", "status": "failed", "error_message": "It broke", "run_id": "live"},
    )
    expect(page.locator("[data-run-error]")).to_be_in_viewport()


def test_g16_more_lines_expands_without_javascript(chatui_server, browser, auth_state):
    cid = chatui_server.new_conversation("no js")
    long = "\n".join(f"line {n}" for n in range(1, 21))
    chatui_server.post_events(cid, [started("n1", "cat"), completed("n1", result=long)])
    context = browser.new_context(storage_state=auth_state, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{chatui_server.url}/c/{cid}/")
        if page.locator("[data-tool-batch][open]").count() == 0:  # W1: open while a run goes
            page.locator("[data-tool-batch] > summary").click()
        page.locator("[data-tool-full] > summary").click()
        expect(page.locator("[data-tool-full-text]")).to_be_visible()
        assert "line 20" in page.locator("[data-tool-full-text]").inner_text()
    finally:
        context.close()


def test_w4_page_list_and_rail_count_the_same_outcomes(chatui_server, watching):
    """docs/rendering.md#w4: a recovered retry, a failure, a denial, an expiry and a Stop
    read the same on the page's batch summaries, the rail row and the list row."""
    page, cid = watching()
    ask = {"type": "agent.tool.approval_requested", "tool_name": "delete_file", "run_id": "live"}
    post(
        chatui_server,
        cid,
        started("t1", "flaky", args={"q": 1}, attempt=1, max_attempts=3),
        completed("t1", error="timeout"),
        started("t2", "flaky", args={"q": 1}, attempt=2, max_attempts=3),
        completed("t2", result="ok"),
        started("f1", "fetch"),
        completed("f1", error="<b>boom</b>"),
        {**ask, "tool_call_id": "d1"},
        {**ask, "tool_call_id": "e1", "timeout_s": 1},
        started("s1", "sleep"),
    )
    card = page.locator('[data-tool-call-id="d1"]')
    card.locator("[data-deny]").click()
    expect(card).to_have_attribute("data-status", "denied", timeout=5000)
    page.wait_for_timeout(1500)  # e1's deadline passes; the next read records the expiry
    post(chatui_server, cid, {"type": "agent.status", "status": "cancelled", "run_id": "live"})
    page.reload()
    expect(page.locator('[data-tool-call-id="e1"]')).to_have_attribute("data-status", "denied")

    def total(attribute: str) -> int:
        texts = page.locator(f"[data-tool-batch] > summary [{attribute}]").all_inner_texts()
        return sum(int(text.split()[0]) for text in texts)

    counts = {
        name: total(f"data-batch-{name}") for name in ("failed", "denied", "expired", "cancelled")
    }
    assert counts == {"failed": 1, "denied": 1, "expired": 1, "cancelled": 1}
    expected = "5 tools · 1 failed · 1 denied · 1 expired · 1 cancelled"
    rail = page.locator(f"#row-{cid} [data-row-counts]")
    expect(rail).to_have_text(expected)
    page.goto(f"{chatui_server.url}/")
    expect(page.locator(f"#row-{cid} [data-row-counts]")).to_have_text(expected)
