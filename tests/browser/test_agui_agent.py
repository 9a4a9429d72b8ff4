"""chatui as the front end of real AG-UI agents, watched in Chromium
(docs/runtimes.md#be-the-front-end-of-an-ag-ui-agent): a person types into the composer,
chatui runs the agent (`CHATUI_AGENT=agui`) and the page shows the slow tool's card while
it runs, the failed first try of the flaky one, and the Markdown answer."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.agui_agents import DEPLOYED, SLOW_TOOL_ENDS, THREAD_ROUTES, serve_agents
from tests.support.browser import Watch, wait_connected
from tests.support.live import LiveServer


@pytest.fixture(scope="module")
def agents():
    with serve_agents() as server:
        yield server


@pytest.fixture(scope="module")
def agui_chatui(chatui_server, agents, tmp_path_factory):
    """A daphne on the session server's database (so its login holds) whose composer
    runs AG-UI agents: each conversation talks to the agent its test registers
    (`THREAD_ROUTES`, by the conversation's id, the RunAgentInput's threadId)."""
    server = LiveServer(
        tmp_path_factory.mktemp("agui-live"),
        extra_env={"CHATUI_AGENT": "agui", "CHATUI_AGUI_URL": agents.url("/by-thread")},
        database_url=chatui_server.env["DATABASE_URL"],
    )
    server.start()  # the database is the session server's: migrated, its user in it

    def talking_to(path: str) -> tuple[LiveServer, str]:
        conversation_id = chatui_server.new_conversation(f"AG-UI {path}")
        THREAD_ROUTES[conversation_id] = path
        return server, conversation_id

    yield talking_to
    server.stop()


#: Records, for the page's lifetime, when (wall clock, ms) each tool card was first seen
#: in each status, keyed "<tool name> <call id> <status>".
RECORD_STATUSES = """() => {
    window.__seen = {};
    const look = () => document.querySelectorAll('[data-tool-call-id]').forEach(e => {
        const name = (e.querySelector('[data-tool-call]')?.textContent || '').split('(')[0];
        const key = name + ' ' + e.dataset.toolCallId + ' ' + e.dataset.status;
        const now = performance.timeOrigin + performance.now();
        if (!(key in window.__seen)) window.__seen[key] = now;
    });
    new MutationObserver(look).observe(document.body,
        {subtree: true, childList: true, attributes: true});
}"""


def first_seen(seen: dict, name: str, status: str) -> float | None:
    """When (time.time()) a `name` card was first seen in `status`."""
    times = [at for key, at in seen.items() if key.split()[0] == name and key.endswith(status)]
    return min(times) / 1000 if times else None


@pytest.mark.parametrize("path", ["/pydantic", "/langgraph/"])
def test_an_agui_agents_run_is_watched_live_from_the_composer(
    browser, auth_state, agui_chatui, path
):
    server, conversation_id = agui_chatui(path)
    context = browser.new_context(storage_state=auth_state)
    page = context.new_page()
    watch = Watch(origin=f"127.0.0.1:{server.port}")
    watch.attach(page)
    page.goto(f"{server.url}/c/{conversation_id}/")
    wait_connected(page)
    page.evaluate(RECORD_STATUSES)
    SLOW_TOOL_ENDS.clear()

    composer = page.locator("form#composer textarea[name=content]")
    composer.fill("Check the README, run the tests and fetch the build status.")
    composer.press("Enter")
    expect(page.locator("#run-state")).to_have_attribute(
        "data-conversation-status", "completed", timeout=30000
    )
    seen = page.evaluate("() => window.__seen")

    # The slow tool's card was on the page, running, before the tool had finished (~1 s).
    (tool_end,) = SLOW_TOOL_ENDS
    shown_running = first_seen(seen, "slow_status", "running")
    assert shown_running is not None, f"no slow_status card was shown running: {sorted(seen)}"
    assert shown_running < tool_end, f"shown {shown_running - tool_end:.3f} s after the tool ended"
    assert first_seen(seen, "slow_status", "success") > shown_running
    # The flaky command's first try is shown failed: one entry with its attempt history
    # (G14), as a run's retried call always is.
    retried = page.locator("#transcript [data-tool-call-id][data-attempts='2']")
    expect(retried).to_contain_text("run_cmd")
    expect(retried.locator("[data-tool-attempts]")).to_contain_text("failed once, succeeded on 2")
    # The answer, as Markdown.
    answer = page.locator("#transcript [data-role=assistant]").last
    expect(answer.locator("h2")).to_have_text("Result")
    expect(answer.locator("strong", has_text="green")).to_be_visible()
    assert watch.page_errors == []
    context.close()


def test_an_agui_interrupt_is_approved_on_the_page_and_the_agent_resumes(
    browser, auth_state, agui_chatui
):
    """docs/events.md#approvals through AG-UI: the agent's `interrupt` outcome puts its tool call
    awaiting approval; Approve on the page starts the run that resumes it, and the tool
    runs."""
    server, conversation_id = agui_chatui("/pydantic-approval")
    context = browser.new_context(storage_state=auth_state)
    page = context.new_page()
    watch = Watch(origin=f"127.0.0.1:{server.port}")
    watch.attach(page)
    page.goto(f"{server.url}/c/{conversation_id}/")
    wait_connected(page)

    composer = page.locator("form#composer textarea[name=content]")
    composer.fill("Deploy build 1423.")
    composer.press("Enter")
    deploy = page.locator("#transcript [data-tool-call-id]", has_text="deploy")
    expect(deploy).to_have_attribute("data-status", "awaiting_approval", timeout=15000)
    deploy.locator("[data-approve]").click()

    expect(deploy).to_have_attribute("data-status", "success", timeout=15000)
    expect(deploy).to_contain_text(DEPLOYED)
    expect(page.locator("#run-state")).to_have_attribute(
        "data-conversation-status", "completed", timeout=15000
    )
    expect(page.locator("#transcript [data-role=assistant]").last).to_contain_text(
        "deployment handled"
    )
    assert watch.page_errors == []
    context.close()
