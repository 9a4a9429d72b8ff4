"""docs/rendering.md#live-updates in a real browser over a real WebSocket: L1–L4, G2 live, S3
equality."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import completed, normalised, post, started, wait_connected
from tests.support.showcase import showcase_events


@pytest.fixture
def live_page(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("live")
    chatui_server.post_events(
        conversation_id,
        [
            {"type": "user.message", "content": "go", "run_id": "live"},
            {"type": "agent.status", "status": "running", "run_id": "live"},
        ],
    )
    page, watch = open_page(f"/c/{conversation_id}/")
    page.wait_for_function("() => document.querySelector('#transcript[data-last-seq=\"2\"]')")
    wait_connected(page)
    yield page, conversation_id
    assert watch.page_errors == []


def test_l1_l2_card_in_dom_while_tool_still_running(chatui_server, live_page):
    page, conversation_id = live_page
    post(chatui_server, conversation_id, started("t1", "image_generation"))
    card = page.locator('[data-tool-call-id="t1"]')
    expect(card).to_have_attribute("data-status", "running", timeout=5000)
    expect(card.locator("[data-tool-title]")).to_have_text("Image Generation")
    assert card.locator("[data-tool-result]").count() == 0  # pending: no empty result box
    post(chatui_server, conversation_id, completed("t1", result="SUCCESS: Generated 1 image"))
    expect(card).to_have_attribute("data-status", "success", timeout=5000)
    # G10: the title did not change between running and done.
    expect(card.locator("[data-tool-title]")).to_have_text("Image Generation")


def test_g2_batch_count_grows_live_in_the_same_block(chatui_server, live_page):
    page, conversation_id = live_page
    post(chatui_server, conversation_id, started("g1", "list_files"))
    batch = page.locator("[data-tool-batch]")
    expect(batch).to_have_attribute("data-count", "1", timeout=5000)
    expect(batch.locator(":scope > summary")).to_contain_text("List Files")
    batch_id = batch.get_attribute("id")
    for n, call in enumerate(["g2", "g3"], start=2):
        post(chatui_server, conversation_id, started(call, "read_file"))
        expect(batch).to_have_attribute("data-count", str(n), timeout=5000)
        expect(batch.locator(":scope > summary")).to_contain_text(f"{n} tool calls")
    assert page.locator("[data-tool-batch]").count() == 1
    assert batch.get_attribute("id") == batch_id
    assert batch.locator("[data-tool-call-id]").count() == 3


def test_streamed_assistant_text_appears_as_it_streams(chatui_server, live_page):
    page, conversation_id = live_page
    message = page.locator('[data-message-id="s1"]')
    text = ""
    for chunk in ["Streaming ", "one ", "chunk ", "at a time."]:
        text += chunk
        post(
            chatui_server,
            conversation_id,
            {"type": "agent.message.delta", "message_id": "s1", "delta": chunk},
        )
        expect(message).to_contain_text(text.strip(), timeout=5000)
    assert message.get_attribute("data-streaming") == ""
    post(
        chatui_server,
        conversation_id,
        {"type": "agent.step.completed", "message_id": "s1", "content": "Streaming **done**."},
    )
    expect(message.locator("strong")).to_have_text("done", timeout=5000)
    assert message.get_attribute("data-streaming") is None


def test_two_tabs_stay_in_sync(chatui_server, live_page, open_page):
    page, conversation_id = live_page
    other, _ = open_page(f"/c/{conversation_id}/")
    wait_connected(other)
    post(chatui_server, conversation_id, started("s1"), completed("s1", result="ok"), started("s2"))
    for tab in (page, other):
        expect(tab.locator('[data-tool-call-id="s2"]')).to_have_attribute(
            "data-status", "running", timeout=5000
        )
    assert normalised(page) == normalised(other)


def test_l3_rel4_server_killed_mid_run_page_ends_with_every_event_once(
    chatui_server, live_page, open_page
):
    page, conversation_id = live_page
    post(chatui_server, conversation_id, started("k1"), completed("k1", result="before"))
    expect(page.locator('[data-tool-call-id="k1"]')).to_have_attribute(
        "data-status", "success", timeout=5000
    )
    chatui_server.kill()
    chatui_server.start()
    # Posted while the page is still disconnected (it reconnects with backoff).
    post(
        chatui_server,
        conversation_id,
        started("k2"),
        completed("k2", result="during"),
        {"type": "agent.message.delta", "message_id": "k-text", "delta": "after restart"},
    )
    expect(page.locator('[data-tool-call-id="k2"]')).to_have_attribute(
        "data-status", "success", timeout=20000
    )
    post(chatui_server, conversation_id, started("k3"))
    expect(page.locator('[data-tool-call-id="k3"]')).to_be_attached(timeout=10000)
    for call in ("k1", "k2", "k3"):
        assert page.locator(f'[data-tool-call-id="{call}"]').count() == 1
    assert page.locator('[data-message-id="k-text"]').count() == 1
    with chatui_server.api() as api:
        last_seq = api.get(f"/conversations/{conversation_id}").json()["last_seq"]
    expect(page.locator("#transcript")).to_have_attribute("data-last-seq", str(last_seq))
    fresh, _ = open_page(f"/c/{conversation_id}/")
    assert normalised(page) == normalised(fresh)


def test_s3_live_dom_equals_fresh_load_after_completed(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("live showcase")
    page, watch = open_page(f"/c/{conversation_id}/")
    wait_connected(page)
    events = [e for e in showcase_events() if e["run_id"] != "run-3"]  # ends completed/failed
    for start in range(0, len(events), 3):  # posted in small bursts, like a runtime
        post(chatui_server, conversation_id, *events[start : start + 3])
    expect(page.locator("[data-run-error]")).to_be_attached(timeout=10000)
    with chatui_server.api() as api:
        last_seq = api.get(f"/conversations/{conversation_id}").json()["last_seq"]
    expect(page.locator("#transcript")).to_have_attribute(
        "data-last-seq", str(last_seq), timeout=10000
    )
    fresh, _ = open_page(f"/c/{conversation_id}/")
    assert normalised(page) == normalised(fresh)
    assert watch.page_errors == []


def test_autoscroll_follows_only_at_the_bottom_else_new_activity_button(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("scroll")
    chatui_server.post_events(
        conversation_id, [{"type": "user.message", "content": f"line {n}\n" * 5} for n in range(30)]
    )
    page, _ = open_page(f"/c/{conversation_id}/", height=600)
    wait_connected(page)
    at_bottom = (
        "() => { const s = document.scrollingElement;"
        " return s.scrollHeight - s.scrollTop - s.clientHeight < 80; }"
    )
    page.wait_for_function(at_bottom)
    post(chatui_server, conversation_id, started("a1"))
    expect(page.locator('[data-tool-call-id="a1"]')).to_be_attached(timeout=5000)
    page.wait_for_function(at_bottom)  # followed the new card
    button = page.locator("#new-activity")
    assert button.is_hidden()
    page.evaluate("window.scrollTo(0, 0)")
    post(chatui_server, conversation_id, started("a2"))
    expect(page.locator('[data-tool-call-id="a2"]')).to_be_attached(timeout=5000)
    expect(button).to_be_visible()
    assert page.evaluate("document.scrollingElement.scrollTop") == 0  # the reader stayed put
    button.click()
    page.wait_for_function(at_bottom)
    expect(button).to_be_hidden()


def test_composer_shift_enter_breaks_the_line_enter_sends(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("keys")
    page, _ = open_page(f"/c/{conversation_id}/")
    wait_connected(page)
    box = page.locator("form#composer textarea[name=content]")
    box.type("first line")
    box.press("Shift+Enter")
    box.type("calculate 1+1")
    assert box.input_value() == "first line\ncalculate 1+1"
    assert page.locator("#transcript [data-role=user]").count() == 0
    box.press("Enter")
    expect(page.locator("#transcript [data-role=user]")).to_have_count(1, timeout=3000)
    assert page.locator("#transcript [data-role=user] .bubble").inner_text() == (
        "first line\ncalculate 1+1"
    )


def test_a_batch_the_reader_opened_stays_open_as_tools_arrive(chatui_server, live_page):
    page, conversation_id = live_page
    post(chatui_server, conversation_id, started("o1", "list_files"), completed("o1", result="a"))
    batch = page.locator("[data-tool-batch]")
    expect(batch.locator('[data-tool-call-id="o1"]')).to_have_attribute("data-status", "success")
    # W1 (docs/rendering.md#w1): open between tools while its run is in it
    expect(batch).to_have_attribute("open", "")
    summary = batch.locator(":scope > summary")
    summary.click()  # the reader closes it: the live updates keep that
    expect(batch).not_to_have_attribute("open", "")
    post(chatui_server, conversation_id, started("o2", "read_file"))
    expect(batch).to_have_attribute("data-count", "2", timeout=5000)
    assert batch.get_attribute("open") is None  # though o2 runs: the reader's choice
    summary.click()  # and opens it again
    post(chatui_server, conversation_id, completed("o2", result="b"), started("o3", "grep"))
    expect(batch).to_have_attribute("data-count", "3", timeout=5000)
    expect(batch).to_have_attribute("open", "")  # the live update kept the reader's choice
    assert page.locator('[data-tool-call-id="o3"]').is_visible()


def test_s21_a_dropped_page_tries_again_at_least_every_4_s(live_page):
    """Viewers current within 5 s of a fault (docs/SCALING.md#cluster-under-fire). htmx's
    own backoff doubles to 64 s, so a page whose handshakes failed a few times in a
    reconnect herd waited a minute; chatui.js keeps the jitter (the herd spreads) and caps
    each wait at 4 s."""
    page, _ = live_page
    delays = page.evaluate(
        """() => {
          const delay = htmx.config.wsReconnectDelay;
          if (typeof delay !== "function") return null;
          const out = {};
          for (const retries of [0, 1, 2, 3, 6, 10]) {
            out[retries] = Array.from({length: 400}, () => delay(retries));
          }
          return out;
        }"""
    )
    assert delays is not None, "the page keeps htmx's default backoff (up to 64 s)"
    for retries, samples in delays.items():
        assert all(0 <= value <= 4000 for value in samples), (retries, max(samples))
    assert max(delays["0"]) <= 1000  # the first try comes quickly
    assert max(delays["10"]) > 2000 and min(delays["10"]) < 2000  # still jittered
