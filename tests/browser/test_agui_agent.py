"""chatui as the front end of real AG-UI agents, watched in Chromium
(docs/runtimes.md#be-the-front-end-of-an-ag-ui-agent): a person types into the composer,
chatui runs the agent (`CHATUI_AGENT=agui`) and the page shows the slow tool's card while
it runs, the failed first try of the flaky one, and the Markdown answer."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.agui_agents import SLOW_TOOL_ENDS, serve_agents
from tests.support.browser import Watch, wait_connected
from tests.support.live import LiveServer


@pytest.fixture(scope="module")
def agents():
    with serve_agents() as server:
        yield server


@pytest.fixture(scope="module")
def agui_chatui(chatui_server, agents, tmp_path_factory):
    """A daphne on the session server's database (so its login holds) whose composer
    runs the AG-UI agent at `path`: one per agent, started when first asked for."""
    servers = {}

    def serve(path: str) -> LiveServer:
        if path not in servers:
            server = LiveServer(
                tmp_path_factory.mktemp("agui-live"),
                extra_env={"CHATUI_AGENT": "agui", "CHATUI_AGUI_URL": agents.url(path)},
                database_url=chatui_server.env["DATABASE_URL"],
            )
            server.prepare()
            server.start()
            servers[path] = server
        return servers[path]

    yield serve
    for server in servers.values():
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
    browser, auth_state, chatui_server, agui_chatui, path
):
    server = agui_chatui(path)
    conversation_id = chatui_server.new_conversation("AG-UI")
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
