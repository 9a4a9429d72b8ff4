"""docs/rendering.md#time-travel in a real browser: the replay player plays, pauses, steps and
scrubs, and each frame it shows is the page as it stood after that event."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import normalised
from tests.support.showcase import showcase_events

FRAMES_SEEN = """() => {
  const player = document.getElementById("replay");
  window.__framesSeen = [];
  new MutationObserver(() => window.__framesSeen.push(player.getAttribute("data-shown-seq")))
    .observe(player, {attributes: true, attributeFilter: ["data-shown-seq"]});
}"""

# The player is idle: the seq it shows is the one asked for (the scrubber's).
SETTLED = """() => document.getElementById("replay").getAttribute("data-shown-seq")
  === document.querySelector("[data-replay-scrubber]").value"""


@pytest.fixture(scope="module")
def showcase(chatui_server) -> tuple[str, int]:
    conversation_id = chatui_server.new_conversation("replayed showcase")
    answer = chatui_server.post_events(conversation_id, showcase_events())
    return conversation_id, answer["last_seq"]


def shown_seq(page, seq: int) -> None:
    expect(page.locator("#replay")).to_have_attribute("data-shown-seq", str(seq), timeout=20000)
    expect(page.locator("#transcript")).to_have_attribute("data-last-seq", str(seq))


def as_of(open_page, conversation_id: str, seq: int) -> str:
    page, _ = open_page(f"/c/{conversation_id}/?at={seq}")
    return normalised(page)


def test_sec14_replay_at_16x_of_the_showcase_ends_equal_to_a_fresh_load(showcase, open_page):
    conversation_id, last_seq = showcase
    page, watch = open_page(f"/c/{conversation_id}/replay")
    page.evaluate(FRAMES_SEEN)
    page.select_option("[data-replay-speed]", "16")
    page.click("[data-replay-play]")
    expect(page.locator("#replay")).to_have_attribute("data-playing", "")
    shown_seq(page, last_seq)
    expect(page.locator("#replay")).not_to_have_attribute("data-playing", "")
    seen = [int(seq) for seq in page.evaluate("window.__framesSeen")]
    assert len(seen) > 1 and seen == sorted(set(seen)) and seen[-1] == last_seq  # forward only
    fresh, _ = open_page(f"/c/{conversation_id}/")
    assert normalised(page) == normalised(fresh)
    expect(page.locator("#moment-label")).to_contain_text(f"As of event {last_seq} · ")
    assert watch.page_errors == [] and watch.console_errors == []


def test_sec14_replay_scrubber_jumps_backwards_and_forwards(showcase, open_page):
    conversation_id, last_seq = showcase
    page, watch = open_page(f"/c/{conversation_id}/replay")
    scrubber = page.locator("[data-replay-scrubber]")
    scrubber.focus()
    page.keyboard.press("End")  # the range input's own keys: to the last event
    shown_seq(page, last_seq)
    for seq in (30, 5, 41):  # back, back, forward
        scrubber.evaluate(
            "(el, seq) => { el.value = String(seq);"
            " el.dispatchEvent(new Event('input', {bubbles: true})); }",
            seq,
        )
        shown_seq(page, seq)
        expect(page.locator("#moment-label")).to_contain_text(f"As of event {seq} · ")
        assert normalised(page) == as_of(open_page, conversation_id, seq)
    assert watch.page_errors == []


def test_sec14_replay_pause_and_step(showcase, open_page):
    conversation_id, _ = showcase
    page, watch = open_page(f"/c/{conversation_id}/replay")
    play = page.locator("[data-replay-play]")
    play.click()  # 1×: one event a second (the showcase's recorded pace)
    expect(page.locator("#replay")).to_have_attribute("data-playing", "")
    expect(page.locator("#replay")).not_to_have_attribute("data-shown-seq", "0", timeout=10000)
    play.click()
    expect(page.locator("#replay")).not_to_have_attribute("data-playing", "")
    expect(play).to_have_attribute("aria-pressed", "false")
    page.wait_for_function(SETTLED)  # a fetch that was under way has landed
    paused_at = int(page.locator("#replay").get_attribute("data-shown-seq"))
    for seq in (paused_at + 1, paused_at + 2):
        page.click("[data-replay-step]")
        shown_seq(page, seq)
        assert normalised(page) == as_of(open_page, conversation_id, seq)
    assert watch.page_errors == []


def test_sec14_replay_keeps_the_recorded_pace_with_idle_gaps_cut_to_2_s(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("pace")
    times = ["10:00:00", "11:00:00", "11:00:00.500", "10:59:00"]  # an hour idle; a clock skew
    chatui_server.post_events(
        conversation_id,
        [
            {"type": "user.message", "content": f"m{n}", "timestamp": f"2026-11-02T{t}Z"}
            for n, t in enumerate(times)
        ],
    )
    page, _ = open_page(f"/c/{conversation_id}/replay")
    # 0 → 2000 (an hour, cut to 2 s) → 2500 → 2500 (a step back in time waits 0).
    expect(page.locator("#replay")).to_have_attribute("data-replay-ms", "2500")
    expect(page.locator("[data-replay-length]")).to_have_text("0:03 at 1×")


def test_sec14_a_past_moment_keeps_its_clock(chatui_server, open_page):
    """A tool pending at event N shows how long it had been pending then, not since
    (chatui.js reckons from #live[data-as-of]); the page has no composer and no socket."""
    conversation_id = chatui_server.new_conversation("clock")
    chatui_server.post_events(
        conversation_id,
        [
            {"type": "agent.tool.started", "tool_call_id": "t1", "tool_name": "slow",
             "run_id": "r", "timestamp": "2026-11-02T10:00:00Z"},
            {"type": "agent.tool.progress", "tool_call_id": "t1", "progress": 0.5,
             "run_id": "r", "timestamp": "2026-11-02T10:01:05Z"},
        ],
    )  # fmt: skip
    page, watch = open_page(f"/c/{conversation_id}/?at=2")
    expect(page.locator("[data-tool-call-id=t1] time[data-elapsed]")).to_have_text("1 min 5 s")
    expect(page.locator("#moment-label")).to_contain_text("As of event 2 · 2026-11-02 10:01:05")
    assert page.locator("form#composer").count() == 0
    assert page.evaluate("window.__chatuiSocketOpen") is None  # never opened one
    page.click("[data-back-to-now]")
    expect(page.locator("form#composer")).to_be_attached()
    assert watch.page_errors == []


# -- W10: time travel steps --------------------------------------------------------------


def test_w10_buttons_and_arrow_keys_step_a_past_moment(showcase, open_page):
    conversation_id, last_seq = showcase
    page, watch = open_page(f"/c/{conversation_id}/?at=5")
    page.keyboard.press("ArrowRight")
    page.wait_for_url(f"**/c/{conversation_id}/?at=6")
    expect(page.locator("#moment-label")).to_contain_text("As of event 6")
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(f"**/c/{conversation_id}/?at=5")
    page.click("[data-moment-step=previous]")
    page.wait_for_url(f"**/c/{conversation_id}/?at=4")
    expect(page.locator("#transcript")).to_have_attribute("data-last-seq", "4")
    # At either end of the log that way is a disabled button, and its key does nothing.
    page.goto(page.url.replace("?at=4", "?at=0"))
    expect(page.locator(".moment-bar button[aria-label='Previous event']")).to_be_disabled()
    page.keyboard.press("ArrowLeft")
    page.goto(page.url.replace("?at=0", f"?at={last_seq}"))
    expect(page.locator(".moment-bar button[aria-label='Next event']")).to_be_disabled()
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(300)
    assert page.url.endswith(f"?at={last_seq}")
    assert watch.page_errors == [] and watch.console_errors == []


def test_w10_the_moment_bar_is_one_line_on_a_phone(showcase, open_page):
    conversation_id, _ = showcase
    page, _ = open_page(f"/c/{conversation_id}/?at=12", width=375, height=740)
    middles = page.eval_on_selector_all(
        ".moment-bar > *",
        "els => els.map(el => {"
        " const r = el.getBoundingClientRect(); return r.top + r.height / 2; })",
    )
    assert max(middles) - min(middles) < 2, middles  # one row: every item on one line
    label = page.locator("#moment-label").bounding_box()
    assert label["height"] < 24  # and the label itself one line of text
    bar = page.locator(".moment-bar").bounding_box()
    assert bar["x"] + bar["width"] <= 375
    expect(page.locator("#moment-label")).to_contain_text("As of event 12")
    # Its buttons keep their names for a screen reader.
    expect(page.locator("[data-back-to-now]")).to_have_accessible_name("Back to now")


def test_w10_replay_length_follows_the_speed(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("length")
    chatui_server.post_events(
        conversation_id,
        [
            {"type": "user.message", "content": f"m{n}", "timestamp": f"2026-11-02T10:00:{s}Z"}
            for n, s in enumerate(("00", "02", "04", "06", "08"))
        ],
    )
    page, _ = open_page(f"/c/{conversation_id}/replay")
    length = page.locator("[data-replay-length]")
    expect(length).to_have_text("0:08 at 1×")
    page.select_option("[data-replay-speed]", "4")
    expect(length).to_have_text("0:02 at 4×")
    page.select_option("[data-replay-speed]", "16")
    expect(length).to_have_text("0:01 at 16×")
