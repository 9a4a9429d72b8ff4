"""`CHATUI_AGENT=agui` in cluster mode (docs/runtimes.md#be-the-front-end-of-an-ag-ui-agent): the
web process only enqueues; a run worker streams the AG-UI agent; Stop from the web process
closes the worker's stream; an approval decided on the web process resumes the agent in a
run worker."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.support.agui_agents import DEPLOYED, RECORDER, THREAD_ROUTES, serve_agents
from tests.support.cluster import (
    RUN_WORKER_ENV,
    RunWorkerProcess,
    logged_in,
    post_form,
    run_row,
    wait_for,
)
from tests.support.live import LiveServer


@pytest.fixture(scope="module")
def agents():
    with serve_agents() as server:
        yield server


@pytest.fixture(scope="module")
def web(tmp_path_factory, agents) -> Iterator[LiveServer]:
    env = {**RUN_WORKER_ENV, "CHATUI_AGENT": "agui", "CHATUI_AGUI_URL": agents.url("/by-thread")}
    server = LiveServer(tmp_path_factory.mktemp("agui-web"), extra_env=env)
    server.prepare()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def worker(web, tmp_path_factory) -> Iterator[RunWorkerProcess]:
    process = RunWorkerProcess(web.env, tmp_path_factory.mktemp("agui-worker") / "worker.log")
    process.start()
    yield process
    process.stop()


def conversation_with(web: LiveServer, path: str) -> str:
    conversation = web.new_conversation(f"AG-UI {path}")
    THREAD_ROUTES[conversation] = path
    return conversation


def send(web: LiveServer, conversation: str, text: str = "Go.") -> None:
    with logged_in(web) as client:
        response = post_form(client, f"/c/{conversation}/messages", content=text)
    assert response.status_code == 302, response.text[:200]


def tools(web: LiveServer, conversation: str) -> dict[str, tuple[str, str]]:
    """tool name -> (status, content) of the conversation's latest entry of each."""
    with psycopg.connect(web.database_url, autocommit=True) as db:
        rows = db.execute(
            "SELECT tool_name, tool_status, content, tool_call_id FROM chatui_message"
            " WHERE conversation_id = %s AND role = 'tool' ORDER BY position",
            [conversation],
        ).fetchall()
    return {name: (status, content, call) for name, status, content, call in rows}


def ended(web: LiveServer, conversation: str, run_id: str | None = None) -> dict:
    def done() -> bool:
        row = run_row(web.database_url, conversation) or {}
        return row.get("status") not in (None, "running") and run_id in (None, row["run_id"])

    wait_for(done, "the run to end")
    return run_row(web.database_url, conversation)


def test_a_run_worker_streams_the_agui_agent(web, worker):
    conversation = conversation_with(web, "/pydantic")
    send(web, conversation)
    wait_for(
        lambda: (run_row(web.database_url, conversation) or {}).get("worker"),
        "a run worker to take the run",
    )
    run = ended(web, conversation)
    assert run["status"] == "completed" and run["worker"].startswith("chatui.worker.")
    found = tools(web, conversation)
    assert found["slow_status"][0] == "success" and found["read_file"][0] == "success"


def test_stop_on_the_web_process_closes_the_workers_stream(web, worker):
    RECORDER.client_left.clear()
    conversation = conversation_with(web, "/endless")
    send(web, conversation)
    wait_for(lambda: "run_cmd" in tools(web, conversation), "the agent's tool card")
    with logged_in(web) as client:
        assert post_form(client, f"/c/{conversation}/stop").status_code == 302
    run = ended(web, conversation)  # as every Stop ends a run (W5)
    assert (run["status"], run["error_message"]) == ("cancelled", "")
    assert RECORDER.client_left.wait(10), "the agent never saw its client go"


def test_an_approval_on_the_web_process_resumes_the_agent_in_a_worker(web, worker):
    conversation = conversation_with(web, "/pydantic-approval")
    send(web, conversation, "Deploy.")
    wait_for(
        lambda: tools(web, conversation).get("deploy", ("",))[0] == "awaiting_approval",
        "the approval request",
    )
    first = ended(web, conversation)
    call_id = tools(web, conversation)["deploy"][2]
    with web.api() as api:
        decided = api.post(
            f"/conversations/{conversation}/approvals/{call_id}", json={"decision": "approved"}
        )
    assert decided.status_code == 200, decided.text
    wait_for(
        lambda: (run_row(web.database_url, conversation) or {}).get("run_id") != first["run_id"],
        "the resumed run",
    )
    resumed = ended(web, conversation)
    assert resumed["status"] == "completed" and resumed["worker"].startswith("chatui.worker.")
    status, content, _ = tools(web, conversation)["deploy"]
    assert status == "success" and DEPLOYED in content
