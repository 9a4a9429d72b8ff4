"""docs/rendering.md#approvals in a real browser against the real daphne server: a runtime asks
through the API, people decide on the page, the runtime learns the decision by long poll."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from tests.support.browser import wait_connected

OTHER = "approval-stranger"
OTHER_PASSWORD = "stranger-password-1"


def ask(chatui_server, conversation_id: str, call_id: str, **extra) -> None:
    chatui_server.post_events(
        conversation_id,
        [
            {"type": "agent.status", "status": "running", "run_id": "r-approval"},
            {
                "type": "agent.tool.approval_requested",
                "tool_call_id": call_id,
                "tool_name": "delete_file",
                "args": {"path": "notes/old.txt"},
                "reason": "Deletes a file in the sandbox",
                "run_id": "r-approval",
                **extra,
            },
        ],
    )


def long_poll(chatui_server, conversation_id: str, call_id: str, wait: int = 30):
    with chatui_server.api() as api:
        return api.get(
            f"/conversations/{conversation_id}/approvals/{call_id}",
            params={"wait": wait},
            timeout=wait + 15,
        )


def server_threads(chatui_server, pause: float = 0.0) -> int:
    """daphne's OS threads now (Linux /proc), after `pause` seconds."""
    time.sleep(pause)
    status = Path(f"/proc/{chatui_server.process.pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("Threads:")).split()[1])


def entry(page, call_id: str):
    return page.locator(f'[data-tool-call-id="{call_id}"]')


@pytest.fixture(scope="module")
def stranger_token(chatui_server) -> str:
    return chatui_server.add_user(OTHER, OTHER_PASSWORD)


def test_sec13_buttons_in_two_tabs_approve_in_one_removes_both_and_the_long_poll_says_who(
    chatui_server, open_page
):
    conversation_id = chatui_server.new_conversation("approve")
    first, watch = open_page(f"/c/{conversation_id}/")
    second, _ = open_page(f"/c/{conversation_id}/")
    wait_connected(first)
    wait_connected(second)
    with ThreadPoolExecutor(1) as pool:
        ask(chatui_server, conversation_id, "a1")
        poll = pool.submit(long_poll, chatui_server, conversation_id, "a1")
        for tab in (first, second):
            card = entry(tab, "a1")
            expect(card).to_have_attribute("data-status", "awaiting_approval", timeout=5000)
            expect(card.locator("[data-approve]")).to_be_visible()
            expect(card.locator("[data-approval-reason]")).to_have_text(
                "Deletes a file in the sandbox"
            )
            expect(tab.locator("[data-batch-awaiting]")).to_have_text("1 awaiting approval")
        entry(first, "a1").locator("[data-approve]").click()
        for tab in (first, second):
            expect(entry(tab, "a1").locator("[data-approve]")).to_have_count(0, timeout=5000)
            expect(entry(tab, "a1").locator("[data-approval-decision]")).to_contain_text(
                re.compile(r"^Approved by e2e · \d\d:\d\d$")
            )
        answer = poll.result()
    assert answer.status_code == 200
    assert answer.json()["decision"] == "approved"
    assert answer.json()["decided_by"] == "e2e"
    assert watch.page_errors == []


def test_sec13_deny_with_a_note(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("deny")
    ask(chatui_server, conversation_id, "d1")
    page, watch = open_page(f"/c/{conversation_id}/")
    wait_connected(page)
    card = entry(page, "d1")
    card.locator("input[name^=note-]").fill("too risky")
    card.locator("[data-deny]").click()
    expect(card).to_have_attribute("data-status", "denied", timeout=5000)
    expect(card.locator("[data-approval-decision]")).to_have_text("Denied by e2e: too risky")
    expect(card.locator(".tool-icon .icon--ban")).to_have_count(1)  # W7
    expect(page.locator("[data-batch-denied]")).to_have_text("1 denied")
    assert page.locator("[data-batch-failed]").count() == 0
    answer = long_poll(chatui_server, conversation_id, "d1", wait=0)
    assert (answer.json()["decision"], answer.json()["note"]) == ("denied", "too risky")
    assert watch.page_errors == []


def test_sec13_deny_works_without_javascript(chatui_server, browser, auth_state):
    conversation_id = chatui_server.new_conversation("no js")
    ask(chatui_server, conversation_id, "n1")
    context = browser.new_context(storage_state=auth_state, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{chatui_server.url}/c/{conversation_id}/")
        page.locator("[data-tool-batch] > summary").count()  # the batch is open: buttons in view
        card = entry(page, "n1")
        card.locator("input[name^=note-]").fill("not now")
        card.locator("[data-deny]").click()
        page.wait_for_load_state()
        expect(entry(page, "n1").locator("[data-approval-decision]")).to_have_text(
            "Denied by e2e: not now"
        )
        expect(entry(page, "n1").locator("[data-deny]")).to_have_count(0)
    finally:
        context.close()


def test_sec13_expiry_with_no_browser_open_is_recorded_by_the_server(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("expiry")
    ask(chatui_server, conversation_id, "e1", timeout_s=1)
    answer = long_poll(chatui_server, conversation_id, "e1", wait=15)
    assert answer.status_code == 200
    assert (answer.json()["decision"], answer.json()["decided_by"]) == ("expired", "system")
    page, _ = open_page(f"/c/{conversation_id}/")
    card = entry(page, "e1")
    expect(card).to_have_attribute("data-status", "denied")
    expect(card.locator("[data-approval-decision]")).to_have_text("Expired · no decision")
    assert card.locator("[data-approve]").count() == 0


def test_sec13_second_decision_409_runtime_tool_approval_400(chatui_server, open_page):
    conversation_id = chatui_server.new_conversation("twice")
    ask(chatui_server, conversation_id, "t1")
    page, _ = open_page(f"/c/{conversation_id}/")
    wait_connected(page)
    entry(page, "t1").locator("[data-approve]").click()
    expect(entry(page, "t1").locator("[data-approval-decision]")).to_be_attached(timeout=5000)
    url = f"/conversations/{conversation_id}/approvals/t1"
    with chatui_server.api() as api:
        again = api.post(url, json={"decision": "denied"})
        assert again.status_code == 409
        assert "already decided: approved by e2e" in again.json()["error"]
        forged = api.post(
            f"/conversations/{conversation_id}/events",
            json={"type": "tool.approval", "tool_call_id": "t1", "decision": "denied"},
        )
        assert forged.status_code == 400
        assert forged.json()["field"] == "type"
    expect(entry(page, "t1")).to_have_attribute("data-status", "queued")


def test_sec13_another_user_cannot_decide_404(chatui_server, stranger_token):
    conversation_id = chatui_server.new_conversation("not yours")
    ask(chatui_server, conversation_id, "s1")
    with chatui_server.api(stranger_token) as api:
        url = f"/conversations/{conversation_id}/approvals/s1"
        assert api.post(url, json={"decision": "approved"}).status_code == 404
        assert api.get(url).status_code == 404
    with httpx.Client(base_url=chatui_server.url, timeout=30) as browser:
        login = browser.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
        browser.post(
            "/accounts/login/",
            data={"username": OTHER, "password": OTHER_PASSWORD, "csrfmiddlewaretoken": token},
        )
        listing = browser.get("/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', listing.text).group(1)
        with chatui_server.api() as owner:
            messages = owner.get(f"/conversations/{conversation_id}").json()["messages"]
        assert all(m["metadata"].get("tool_status") != "denied" for m in messages)
        refused = browser.post(
            f"/c/{conversation_id}/tools/1/approval",
            data={"decision": "approved", "csrfmiddlewaretoken": token},
        )
        assert refused.status_code == 404
    answer = long_poll(chatui_server, conversation_id, "s1", wait=0)
    assert answer.status_code == 204  # still pending: nothing was decided


def test_sec13_twenty_long_polls_do_not_hold_up_an_approve(chatui_server):
    """The long poll holds no request thread: with 20 of them waiting, the Approve goes
    through and every poll answers with it (a blocked Approve would leave them to time
    out with 204)."""
    conversation_id = chatui_server.new_conversation("many pollers")
    ask(chatui_server, conversation_id, "p1")
    url = f"/conversations/{conversation_id}/approvals/p1"
    idle = server_threads(chatui_server)
    with ThreadPoolExecutor(20) as pool:
        polls = [pool.submit(long_poll, chatui_server, conversation_id, "p1") for _ in range(20)]
        with chatui_server.api() as api:
            pending = api.get(url, params={"wait": 0})
            assert pending.status_code == 204
            # Sampled while the polls wait (one that has not arrived yet only makes
            # this weaker, never wrong): waiting polls park no thread each.
            busiest = max(server_threads(chatui_server, pause=0.05) for _ in range(20))
            decided = api.post(url, json={"decision": "approved"})
        answers = [poll.result() for poll in polls]
    assert busiest < idle + 10
    assert decided.status_code == 200
    assert [a.status_code for a in answers] == [200] * 20
    assert {a.json()["decision"] for a in answers} == {"approved"}
