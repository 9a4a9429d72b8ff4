"""docs/rendering.md#rich-output in a real browser, one test per rule: G17 terminal output,
G18 diffs, G19 code, G20 records; each with hostile text (HTML and script) that stays text,
styled by classes only (the CSP allows no style attribute), the same after a live update."""

from __future__ import annotations

import pytest

from tests.support.rich import SCRIPT, rich_events


@pytest.fixture(scope="module")
def rich(chatui_server) -> str:
    conversation_id = chatui_server.new_conversation("Rich output")
    chatui_server.post_events(conversation_id, rich_events())
    return conversation_id


@pytest.fixture
def shown(rich, open_page):
    page, watch = open_page(f"/c/{rich}/")
    page.wait_for_selector("#transcript [data-tool-batch]")
    page.eval_on_selector_all("#transcript details", "els => els.forEach(e => e.open = true)")
    yield page
    assert watch.page_errors == [] and watch.dialogs == []
    # a CSP violation (an inline style) is a console error; a rendered <img> a request
    assert watch.console_errors == [] and watch.foreign_requests == []


def entry(page, call_id: str):
    return page.locator(f'[data-tool-call-id="{call_id}"]')


def color(locator) -> str:
    return locator.evaluate("el => getComputedStyle(el).color")


def no_style_attributes(page) -> None:
    styled = page.eval_on_selector_all("#transcript [style]", "els => els.length")
    assert styled == 0


def test_g17_terminal_output_coloured_escapes_gone_hostile_text_inert(shown):
    terminal = entry(shown, "g17").locator("[data-terminal]")
    text = terminal.inner_text()
    assert "\x1b" not in text and "[32m" not in text and "window title" not in text
    assert "100% done" in text and "55%" not in text  # "\r" overwrote the progress bar
    assert SCRIPT in text  # shown as text, never run
    passed = terminal.locator(".ansi-fg-2", has_text="PASSED")
    failed = terminal.locator(".ansi-fg-1.ansi-b", has_text="FAILED")
    assert color(passed) != color(terminal) and color(failed) != color(passed)
    assert failed.evaluate("el => getComputedStyle(el).fontWeight") == "700"
    # a failed command keeps its colours; only its error line is red
    failure = entry(shown, "g17f")
    assert failure.get_attribute("data-status") == "error"
    compiled = failure.locator(".ansi-fg-2", has_text="compiled")
    error_line = failure.locator("[data-terminal-error]")
    assert error_line.inner_text() == "make: *** [all] Error 2"
    assert color(error_line) != color(failure.locator(".term-line").first)
    assert color(compiled) != color(error_line)
    no_style_attributes(shown)


def test_g18_diff_lines_coloured_with_stat_and_patch_not_in_the_call_line(shown):
    result = entry(shown, "g18").locator("[data-diff]")
    added = result.locator('[data-diff-line="add"]')
    removed = result.locator('[data-diff-line="del"]')
    assert added.count() == 2 and removed.count() == 1
    assert SCRIPT in added.first.inner_text()
    background = "el => getComputedStyle(el).backgroundColor"
    assert added.first.evaluate(background) != removed.first.evaluate(background)
    assert entry(shown, "g18").locator("[data-diff-stat]").inner_text() == "+2 −1"
    patch = entry(shown, "g18p")
    assert patch.locator("[data-tool-call]").inner_text() == "apply_patch(path=docs/notes.md)"
    assert patch.locator("[data-diff-stat]").inner_text() == "+2 −1"
    added_line = patch.locator('[data-diff] [data-diff-line="add"]').first.inner_text()
    assert added_line.rstrip("\n") == "+" + SCRIPT
    assert entry(shown, "g18e").locator("[data-diff-stat]").inner_text() == "+1 −1"
    # line numbers are drawn by CSS: selecting the text copies no number
    assert added.first.evaluate("el => getComputedStyle(el, '::before').content") == '"2"'
    no_style_attributes(shown)


def test_g19_code_highlighted_by_language_with_line_numbers(shown):
    code = entry(shown, "g19").locator("[data-code]")
    assert code.get_attribute("data-language") == "python"
    keyword = code.locator(".k", has_text="def")
    assert color(keyword) != color(code)
    assert code.locator(".code-line").count() == 3
    first = code.locator(".code-line").first
    assert first.evaluate("el => getComputedStyle(el, '::before').content") == "counter(line)" or (
        first.evaluate("el => getComputedStyle(el, '::before').counterIncrement") == "line 1"
    )
    assert SCRIPT in code.inner_text()
    no_style_attributes(shown)


def test_g20_records_as_tables_and_key_values_with_text_blocks(shown):
    table = entry(shown, "g20").locator("table[data-records]")
    assert table.locator("tbody tr").count() == 50
    assert entry(shown, "g20").locator("[data-records-more]").inner_text() == "10 more rows"
    number = table.locator("tbody tr").nth(3).locator("td").first
    assert number.evaluate("el => getComputedStyle(el).textAlign") == "right"
    csv = entry(shown, "g20c").locator("table[data-records]")
    assert csv.locator("th").all_inner_texts() == ["name", "count", "note"]
    assert SCRIPT.replace('"', "'") in csv.inner_text()
    values = entry(shown, "g20o").locator("[data-keyvalue]")
    assert SCRIPT in values.inner_text()
    assert values.locator(".kv-block").inner_text() == "line 1\nline 2"
    details = entry(shown, "g20o").locator("[data-json-text-block]")
    assert details.first.inner_text() == "line 1\nline 2"  # not one line of "\n" escapes
    assert shown.locator("#transcript script, #transcript img").count() == 0
    no_style_attributes(shown)


def test_rich_output_arrives_live_as_on_a_fresh_load(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("Rich live")
    page, watch = open_page(f"/c/{conversation_id}/")
    page.wait_for_selector("#transcript")
    chatui_server.post_events(conversation_id, rich_events())
    page.wait_for_selector('[data-tool-call-id="g20o"][data-status="success"]')
    live = page.inner_html("#transcript [data-tool-batch]")
    fresh, _ = open_page(f"/c/{conversation_id}/")
    assert fresh.inner_html("#transcript [data-tool-batch]").count("data-diff-line") == live.count(
        "data-diff-line"
    )
    for hook in ("[data-terminal]", "[data-diff]", "[data-code]", "table[data-records]"):
        assert page.locator(hook).count() == fresh.locator(hook).count() > 0, hook
    assert watch.page_errors == []
