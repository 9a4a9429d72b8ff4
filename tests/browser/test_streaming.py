"""A streamed answer in a real browser over a real daphne (docs/PERFORMANCE.md#p5,
docs/rendering.md#streaming-text, S3, L3): deltas are appended in place, the end brings the final
Markdown equal to a fresh load, and a reconnect mid-stream shows the whole text once."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser import test_live
from tests.support.browser import normalised, post, wait_connected

live_page = test_live.live_page  # the fixture: a page watching a running conversation

CHUNKS = ["Streaming ", "**bold** ", "and <b>tags</b> ", "& more\nlines."]


def delta(text: str, message_id: str = "s1") -> dict:
    return {
        "type": "agent.message.delta",
        "message_id": message_id,
        "delta": text,
        "run_id": "live",
    }


def bubble_text(page, message_id: str = "s1") -> str:
    return page.evaluate(
        "(id) => document.querySelector(`[data-message-id='${id}'] [data-stream-text]`)"
        "?.textContent ?? null",
        message_id,
    )


def test_s3_streamed_answer_appends_in_place_and_ends_equal_to_a_fresh_load(
    chatui_server, live_page, open_page
):
    page, conversation_id = live_page
    message = page.locator('[data-message-id="s1"]')
    post(chatui_server, conversation_id, delta(CHUNKS[0]))
    expect(message).to_have_attribute("aria-busy", "true", timeout=5000)
    # Marked: a bubble replaced by a re-render would lose the mark.
    page.evaluate("() => { document.querySelector('[data-stream-text]').__kept = true; }")
    text = CHUNKS[0]
    for chunk in CHUNKS[1:]:
        text += chunk
        post(chatui_server, conversation_id, delta(chunk))
        page.wait_for_function(
            "(t) => document.querySelector('[data-stream-text]').textContent === t", arg=text
        )
    assert page.evaluate("() => document.querySelector('[data-stream-text]').__kept === true")
    assert message.locator("b").count() == 0  # escaped text while streaming
    post(
        chatui_server,
        conversation_id,
        {"type": "agent.step.completed", "message_id": "s1", "content": text, "run_id": "live"},
    )
    expect(message.locator("strong")).to_have_text("bold", timeout=5000)
    assert message.get_attribute("aria-busy") is None
    post(
        chatui_server,
        conversation_id,
        {"type": "agent.status", "status": "completed", "run_id": "live"},
    )
    with chatui_server.api() as api:
        last_seq = api.get(f"/conversations/{conversation_id}").json()["last_seq"]
    expect(page.locator("#transcript")).to_have_attribute("data-last-seq", str(last_seq))
    fresh, _ = open_page(f"/c/{conversation_id}/")
    assert normalised(page) == normalised(fresh)


def test_l3_reconnect_mid_stream_shows_the_whole_text_once(chatui_server, live_page, open_page):
    page, conversation_id = live_page
    post(chatui_server, conversation_id, delta("Hello "), delta("wor"))
    page.wait_for_function(
        "() => document.querySelector('[data-stream-text]')?.textContent === 'Hello wor'"
    )
    chatui_server.kill()
    chatui_server.start()
    # Posted while the page is disconnected: the replay brings the whole message.
    post(chatui_server, conversation_id, delta("ld"), delta(", again"))
    page.wait_for_function(
        "() => document.querySelector('[data-stream-text]')?.textContent === 'Hello world, again'",
        timeout=20000,
    )
    wait_connected(page)
    post(chatui_server, conversation_id, delta("!"))  # live again: appended once
    page.wait_for_function(
        "() => document.querySelector('[data-stream-text]')?.textContent === 'Hello world, again!'"
    )
    assert page.locator('[data-message-id="s1"]').count() == 1
    assert bubble_text(page) == "Hello world, again!"
    fresh, _ = open_page(f"/c/{conversation_id}/")
    assert normalised(page) == normalised(fresh)


def test_p5_joined_text_frame_skips_what_a_later_rendered_bubble_has_and_escapes_the_rest(
    chatui_server, browser, auth_state
):
    """A streamed-text frame is applied by chatui.js, not htmx: a bubble rendered later
    than its frame (rows are read as they are now) already holds some of a joined
    frame's deltas; those are skipped, the others appended once, as text. The frames
    reach the page over its real socket (routed: held back from the server, and sent
    in the order a race would bring them)."""
    from chatui.live.frames import delta_part, marker

    conversation_id = chatui_server.new_conversation("race")
    post(
        chatui_server,
        conversation_id,
        {"type": "user.message", "content": "go", "run_id": "live"},
        {"type": "agent.status", "status": "running", "run_id": "live"},
        delta("Hel"),
    )
    context = browser.new_context(storage_state=auth_state)
    sockets = []

    def route(ws) -> None:
        server = ws.connect_to_server()
        server.on_message(lambda message: None if sockets[1:] else ws.send(message))
        sockets.append(ws)

    try:
        page = context.new_page()
        page.route_web_socket(re.compile(r"/ws/conversations/"), route)
        page.goto(f"{chatui_server.url}/c/{conversation_id}/")
        page.wait_for_function("() => document.querySelector('#transcript[data-last-seq=\"3\"]')")
        wait_connected(page)
        sockets.append("hold")  # from now on the server's frames are not forwarded
        post(chatui_server, conversation_id, delta("lo"))  # seq 4
        post(chatui_server, conversation_id, delta(" wo"))  # seq 5
        pk = page.get_attribute('[data-message-id="s1"]', "id").removeprefix("m-")
        # The message as a render reads it now: at seq 5, in a frame that claims seq 4.
        late = page.evaluate(
            """async (id) => {
              const url = document.getElementById('transcript').dataset.refreshUrl;
              const html = await (await fetch(url)).text();
              const t = document.createElement('template');
              t.innerHTML = html;
              return t.content.getElementById(id).outerHTML;
            }""",
            f"m-{pk}",
        )
        assert 'data-seq="5"' in late and "Hello wo" in late
        post(chatui_server, conversation_id, delta("<b>rld</b>"), delta("!"))  # seqs 6, 7
        sockets[0].send(marker(4, 4) + late)
        page.wait_for_function(
            "(t) => document.querySelector('[data-stream-text]').textContent === t", arg="Hello wo"
        )
        joined = [delta_part(int(pk), 5, " wo"), delta_part(int(pk), 6, "<b>rld</b>")]
        sockets[0].send(marker(5, 6) + "".join(joined))
        sockets[0].send(marker(7, 7) + delta_part(int(pk), 7, "!"))
        expect(page.locator("#transcript")).to_have_attribute("data-last-seq", "7")
        assert bubble_text(page) == "Hello wo<b>rld</b>!"
        assert page.locator('[data-message-id="s1"]').get_attribute("data-seq") == "7"
        assert page.locator("[data-stream-text] b").count() == 0
        sockets.pop()  # forward again: the answer ends and the page equals a fresh load
        post(
            chatui_server,
            conversation_id,
            {
                "type": "agent.step.completed",
                "message_id": "s1",
                "content": "Hello wo<b>rld</b>!",
                "run_id": "live",
            },
        )
        expect(page.locator('[data-message-id="s1"] .markdown')).to_be_visible(timeout=5000)
        fresh = context.new_page()
        fresh.goto(f"{chatui_server.url}/c/{conversation_id}/")
        assert normalised(page) == normalised(fresh)
    finally:
        context.close()


AT_BOTTOM = (
    "() => { const s = document.scrollingElement;"
    " return s.scrollHeight - s.scrollTop - s.clientHeight < 80; }"
)


def test_sec10_streamed_text_is_followed_at_the_bottom_and_left_alone_above_it(
    chatui_server, live_page
):
    """Streamed text is followed once per animation frame (chatui.js), not per message:
    a reader at the bottom stays there, one who scrolled up stays put and gets the pill."""
    page, conversation_id = live_page
    for n in range(6):  # the first creates the bubble; the others are text-only frames
        post(chatui_server, conversation_id, delta(f"line {n}\n" * 10))
        page.wait_for_function(
            "(end) => document.querySelector('[data-stream-text]')?.textContent.endsWith(end)",
            arg=f"line {n}\n",
        )
        page.wait_for_function(AT_BOTTOM)
    assert page.locator("#new-activity").is_hidden()
    page.evaluate("window.scrollTo(0, 0)")
    post(chatui_server, conversation_id, delta("more\n" * 10))
    expect(page.locator("#new-activity")).to_be_visible()
    assert page.evaluate("() => document.scrollingElement.scrollTop") == 0
    assert bubble_text(page).endswith("more\n")
