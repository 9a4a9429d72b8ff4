"""chatui as the front end of real AG-UI agents, watched in Chromium
(docs/runtimes.md#be-the-front-end-of-an-ag-ui-agent): a person types into the composer,
chatui runs the agent (`CHATUI_AGENT=agui`) and the page shows the slow tool's card while
it runs, the failed first try of the flaky one, and the Markdown answer."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.agui_agents import CMD_ERROR, serve_agents
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


#: Records, for the page's lifetime, when each tool card was first seen in each status.
RECORD_STATUSES = """() => {
    window.__seen = {};
    const look = () => document.querySelectorAll('[data-tool-call-id]').forEach(e => {
        const key = e.dataset.toolCallId + ' ' + e.dataset.status;
        if (!(key in window.__seen)) window.__seen[key] = performance.now();
    });
    new MutationObserver(look).observe(document.body,
        {subtree: true, childList: true, attributes: true});
}"""


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

    composer = page.locator("form#composer textarea[name=content]")
    composer.fill("Check the README, run the tests and fetch the build status.")
    composer.press("Enter")

    # The slow tool's card is on the page, running, while the tool still works (~1 s).
    slow = page.locator("#transcript [data-tool-call-id]", has_text="slow_status")
    expect(slow).to_have_attribute("data-status", "running", timeout=15000)
    expect(slow).to_have_attribute("data-status", "success", timeout=15000)
    seen = page.evaluate("() => window.__seen")
    call_id = slow.get_attribute("data-tool-call-id")
    ran_for = seen[f"{call_id} success"] - seen[f"{call_id} running"]
    assert ran_for > 500, f"the card was shown running only {ran_for:.0f} ms"

    expect(page.locator("#run-state")).to_have_attribute(
        "data-conversation-status", "completed", timeout=15000
    )
    # The flaky command's first try is shown failed, with what it said.
    failed = page.locator("#transcript [data-tool-call-id][data-status=error]")
    expect(failed).to_have_count(1)
    expect(failed).to_contain_text("run_cmd")
    failed.locator("summary, [data-tool-title]").first.click()
    expect(failed).to_contain_text(CMD_ERROR[:40])
    # The answer, as Markdown.
    answer = page.locator("#transcript [data-role=assistant]").last
    expect(answer.locator("h2")).to_have_text("Result")
    expect(answer.locator("strong", has_text="green")).to_be_visible()
    assert watch.page_errors == []
    context.close()
