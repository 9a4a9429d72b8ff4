"""G21 MCP results (docs/rendering.md#g21) in a real browser: a CallToolResult's image
loads from the conversation's own URL (never a data: URI) and is drawn, its text and
structured content shown as text with hostile HTML inert, SVG and a lying MIME type
offered only as downloads; the same after a live update; `isError` an error entry."""

from __future__ import annotations

import pytest

from tests.support.axe import assert_no_serious_violations
from tests.support.rich import SCRIPT, mcp_result


def _call(call_id: str, result: dict) -> list[dict]:
    return [
        {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": "chart", "args": {}},
        {"type": "agent.tool.completed", "tool_call_id": call_id, "result": result},
    ]


@pytest.fixture(scope="module")
def mcp(chatui_server) -> str:
    conversation_id = chatui_server.new_conversation("MCP results")
    chatui_server.post_events(
        conversation_id,
        [{"type": "user.message", "content": "chart it"}, *_call("m1", mcp_result())],
    )
    return conversation_id


def _drawn(page, selector: str) -> bool:
    return page.eval_on_selector(selector, "img => img.complete && img.naturalWidth > 0")


def test_g21_mcp_image_and_text_shown_hostile_parts_inert(mcp, chatui_server, open_page):
    page, watch = open_page(f"/c/{mcp}/")
    page.eval_on_selector_all("#transcript details", "els => els.forEach(e => e.open = true)")
    entry = page.locator('[data-tool-call-id="m1"]')
    image = entry.locator("img[data-attachment]")
    assert image.count() == 1
    src = image.get_attribute("src")
    assert src.startswith(f"/c/{mcp}/attachments/") and not src.startswith("data:")
    page.wait_for_function(
        "() => { const i = document.querySelector('[data-tool-call-id=m1] img[data-attachment]');"
        " return i && i.complete && i.naturalWidth === 24; }"
    )
    text = entry.locator('[data-mcp-part="text"]').first.inner_text()
    assert f"Chart ready {SCRIPT}".replace("@", "@\u200b") in text  # shown as text, not run
    assert entry.locator("[data-mcp-structured] [data-keyvalue]").inner_text().count("rows") == 1
    assert entry.locator("[data-code][data-language=python]").count() == 1  # embedded resource
    # SVG and HTML-said-PNG: downloads, never drawn; no javascript: link
    downloads = entry.locator("a[data-attachment][download]")
    assert downloads.count() == 3
    assert (
        page.locator("#transcript img").evaluate_all(
            "imgs => imgs.filter(i => i.src.includes('/attachments/')).length"
        )
        == 1
    )
    assert entry.locator('a[href^="javascript:"]').count() == 0
    assert entry.locator("audio[data-attachment]").count() == 1
    # axe on what G21 adds (alt text, link names, the player's label), and on the G19
    # code inside it (code.css's colours reach 4.5:1: scripts/code_css.py).
    assert_no_serious_violations(page, "MCP result")
    page.wait_for_timeout(300)
    assert watch.page_errors == [] and watch.dialogs == []
    assert watch.console_errors == [] and watch.foreign_requests == []

    # Live: a second result arrives over the socket and is drawn the same way; isError
    # makes the entry an error (G6), its parts still shown.
    chatui_server.post_events(mcp, _call("m2", mcp_result(is_error=True)))
    live = page.locator('[data-tool-call-id="m2"]')
    live.wait_for()
    assert live.get_attribute("data-status") == "error"
    page.eval_on_selector_all("#transcript details", "els => els.forEach(e => e.open = true)")
    page.wait_for_function(
        "() => { const i = document.querySelector('[data-tool-call-id=m2] img[data-attachment]');"
        " return i && i.complete && i.naturalWidth === 24; }"
    )
    assert live.locator("[data-tool-error] [data-mcp]").count() == 1
    assert watch.page_errors == [] and watch.dialogs == [] and watch.console_errors == []
