"""[001] A real AgentSpine capture replayed at its own pace into a watched page.

Each capture of tests/fixtures/agentspine/ is posted unchanged through the HTTP API
of a real daphne server, one event per request, while Chromium shows the
conversation. The pace is the capture's own: the gap between two events is the
difference of their `timestamp`s, capped at MAX_GAP_S so the test stays short (the
captures as recorded carry no timestamps, so they replay DEFAULT_GAP_S apart).

Watched live, over the WebSocket only (the page is never reloaded):
- on `tool_execution_start` the card is in the page, running, before the tool's end
  is posted, and looks as golden/<capture>.txt recorded it
  (tests/importers/test_agentspine_golden.py);
- on `tool_execution_update` the entry's progress moves: its progress line, bar and
  output are what the golden file recorded after that very event;
- at the end the live transcript is the golden one (S3: what a fresh load shows), so
  the failed tools are errors (G15) in the page that watched them run.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from playwright.sync_api import Page, expect

from tests.support.agentspine import (
    CAPTURES,
    final_part,
    golden_path,
    running_snapshots,
    snapshot_key,
)
from tests.support.fixtures import load_fixture
from tests.support.golden import entry_text, transcript_text

MAX_GAP_S = 0.3
DEFAULT_GAP_S = 0.05
SETTLE_TIMEOUT_MS = 10_000
ENTRY_HTML = """id => {
  const entry = document.querySelector(`[data-tool-call-id="${CSS.escape(id)}"]`);
  return entry ? entry.outerHTML : "";
}"""


def gaps(events: list[dict]) -> list[float]:
    """Seconds to wait before each event: the capture's own gaps, capped."""
    waits, previous = [], None
    for event in events:
        stamp = event.get("timestamp")
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None
        if moment is not None and previous is not None:
            waits.append(min(max((moment - previous).total_seconds(), 0.0), MAX_GAP_S))
        else:
            waits.append(0.0 if not waits else DEFAULT_GAP_S)
        previous = moment
    return waits


def live_entry(page: Page, tool_call_id: str) -> str:
    html = page.evaluate(ENTRY_HTML, tool_call_id)
    return entry_text(html) if html else ""


def live_transcript(page: Page) -> str:
    return transcript_text(page.evaluate("() => document.querySelector('#transcript').outerHTML"))


def settled(page: Page, read, expected: str) -> str:
    """What `read()` shows once it equals `expected`, or at SETTLE_TIMEOUT_MS (then the
    caller's assertion shows the difference). Frames arrive when they arrive: no timing
    is asserted, only what the page ends up showing."""
    waited = 0
    shown = read()
    while shown != expected and waited < SETTLE_TIMEOUT_MS:
        page.wait_for_timeout(25)
        waited += 25
        shown = read()
    return shown


@pytest.mark.parametrize("name", CAPTURES)
def test_agentspine_capture_replayed_live_cards_on_start_progress_on_update(
    chatui_server, open_page, name
):
    events = load_fixture(f"agentspine/{name}.jsonl")
    golden = golden_path(name, ".txt").read_text()
    expected_running = running_snapshots(golden)
    conversation_id = chatui_server.new_conversation(f"replay {name}")
    page, watch = open_page(f"/c/{conversation_id}/")
    page.wait_for_function("() => window.__chatuiSocketOpen === true")

    with chatui_server.api() as api:
        for seq, (event, gap) in enumerate(zip(events, gaps(events), strict=True), start=1):
            page.wait_for_timeout(gap * 1000)
            api.post(f"/conversations/{conversation_id}/events", json=event).raise_for_status()
            if event["type"] in ("tool_execution_start", "tool_execution_update"):
                watch_running(page, event, snapshot_key(seq, event), expected_running)

    expected_final = final_part(golden).rstrip("\n")
    shown = settled(page, lambda: live_transcript(page), expected_final)
    assert shown == expected_final, f"at the end the live page shows:\n{shown}"
    assert watch.page_errors == []


def watch_running(page: Page, event: dict, key: str, golden: dict[str, str]) -> None:
    """The entry of a tool whose end is not posted yet, as the golden file recorded it."""
    call_id, expected = event["tool_call_id"], golden[key]
    shown = settled(page, lambda: live_entry(page, call_id), expected)
    assert shown == expected, f"after {key} the live page shows:\n{shown}"
    card = page.locator(f'[data-tool-call-id="{call_id}"]')
    expect(card).to_have_attribute("data-status", "running")
    assert card.locator("[data-tool-result]").count() == 0  # G5: no result box yet


def test_agentspine_replay_failed_tools_end_as_errors_in_the_watching_page(
    chatui_server, open_page
):
    events = load_fixture("agentspine/as1_builtin_tools.jsonl")
    conversation_id = chatui_server.new_conversation("replay errors")
    page, _ = open_page(f"/c/{conversation_id}/")
    page.wait_for_function("() => window.__chatuiSocketOpen === true")
    with chatui_server.api() as api:
        for event in events:
            api.post(f"/conversations/{conversation_id}/events", json=event).raise_for_status()
    for call_id in ("call_cmd", "call_missing", "call_fetch"):
        card = page.locator(f'[data-tool-call-id="{call_id}"]')
        expect(card).to_have_attribute("data-status", "error", timeout=SETTLE_TIMEOUT_MS)
        expect(card.locator("[data-tool-error]")).to_be_visible()
    expect(page.locator('[data-tool-call-id="call_read"]')).to_have_attribute(
        "data-status", "success"
    )
    batch = page.locator("[data-tool-batch]")
    expect(batch).to_have_attribute("data-has-error", "")
    expect(batch.locator("[data-batch-failed]")).to_have_text("3 failed")
