"""SEC1–SEC3 in a real browser: hostile text executes nothing and loads nothing."""

from __future__ import annotations

from pathlib import Path

import httpx

import chatui
from tests.support.hostile import hostile_events

#: chatui's own W7 icons (chatui/icons/): no text of a transcript can make one.
OUR_ICON_CLASSES = {
    f"icon icon--{path.stem}" for path in (Path(chatui.__file__).parent / "icons").glob("*.svg")
}


def test_sec1_hostile_transcript_executes_nothing_and_requests_nothing(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("hostile")
    chatui_server.post_events(conversation_id, hostile_events())
    page, watch = open_page(f"/c/{conversation_id}/")
    page.wait_for_selector("#transcript [data-role=tool]")
    # Open every <details> so nothing hidden escapes scrutiny, then let it settle.
    page.eval_on_selector_all("#transcript details", "els => els.forEach(e => e.open = true)")
    page.mouse.move(300, 300)
    page.wait_for_timeout(500)

    assert watch.dialogs == []
    assert watch.page_errors == []
    assert watch.foreign_requests == []
    assert page.title() != "pwned"
    # Nothing executable or htmx-active survived into the transcript's DOM.
    dangerous = page.eval_on_selector(
        "#transcript",
        """(root, ours) => {
            const found = [];
            for (const el of root.querySelectorAll('*')) {
                for (const attr of el.attributes) {
                    const name = attr.name.toLowerCase();
                    const value = attr.value.replace(/\\s+/g, '').toLowerCase();
                    if (name.startsWith('on') || name.startsWith('hx-') ||
                        name.startsWith('data-hx') || value.startsWith('javascript:') ||
                        value.startsWith('data:'))
                        found.push(el.tagName + ' ' + name + '=' + attr.value);
                }
                // W7: our own icons are inline SVG (chatui/icons); any other is not ours.
                if (el.tagName.toUpperCase() === 'SVG' &&
                    ours.includes(el.getAttribute('class'))) continue;
                if (['SCRIPT', 'IFRAME', 'SVG', 'STYLE', 'FORM', 'OBJECT', 'EMBED']
                    .includes(el.tagName.toUpperCase())) found.push(el.tagName);
            }
            return found;
        }""",
        sorted(OUR_ICON_CLASSES),
    )
    assert dangerous == []
    # The text is still shown, as text.
    text = page.inner_text("#transcript")
    assert "<script>alert('xss-script')</script>" in text
    assert "inline exfil" in text  # SEC2: the image became a link with its alt text
    assert page.locator("#transcript img").count() == 0
    # The logout link planted with hx-trigger=load was never followed.
    assert page.context.cookies() and any(c["name"] == "sessionid" for c in page.context.cookies())
    page.reload()
    assert page.locator("#transcript").count() == 1


def test_sec3_security_headers_on_every_page(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("headers")
    page, _ = open_page("/")
    for path in ("/", f"/c/{conversation_id}/", "/accounts/login/"):
        response = page.request.get(chatui_server.url + path)
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
        assert "unsafe-eval" not in csp
        assert "frame-ancestors 'none'" in csp
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"
    api = httpx.get(chatui_server.url + "/api/v1/conversations")
    assert "content-security-policy" in api.headers


def test_sec3_htmx_is_configured_without_eval(chatui_server, open_page):
    page, watch = open_page("/")
    config = page.evaluate(
        "() => ({allowEval: htmx.config.allowEval, self: htmx.config.selfRequestsOnly,"
        " styles: htmx.config.includeIndicatorStyles, cache: htmx.config.historyCacheSize})"
    )
    assert config == {"allowEval": False, "self": True, "styles": False, "cache": 0}
    assert watch.page_errors == []
    assert page.locator("script:not([src])").count() == 0
