"""Watching a run, round 2, in a real browser over a real WebSocket: W1 calm batches
(never open → closed → open through a run with gaps between its tools; the reader's view
stays put), W2 the run strip docked above the composer with the tab's title mark, W3
waiting is not running, G22 the one-line result in the header (docs/rendering.md#w1,
#w2, #w3, #g22). Hostile text in the new lines stays text."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.support.browser import completed, normalised, post, started, wait_connected

HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script>'

#: Every 50 ms, the `open` state of the batch holding `first` (once it exists).
SAMPLER = """(first) => {
  window.__samples = [];
  window.__sampler = setInterval(() => {
    const entry = document.querySelector(`[data-tool-call-id="${first}"]`);
    const batch = entry && entry.closest("[data-tool-batch]");
    window.__samples.push(batch ? (batch.open ? "open" : "closed") : "none");
  }, 50);
}"""


def say(text: str, message_id: str) -> dict:
    return {"type": "agent.step.completed", "message_id": message_id, "content": text,
            "run_id": "live"}  # fmt: skip


def flaps(samples: list[str]) -> bool:
    """Does the sequence go open → closed → open anywhere?"""
    seen_open = seen_closed_after = False
    for sample in samples:
        if sample == "open":
            if seen_closed_after:
                return True
            seen_open = True
        elif sample == "closed" and seen_open:
            seen_closed_after = True
    return False


@pytest.fixture
def watching(chatui_server, open_page):
    """A conversation with a run going, open in a page whose socket is connected."""
    pages: list = []

    def opener(*, height: int = 900, before: list | None = None):
        conversation_id = chatui_server.new_conversation("watching round 2")
        events = [
            *(before or []),
            {"type": "user.message", "content": "go", "run_id": "live"},
            {"type": "agent.status", "status": "running", "run_id": "live"},
        ]
        chatui_server.post_events(conversation_id, events)
        page, watch = open_page(f"/c/{conversation_id}/", height=height)
        page.wait_for_function(
            f"() => document.querySelector('#transcript[data-last-seq=\"{len(events)}\"]')"
        )
        wait_connected(page)
        pages.append(watch)
        return page, conversation_id

    yield opener
    for watch in pages:
        assert watch.page_errors == [] and watch.dialogs == []


def test_w1_a_batch_never_goes_open_closed_open_through_a_run_with_gaps(chatui_server, watching):
    page, cid = watching()
    page.evaluate(SAMPLER, "w0")
    for n in range(4):  # four tools, each with a pause before the next starts
        post(chatui_server, cid, started(f"w{n}", "read_file", args={"path": f"f{n}.py"}))
        time.sleep(0.3)
        post(chatui_server, cid, completed(f"w{n}", result=f"{n} lines", duration_ms=300))
        time.sleep(0.4)  # the gap: no tool runs, the batch must stay open
    expect(page.locator("[data-tool-batch]")).to_have_attribute("data-count", "4")
    post(chatui_server, cid, say("All four files read.", "end"))  # the run moves past it
    batch = page.locator("[data-tool-batch]")
    expect(batch).not_to_have_attribute("open", "")
    time.sleep(0.3)
    post(chatui_server, cid, {"type": "agent.status", "status": "completed", "run_id": "live"})
    expect(page.locator("#run-state")).to_have_attribute("data-conversation-status", "completed")
    time.sleep(0.2)
    samples = page.evaluate("() => { clearInterval(window.__sampler); return window.__samples; }")
    shown = [sample for sample in samples if sample != "none"]
    assert shown and shown[0] == "open", samples
    assert not flaps(shown), samples
    assert shown[-1] == "closed"
    # The page ends as a fresh load shows it (S3).
    live = normalised(page)
    page.reload()
    assert normalised(page) == live


def test_w1_the_view_stays_put_when_a_batch_above_it_changes(chatui_server, watching):
    page, cid = watching(height=600)
    # chatui.js keeps the view itself, not only a browser's CSS scroll anchoring: off here.
    page.evaluate(
        "() => { for (const el of [document.documentElement, document.body])"
        " el.style.overflowAnchor = 'none'; }"
    )
    post(chatui_server, cid, started("a1", "crawl"))
    expect(page.locator('[data-tool-call-id="a1"]')).to_be_attached()
    for n in range(12):
        post(chatui_server, cid, say(f"Paragraph {n}.\n\n" + "More words here. " * 30, f"t{n}"))
    expect(page.locator('[data-message-id="t11"]')).to_be_attached()
    page.locator('[data-message-id="t6"]').evaluate("el => el.scrollIntoView({block: 'start'})")
    page.evaluate("() => window.scrollBy(0, -100)")  # the reader reads, not at the bottom
    page.wait_for_timeout(200)
    reading = page.locator('[data-message-id="t6"]')
    before = reading.bounding_box()["y"]
    long = "\n".join(f"crawled page {n}" for n in range(40))
    post(chatui_server, cid, completed("a1", result=long))  # the batch above changes size
    expect(page.locator('[data-tool-call-id="a1"]')).to_have_attribute("data-status", "success")
    page.wait_for_timeout(200)
    assert abs(reading.bounding_box()["y"] - before) <= 2


def test_w2_the_run_strip_is_docked_says_what_happens_and_marks_the_title(chatui_server, watching):
    history = [{"type": "user.message", "content": f"line {n}\n" * 5} for n in range(20)]
    page, cid = watching(height=600, before=history)
    strip = page.locator("[data-run-strip]")
    expect(strip).to_be_visible()
    page.wait_for_function("() => document.title.startsWith('\u25cf ')")  # ●
    post(
        chatui_server,
        cid,
        started("ok", "list_files"),
        completed("ok", result="a.txt"),
        started("bad", "fetch"),
        completed("bad", error=HOSTILE),
        started("r1", "read_file"),
        {"type": "agent.tool.progress", "tool_call_id": "r1", "message": HOSTILE,
         "run_id": "live"},
    )  # fmt: skip
    now = strip.locator("[data-run-strip-now]")
    expect(now).to_contain_text("Read File")
    expect(now.locator("[data-run-strip-progress]")).to_have_text(HOSTILE)  # text, not markup
    expect(strip.locator("[data-run-strip-counts]")).to_have_text("1 done · 1 failed · 1 running")
    page.evaluate("window.scrollTo(0, 0)")  # the reader scrolls away: the strip stays
    expect(strip).to_be_in_viewport()
    expect(strip.locator("[data-stop-run]")).to_be_in_viewport()
    strip.locator("[data-run-strip-failure]").click()
    expect(page.locator('[data-tool-call-id="bad"]')).to_be_in_viewport()
    post(
        chatui_server,
        cid,
        {"type": "agent.tool.approval_requested", "tool_call_id": "d1",
         "tool_name": "delete_file", "run_id": "live"},
    )  # fmt: skip
    expect(now).to_have_text("Approval needed: Delete File")
    page.wait_for_function("() => document.title.startsWith('\u270b ')")  # ✋
    page.evaluate("window.scrollTo(0, 0)")
    now.locator("a").click()
    expect(page.locator('[data-tool-call-id="d1"] [data-approve]')).to_be_in_viewport()
    post(chatui_server, cid, {"type": "agent.status", "status": "completed", "run_id": "live"})
    expect(strip).to_be_hidden()
    page.wait_for_function("() => !/^[\u25cf\u270b] /.test(document.title)")


def test_w2_the_strips_spinner_keeps_turning_across_live_frames(chatui_server, watching):
    """Every tool frame replaces the strip whole; a new element's CSS animation starts
    again at 0°, so at a tool every 100 ms the spinner hardly turned. chatui.js pins each
    turning animation to the start of the page's timeline: the replacement carries on."""
    page, cid = watching()
    spinner = "#run-strip .spinner"
    page.wait_for_function(f"() => document.querySelector('{spinner}')")
    page.evaluate(f"() => {{ window.__oldSpinner = document.querySelector('{spinner}'); }}")
    page.wait_for_timeout(300)  # the page's clock moves on: a new animation would start later
    post(chatui_server, cid, started("s1", "crawl"))
    expect(page.locator("[data-run-strip-now]")).to_contain_text("Crawl")
    replaced = page.evaluate(f"() => document.querySelector('{spinner}') !== window.__oldSpinner")
    assert replaced  # the frame did replace it: the property is worth testing
    page.wait_for_function(
        f"""() => {{
          const turning = document.querySelector('{spinner}').getAnimations();
          return turning.length === 1 && turning[0].startTime === 0
            && turning[0].currentTime >= 300;
        }}"""
    )
    for n in range(3):  # and across each frame after
        post(chatui_server, cid, completed(f"s{n + 1}", result="ok"))
        post(chatui_server, cid, started(f"s{n + 2}", "crawl"))
    expect(page.locator("[data-run-strip-counts]")).to_have_text("3 done · 1 running")
    page.wait_for_function(
        f"() => document.querySelector('{spinner}').getAnimations()[0].startTime === 0"
    )


