"""docs/rendering.md#render-rules in a real browser: the showcase conversation shows every render
rule, and the DOM hooks of docs/rendering.md#dom-hooks are where themes, tests and scripts expect
them."""

from __future__ import annotations

import re

import pytest

from tests.support.showcase import showcase_events


@pytest.fixture(scope="module")
def showcase(chatui_server) -> str:
    conversation_id = chatui_server.new_conversation("Showcase")
    chatui_server.post_events(conversation_id, showcase_events())
    return conversation_id


@pytest.fixture
def fresh(showcase, open_page):
    """The page as loaded: batches collapsed unless they hold an error."""
    page, watch = open_page(f"/c/{showcase}/")
    page.wait_for_selector("#transcript [data-tool-batch]")
    yield page
    assert watch.page_errors == []
    assert watch.dialogs == []


@pytest.fixture
def shown(fresh):
    """The page after the reader clicked every collapsed batch open."""
    while fresh.locator("[data-tool-batch]:not([open])").count():
        fresh.locator("[data-tool-batch]:not([open]) > summary").first.click()
    return fresh


def entry(page, call_id: str):
    return page.locator(f'[data-tool-call-id="{call_id}"]')


def style(locator, prop: str) -> str:
    return locator.evaluate(f"el => getComputedStyle(el).{prop}")


def test_hooks_transcript_and_messages(shown, showcase, chatui_server):
    with chatui_server.api() as api:
        last_seq = api.get(f"/conversations/{showcase}").json()["last_seq"]
    assert shown.get_attribute("#transcript", "data-last-seq") == str(last_seq)
    # docs/rendering.md#accessibility: no live region over the whole transcript (it would re-read
    # per token); finished items are announced once through #announcer.
    assert shown.get_attribute("#transcript", "aria-live") is None
    assert shown.get_attribute("#announcer", "aria-live") == "polite"
    roles = shown.eval_on_selector_all(
        "#transcript [data-message-id]", "els => els.map(e => e.dataset.role)"
    )
    assert set(roles) == {"user", "assistant", "tool", "status"}
    ids = shown.eval_on_selector_all("#transcript [id]", "els => els.map(e => e.id)")
    # Built from server pks only (docs/rendering.md#dom-hooks): a batch's summary and entry lists
    # too, and an entry's actions menu and its button (W8).
    server_id = re.compile(r"^[mb]-\d+(-summary|-entries|-children|-menu|-actions)?$")
    assert all(server_id.match(i) for i in ids)
    assert shown.locator("form#composer textarea[name=content]").count() == 1


def test_r1_user_bubble_right_primary_escaped_line_breaks(shown):
    bubble = shown.locator('[data-message-id="u1"] .bubble')
    text = bubble.inner_text()
    assert "<b>you</b>" in text and "\nSecond line" in text
    assert style(bubble, "color") == "rgb(255, 255, 255)"
    assert style(bubble, "backgroundColor") == "rgb(59, 91, 219)"
    box, page_width = bubble.bounding_box(), shown.viewport_size["width"]
    assert box["x"] + box["width"] > page_width / 2 + 200


def test_r2_assistant_markdown_left_grey_with_copy_button(shown):
    message = shown.locator('[data-message-id="a2"]')
    assert message.locator("table td").first.inner_text() == "tests"
    assert message.locator("pre code").count() == 1
    assert message.locator("button.copy-button").count() == 1
    link = message.locator("a[href='https://example.org/docs']")
    assert link.get_attribute("rel") == "nofollow noopener noreferrer"
    bubble = message.locator(".bubble")
    assert style(bubble, "backgroundColor") == "rgb(240, 241, 243)"
    assert bubble.bounding_box()["x"] < 300


def test_r3_tool_args_json_content_is_never_shown(shown):
    assert shown.locator('[data-message-id="a1"]').count() == 0
    assert '"plan"' not in shown.inner_text("#transcript")


def test_r4_tool_entries_in_batches_monospace(shown):
    first = entry(shown, "c1")
    assert first.locator("xpath=ancestor::details[@data-tool-batch]").count() == 1
    assert "monospace" in style(first.locator("[data-tool-call]"), "fontFamily").lower() or (
        "mono" in style(first.locator("[data-tool-call]"), "fontFamily").lower()
    )


def test_r5_status_lines(shown):
    # docs/rendering.md#one-status-line one status line: both runs' thinking lines gave way to the
    # work that followed.
    assert shown.locator('[data-status-type="thinking"]').count() == 0
    assert (
        shown.locator('[data-status-type="info"]')
        .inner_text()
        .strip()
        .endswith("Build cache is cold")
    )
    # W6 (docs/rendering.md#w6): the run's normal end (`end_turn`) adds no line
    assert shown.locator('[data-status-type="continuation"]').count() == 0


def test_g1_batches_collapse_and_count(fresh):
    shown = fresh
    batch = shown.locator("[data-tool-batch]").filter(has=entry(shown, "c1"))
    assert batch.get_attribute("data-count") == "4"
    assert "4 tool calls" in batch.locator(":scope > summary").inner_text()
    single = shown.locator("[data-tool-batch]").filter(has=entry(shown, "c5"))
    assert single.get_attribute("data-count") == "1"
    assert single.locator(":scope > summary").inner_text().startswith("Image Generation")
    assert single.get_attribute("open") is None  # collapsed by default


