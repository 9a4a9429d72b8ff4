"""An OpenAI Agents SDK run watched in Chromium as it happens (docs/runtimes.md#openai-agents-sdk):
the real SDK (scripted model, tests/support/agents_sdk.py) streams through the client's
extra into a real daphne while the page is open."""

from __future__ import annotations

import asyncio
import threading

import pytest
from chatui_client import AsyncChatuiClient
from chatui_client.openai_agents import stream_to_chatui
from playwright.sync_api import expect

from tests.support.agents_sdk import DISK_ERROR, RESPONSE_TOKENS, only_chatui_tracing, release_check
from tests.support.browser import wait_connected


def card(page, title: str):
    """The tool entry titled `title` (G10), not its parent's."""
    return page.locator(
        f"xpath=//li[@data-tool-call-id][div[@class='tool-head']"
        f"/span[@data-tool-title][normalize-space(.)='{title}']]"
    )


@pytest.fixture
def sdk_run(chatui_server):
    """Starts the release check in a thread of its own (the SDK is asyncio; the page is
    driven synchronously); joined at the end, its error raised."""
    only_chatui_tracing()
    threads: list[threading.Thread] = []
    errors: list[BaseException] = []

    def start(conversation_id: str) -> None:
        async def run() -> None:
            async with AsyncChatuiClient(chatui_server.url, chatui_server.token) as chatui:
                await stream_to_chatui(chatui, conversation_id, release_check().run())

        def target() -> None:
            try:
                asyncio.run(run())
            except BaseException as error:
                errors.append(error)

        thread = threading.Thread(target=target, daemon=True)
        threads.append(thread)
        thread.start()

    yield start
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []


def test_g5_g6_g13_sdk_run_shows_the_running_tool_the_failure_and_the_answer_live(
    chatui_server, open_page, sdk_run
):
    conversation_id = chatui_server.new_conversation("agents sdk live")
    page, watch = open_page(f"/c/{conversation_id}/")
    wait_connected(page)
    sdk_run(conversation_id)

    # G5: the ~1 s tool is a card while it runs, with its clock and no result box...
    slow = card(page, "Run Tests")
    expect(slow).to_have_attribute("data-status", "running", timeout=10000)
    assert slow.locator("[data-tool-pending]").count() == 1
    assert slow.locator("[data-tool-result]").count() == 0
    # ... and beside it the tool that failed, with the error as the tool answered (G6),
    # its HTML shown as text.
    disk = card(page, "Check Disk")
    expect(disk).to_have_attribute("data-status", "error", timeout=10000)
    expect(disk.locator("[data-tool-error]")).to_contain_text(DISK_ERROR)
    expect(slow).to_have_attribute("data-status", "success", timeout=10000)

    # The retry succeeds: one entry with its history (G14).
    expect(disk).to_have_attribute("data-status", "success", timeout=10000)
    expect(disk.locator("[data-tool-attempts]")).to_contain_text("failed once")

    # The streamed Markdown answer, final, with the run's tokens (S1, S4).
    answer = page.locator("[data-message-id]").filter(has=page.locator("h2"))
    expect(answer.locator("h2")).to_have_text("Ready to ship", timeout=15000)
    expect(answer.locator("table td").first).to_have_text("tests")
    expect(page.locator("[data-meta-line]")).to_contain_text(f"{7 * RESPONSE_TOKENS} tokens")
    expect(page.locator("#run-state")).to_have_attribute(
        "data-conversation-status", "completed", timeout=10000
    )

    # G13: the researcher's lookup inside the research card, the writer's inside the
    # handoff card, one level down.
    for parent in ("Research", "Handoff"):
        inner = card(page, parent).locator("[data-tool-call-id]")
        expect(inner).to_have_count(1)
        expect(inner).to_have_attribute("data-depth", "1")
        expect(inner.locator("[data-tool-title]")).to_have_text("Lookup")

    # Hostile text (a tool's error and output, an agent's name) never became markup.
    titles = page.locator("[data-tool-title]").all_text_contents()
    assert any("<img src=x" in title.lower() for title in titles), titles
    transcript = page.locator("#transcript")
    assert transcript.locator("script, img, i, b").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    assert watch.page_errors == [] and watch.dialogs == []