def test_w3_a_waiting_entry_looks_unlike_a_running_one(chatui_server, watching):
    page, cid = watching()
    post(
        chatui_server,
        cid,
        {"type": "agent.step.completed", "content": "", "run_id": "live",
         "tool_calls": [{"id": "q1", "name": "later"}]},
        started("r1", "crawl"),
    )  # fmt: skip
    waiting = page.locator('[data-tool-call-id="q1"]')
    running = page.locator('[data-tool-call-id="r1"]')
    expect(waiting).to_have_attribute("data-status", "queued")
    expect(waiting.locator("[data-tool-waiting]")).to_have_text("waiting")
    assert waiting.locator("time[data-elapsed]").count() == 0  # no clock: nothing runs yet
    assert waiting.locator(".icon--circle-dashed").count() == 1
    expect(running.locator("[data-tool-running] time[data-elapsed]")).to_have_count(1)
    spin = running.locator(".icon--loader-circle").evaluate(
        "el => getComputedStyle(el).animationName"
    )
    still = waiting.locator(".icon--circle-dashed").evaluate(
        "el => getComputedStyle(el).animationName"
    )
    assert spin == "spin" and still == "none"
    colours = [
        entry.locator(".tool-icon").evaluate("el => getComputedStyle(el).color")
        for entry in (waiting, running)
    ]
    assert colours[0] != colours[1]  # muted, not the running colour
    expect(page.locator("[data-batch-queued]")).to_have_text("1 waiting")


