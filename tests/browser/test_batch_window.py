"""docs/rendering.md#long-transcripts in a real browser: "show N earlier calls" inserts a giant
batch's earlier entries in place (no navigation), then the ones before them, and a live call still
lands in the windowed batch."""

from __future__ import annotations

from tests.support.batch_events import call_events

CALLS = 450


def test_p3_clicking_show_earlier_calls_inserts_them_in_place(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("Giant batch")
    chatui_server.post_events(
        conversation_id,
        {"events": [{"type": "user.message", "run_id": "r", "content": "Read them all"}]},
    )
    chatui_server.post_events(conversation_id, {"events": call_events(0, CALLS)})
    page, watch = open_page(f"/c/{conversation_id}/")
    entries = page.locator("#transcript [data-tool-batch] > ul > li.tool-entry")
    page.wait_for_selector("#transcript [data-tool-batch]")
    assert entries.count() == 200
    if page.locator("#transcript [data-tool-batch][open]").count() == 0:  # W1: open while
        page.locator("#transcript [data-tool-batch] > summary").click()  # its run is in it

    page.get_by_role("link", name="Show 250 earlier calls").click()
    page.get_by_role("link", name="Show 50 earlier calls").wait_for()
    assert entries.count() == 400
    page.get_by_role("link", name="Show 50 earlier calls").click()
    page.locator('#transcript [data-tool-call-id="call-0"]').wait_for()
    assert entries.count() == CALLS
    assert page.locator("[data-earlier-calls]").count() == 0
    ids = page.eval_on_selector_all(
        "#transcript [data-tool-batch] > ul > li.tool-entry",
        "els => els.map(e => e.dataset.toolCallId)",
    )
    assert ids == [f"call-{n}" for n in range(CALLS)]  # in order, each once
    assert page.url.endswith(f"/c/{conversation_id}/")  # inserted, not navigated

    # A live call lands in the (again windowed) batch.
    chatui_server.post_events(conversation_id, {"events": call_events(CALLS, CALLS + 1)})
    page.locator('[data-tool-call-id="call-450"]').wait_for()
    assert watch.page_errors == [] and watch.console_errors == []