def test_g3_call_line(shown):
    assert entry(shown, "c2").locator("[data-tool-call]").inner_text() == (
        "read_file(path=notes.txt)"
    )
    assert entry(shown, "c4").locator("[data-tool-call]").inner_text() == (
        'web_fetch(url=https://example.org/big, headers={"a":"b"})'
    )


def test_g4_inline_block_and_truncated_results(shown):
    assert entry(shown, "c1").locator("[data-tool-result]").inner_text().strip() == (
        "→ README.md, src/, tests/"
    )
    assert "(12 more lines)" in entry(shown, "c2").locator("[data-tool-result]").inner_text()
    assert "(truncated, 3.0 KB)" in entry(shown, "c4").locator("[data-tool-result]").inner_text()


def test_g5_w3_pending_entries_show_their_state_and_no_result(shown):
    running, queued = entry(shown, "e1"), entry(shown, "e2")
    assert running.get_attribute("data-status") == "running"
    assert queued.get_attribute("data-status") == "queued"
    # W3 (docs/rendering.md#w3): a running entry spins, a waiting one is a hollow circle
    assert running.locator(".tool-icon .icon--loader-circle").count() == 1  # W7
    assert queued.locator(".tool-icon .icon--circle-dashed").count() == 1
    for pending in (running, queued):
        assert pending.locator("[data-tool-result]").count() == 0


def test_g6_error_entry_expands_its_batch(fresh):
    shown = fresh
    failed = entry(shown, "c3")
    assert failed.get_attribute("data-status") == "error"
    assert "make: *** [build] Error 2" in failed.inner_text()
    batch = shown.locator("[data-tool-batch]").filter(has=failed)
    assert batch.get_attribute("open") == ""
    assert batch.get_attribute("data-has-error") == ""
    assert "1 failed" in batch.locator(":scope > summary").inner_text()
    assert style(failed, "borderTopColor") != style(entry(shown, "c1"), "borderTopColor")


def test_g7_durations(shown):
    assert entry(shown, "c1").locator("[data-tool-duration]").inner_text() == "250 ms"
    assert entry(shown, "c3").locator("[data-tool-duration]").inner_text() == "1.2 s"


def test_g8_details_toggle_has_pretty_json(shown):
    details = entry(shown, "c4").locator("details.tool-details").first
    assert details.get_attribute("open") is None
    json_text = details.locator("[data-tool-json]").text_content()
    assert '"headers": {' in json_text


def test_g9_kind_renderers(shown):
    assert "notes.txt" in entry(shown, "c2").locator("[data-tool-kind=file]").inner_text()
    command = entry(shown, "c3").locator("[data-tool-kind=command]")
    assert command.locator(".kind-failure").count() == 1
    assert "200" in entry(shown, "c4").locator("[data-tool-kind=fetch]").inner_text()
    assert "sub-7" in entry(shown, "c6").locator("[data-tool-kind=subagent]").first.inner_text()
    assert (
        "1 notification sent" in entry(shown, "c11").locator("[data-tool-kind=custom]").inner_text()
    )


def test_g10_g11_stable_title_and_real_output(shown):
    image = entry(shown, "c5")
    assert image.locator("[data-tool-title]").inner_text() == "Image Generation"
    assert "SUCCESS: Generated 1 image" in image.locator("[data-tool-result]").inner_text()
    running = entry(shown, "e1")
    assert running.locator("[data-tool-progress-line]").inner_text() == "→ linking step 2/5"
    assert "→ linking" not in running.locator("[data-tool-output]").inner_text()


def test_g12_progress_bar_and_live_output(shown):
    running = entry(shown, "e1")
    assert running.locator("progress[data-tool-progress]").get_attribute("value") == "40"
    assert "compiling b.c" in running.locator("[data-tool-output]").inner_text()


def test_g13_nesting(shown):
    parent = entry(shown, "c6")
    child = parent.locator('[data-tool-call-id="c7"]')
    grandchild = child.locator('[data-tool-call-id="c8"]')
    assert grandchild.count() == 1
    batch = shown.locator("[data-tool-batch]").filter(has=parent)
    # c6, c9+c10 (two attempts of one call, G14), c11; children not counted
    assert batch.get_attribute("data-count") == "3"
    assert grandchild.bounding_box()["x"] > child.bounding_box()["x"] > parent.bounding_box()["x"]


def test_g14_attempts_of_one_call_are_one_entry_with_history(shown):
    retried = entry(shown, "c10")
    assert retried.locator("[data-tool-attempts]").inner_text() == "failed once, succeeded on 2/3"
    assert entry(shown, "c9").count() == 0  # the failed first attempt is in c10's history


def test_t1_tool_text_escaped_and_mentions_neutralised(shown):
    text = entry(shown, "c11").inner_text()
    assert "<script>alert(1)</script>" in text
    assert "@\u200balice" in text and "@alice" not in text


def test_s1_meta_line(shown):
    assert shown.locator('[data-message-id="a4"] [data-meta-line]').inner_text() == (
        "Assistant · 2.5s · 1,070 tokens"
    )


def test_s2_failed_run_banner_keeps_history(shown):
    banner = shown.locator("[data-run-error]")
    assert banner.inner_text().strip().endswith("Deployment failed: credentials missing")
    assert style(banner, "color") == "rgb(201, 42, 42)"
    assert shown.locator('[data-tool-call-id="d1"]').count() == 1


def test_s3_completed_run_has_no_ephemeral_statuses(shown):
    text = shown.inner_text("#transcript")
    assert "Planning…" not in text and "Using the cached index" not in text