def test_g22_a_closed_card_shows_outcome_duration_and_preview(chatui_server, watching):
    page, cid = watching()
    post(chatui_server, cid, started("c1", "run_tests"))
    post(
        chatui_server,
        cid,
        {"type": "agent.tool.progress", "tool_call_id": "c1", "message": "→ 12 of 40",
         "run_id": "live"},
    )  # fmt: skip
    entry = page.locator('[data-tool-call-id="c1"]')
    expect(entry.locator(".tool-head [data-tool-preview-line]")).to_have_text("→ 12 of 40")
    post(
        chatui_server,
        cid,
        completed("c1", error=f"{HOSTILE} 3 tests failed\nTraceback…", duration_ms=1200),
    )
    batch = page.locator("[data-tool-batch]")
    expect(batch).to_have_attribute("data-has-error", "")  # G6: rendered open
    batch.locator(":scope > summary").click()  # the reader closes it
    expect(batch).not_to_have_attribute("open", "")
    summary = batch.locator(":scope > summary")
    expect(summary.locator("[data-batch-preview]")).to_have_text(f"{HOSTILE} 3 tests failed")
    expect(summary.locator("[data-batch-duration]")).to_have_text("1.2 s")
    expect(summary.locator(".icon--circle-x")).to_have_count(1)
    expect(summary.locator("[data-batch-preview]")).to_be_visible()  # seen without opening
    assert page.locator("#transcript img").count() == 0  # the hostile markup stayed text
