"""chatui as the front end of an AG-UI agent (`CHATUI_AGENT=agui`,
docs/runtimes.md#be-the-front-end-of-an-ag-ui-agent), against real agents under a real
uvicorn: Pydantic AI's AGUIAdapter and LangGraph's ag-ui-langgraph with their own test
models, and small servers that misbehave on purpose (tests/support/agui_agents.py)."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta

import pytest
from ag_ui.core import RunAgentInput
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.utils import timezone

from chatui.agents import is_running, start_run, stop_run, wait_for_run
from chatui.agents.agui import AGUIAgent, resume_run_id
from chatui.agents.agui_input import build_input
from chatui.agents.runs import RunSpec
from chatui.ingest import approvals
from chatui.ingest.service import ingest
from chatui.models import Conversation, Message, Role, Run, ToolStatus
from tests.support.agui_agents import (
    ANSWER,
    CMD_ERROR,
    DEPLOYED,
    RECORDER,
    SECRET,
    STATUS,
    serve_agents,
)
from tests.support.live import free_port as closed_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def agents():
    """Every test agent under one uvicorn, shared by the module."""
    with serve_agents() as server:
        yield server


@pytest.fixture
def user(db):
    return get_user_model().objects.create(username="alice")


@pytest.fixture
def conversation(user) -> Conversation:
    return Conversation.objects.create(owner=user, title="AG-UI")


def send(conversation, agent, text="Check the build.", timeout=30.0) -> str:
    """What the composer does: ingest the user's message, start the run, wait for it."""
    ingest(
        conversation,
        {"type": "user.message", "message_id": f"u-{uuid.uuid4().hex[:8]}", "content": text},
    )

    async def main() -> str:
        run_id = start_run(conversation, text, agent=agent)
        assert await wait_for_run(conversation.pk, timeout=timeout)
        return run_id

    return asyncio.run(main())


def run_of(conversation, run_id) -> Run:
    return Run.objects.get(conversation=conversation, run_id=run_id)


def tools(conversation) -> list[Message]:
    return list(Message.objects.filter(conversation=conversation, role=Role.TOOL))


def answer(conversation) -> str:
    texts = Message.objects.filter(conversation=conversation, role=Role.ASSISTANT).exclude(
        content=""
    )
    return texts.last().content


# -- what chatui sends --------------------------------------------------------------------


def test_run_agent_input_is_the_conversation_as_agui_messages(conversation, agents):
    ingest(
        conversation,
        [
            {"type": "user.message", "message_id": "u1", "content": "Read the README."},
            {"type": "agent.status", "status": "running", "run_id": "r0"},
            {"type": "agent.step.completed", "message_id": "a1", "content": "Reading it.",
             "run_id": "r0"},
            {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "read_file",
             "args": {"path": "README.md"}, "run_id": "r0"},
            {"type": "agent.tool.completed", "tool_call_id": "c1", "result": {"lines": 20},
             "run_id": "r0"},
            {"type": "agent.tool.started", "tool_call_id": "c2", "tool_name": "run_cmd",
             "args": {"command": "make"}, "run_id": "r0"},
            {"type": "agent.tool.started", "tool_call_id": "c2.1", "tool_name": "sub",
             "parent_tool_call_id": "c2", "run_id": "r0"},
            {"type": "agent.tool.completed", "tool_call_id": "c2.1", "result": "x",
             "run_id": "r0"},
            {"type": "agent.tool.completed", "tool_call_id": "c2", "error": "exit 2",
             "run_id": "r0"},
            {"type": "agent.step.completed", "message_id": "a2", "content": "It failed.",
             "run_id": "r0"},
            {"type": "agent.status", "status": "completed", "run_id": "r0"},
        ],
    )  # fmt: skip
    agent = AGUIAgent(url=agents.url("/echo"), headers={"X-Api-Key": "k-1"})
    run_id = send(conversation, agent, "Try again.")

    assert run_of(conversation, run_id).status == "completed"
    body, headers = RECORDER.bodies[-1], RECORDER.headers[-1]
    RunAgentInput.model_validate(body)  # the package's own model accepts it
    assert body["threadId"] == str(conversation.pk) and body["runId"] == run_id
    assert (body["tools"], body["context"], body["state"], body["forwardedProps"]) == (
        [], [], {}, {},
    )  # fmt: skip
    assert "resume" not in body
    messages = [{k: v for k, v in m.items() if k != "id"} for m in body["messages"]]
    assert messages == [
        {"role": "user", "content": "Read the README."},
        {
            "role": "assistant",
            "content": "Reading it.",
            "toolCalls": [
                {"type": "function",
                 "function": {"name": "read_file", "arguments": '{"path": "README.md"}'},
                 "id": "c1"},
                {"type": "function",
                 "function": {"name": "run_cmd", "arguments": '{"command": "make"}'},
                 "id": "c2"},
            ],
        },
        {"role": "tool", "toolCallId": "c1", "content": '{"lines": 20}'},
        {"role": "tool", "toolCallId": "c2", "content": "exit 2", "error": "exit 2"},
        {"role": "assistant", "content": "It failed."},
        {"role": "user", "content": "Try again."},
    ]  # fmt: skip
    assert headers["accept"] == "text/event-stream"
    assert headers["x-api-key"] == "k-1"
    assert headers["content-type"] == "application/json"


def test_state_carries_over_from_the_latest_snapshot_and_its_deltas(conversation):
    ingest(
        conversation,
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
            {"type": "STATE_SNAPSHOT", "snapshot": {"step": 1, "files": ["a"]}},
            {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/step", "value": 2}]},
            {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/files/-", "value": "b"}]},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
        ],
    )
    body = build_input(conversation, "r2", "next")
    assert body["state"] == {"step": 2, "files": ["a", "b"]}


def test_the_setting_names_its_agent_and_resumed_runs_travel_to_run_workers(settings):
    settings.CHATUI_AGUI_URL = "http://agent.example:9000/agui"
    spec = RunSpec(AGUIAgent(resume_of="run_1"), "", "run_2", agent_options={"resume_of": "run_1"})
    again = RunSpec.from_message(json.loads(json.dumps(spec.to_message())))
    assert isinstance(again.agent, AGUIAgent)
    assert again.agent.url == "http://agent.example:9000/agui"
    assert again.agent.resume_of == "run_1"


# -- how a run fails ------------------------------------------------------------------------


def failed_with(conversation, run_id) -> str:
    run = run_of(conversation, run_id)
    assert run.status == "failed", run.status
    assert not is_running(conversation.pk)
    return run.error_message


def test_a_refusal_fails_the_run_with_its_status_and_a_masked_excerpt(conversation, agents):
    agent = AGUIAgent(url=agents.url("/refuse"), headers={"Authorization": SECRET})
    message = failed_with(conversation, send(conversation, agent))
    assert message.startswith(f"The AG-UI agent at {agents.base_url} refused the run: HTTP 503")
    assert "upstream says no" in message
    assert SECRET not in message and len(message) < 400


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/html", "answered text/html, not an event stream"),
        ("/proto", "protobuf encoding"),
    ],
)
def test_an_answer_that_is_not_an_sse_stream_fails_the_run(conversation, agents, path, says):
    message = failed_with(conversation, send(conversation, AGUIAgent(url=agents.url(path))))
    assert says in message


def test_a_broken_stream_fails_the_run_and_closes_its_running_tool(conversation, agents):
    run_id = send(conversation, AGUIAgent(url=agents.url("/broken")))
    message = failed_with(conversation, run_id)
    assert message.startswith(f"The AG-UI agent at {agents.base_url} broke its stream")
    (tool,) = tools(conversation)
    assert tool.tool_call_id == f"{run_id}-t1" and tool.tool_status != ToolStatus.RUNNING


def test_a_stream_that_ends_before_its_run_did_fails_the_run(conversation, agents):
    message = failed_with(
        conversation, send(conversation, AGUIAgent(url=agents.url("/ends-early")))
    )
    assert "closed its stream before the run finished" in message


def test_an_event_that_is_not_json_fails_the_run_naming_it(conversation, agents):
    message = failed_with(conversation, send(conversation, AGUIAgent(url=agents.url("/not-json"))))
    assert "sent an event that is not a JSON object: <b>not json</b>" in message


def test_an_agent_nobody_answers_at_fails_the_run(conversation):
    url = f"http://127.0.0.1:{closed_port()}/agui"
    message = failed_with(conversation, send(conversation, AGUIAgent(url=url)))
    assert (
        message.startswith("The AG-UI agent at http://127.0.0.1:")
        and "could not be reached" in message
    )


@pytest.mark.parametrize(
    ("headers", "says"),
    [("{not json", "CHATUI_AGUI_HEADERS is not JSON"), ('{"X": 1}', "header names to strings")],
)
def test_bad_headers_fail_the_run_naming_the_setting(conversation, agents, headers, says):
    agent = AGUIAgent(url=agents.url("/echo"), headers=headers)
    assert says in failed_with(conversation, send(conversation, agent))


def test_no_url_fails_the_run_naming_the_setting(conversation, settings):
    settings.CHATUI_AGUI_URL = ""
    assert "set CHATUI_AGUI_URL" in failed_with(conversation, send(conversation, AGUIAgent()))


def test_w5_stop_closes_the_agents_stream(conversation, agents):
    RECORDER.client_left.clear()
    RECORDER.streaming.clear()
    ingest(conversation, {"type": "user.message", "message_id": "u1", "content": "work"})

    async def main() -> str:
        run_id = start_run(conversation, "work", agent=AGUIAgent(url=agents.url("/endless")))
        for _ in range(500):  # the agent streams, and its tool's card is shown
            if RECORDER.streaming.is_set() and await database_sync_to_async(tools)(conversation):
                break
            await asyncio.sleep(0.01)
        assert await stop_run(conversation.pk) == run_id
        assert await wait_for_run(conversation.pk, timeout=10)
        return run_id

    run_id = asyncio.run(main())
    assert RECORDER.client_left.wait(5), "the agent never saw its client go"
    run = run_of(conversation, run_id)
    assert (run.status, run.error_message) == ("cancelled", "")
    (tool,) = tools(conversation)
    assert tool.tool_status == ToolStatus.CANCELLED


# -- real frameworks, end to end ---------------------------------------------------------


def assert_the_scenario_rendered(conversation, run_id) -> None:
    """read_file, run_cmd failing then passing, slow_status, and the Markdown answer."""
    assert run_of(conversation, run_id).status == "completed"
    entries = {(t.tool_name, t.tool_status) for t in tools(conversation)}
    assert ("read_file", ToolStatus.SUCCESS) in entries
    assert ("run_cmd", ToolStatus.ERROR) in entries  # the first try, shown as failed
    assert ("run_cmd", ToolStatus.SUCCESS) in entries  # the retry
    (slow,) = [t for t in tools(conversation) if t.tool_name == "slow_status"]
    assert slow.tool_status == ToolStatus.SUCCESS
    assert json.loads(slow.content) == STATUS
    (failed,) = [t for t in tools(conversation) if t.tool_status == ToolStatus.ERROR]
    assert CMD_ERROR in failed.content
    assert answer(conversation).strip() == ANSWER.strip()


def test_pydantic_ai_agent_end_to_end_and_its_next_turn(conversation, agents):
    agent = AGUIAgent(url=agents.url("/pydantic"))
    run_id = send(conversation, agent)
    assert_the_scenario_rendered(conversation, run_id)
    # The next turn sends the whole history back; Pydantic AI accepts it and runs again.
    second = send(conversation, agent, "Once more.")
    assert run_of(conversation, second).status == "completed"
    assert len([t for t in tools(conversation) if t.tool_name == "slow_status"]) == 2


def test_langgraph_agent_end_to_end_and_its_next_turn(conversation, agents):
    agent = AGUIAgent(url=agents.url("/langgraph/"))
    run_id = send(conversation, agent)
    assert_the_scenario_rendered(conversation, run_id)
    second = send(conversation, agent, "Once more.")
    assert run_of(conversation, second).status == "completed"


def pushed_copy(api, user, events: list[dict], *, as_sse: bool) -> Conversation:
    """A second conversation fed the same AG-UI events through the events endpoint, as a
    runtime teeing its stream would: a JSON array, or the SSE text itself."""
    copy = Conversation.objects.create(owner=user, title="tee")
    if as_sse:
        text = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
        answer = api.client.post(
            f"/api/v1/conversations/{copy.pk}/events",
            data=text.encode(),
            content_type="text/event-stream",
            headers=api.headers,
        )
    else:
        answer = api.post_events(copy, events)
    assert answer.status_code == 200, answer.content
    return copy


def agent_work(conversation) -> list[tuple]:
    """What the agent's stream put on the page: each tool entry (name, outcome, result,
    attempt) and each non-empty assistant text, in order."""
    rows = Message.objects.filter(conversation=conversation).order_by("position")
    return [
        (m.role, m.tool_name, m.tool_status, m.content, (m.metadata or {}).get("attempt"))
        for m in rows
        if m.role == Role.TOOL or (m.role == Role.ASSISTANT and m.content)
    ]


@pytest.mark.parametrize("path", ["/pydantic", "/langgraph/"])
def test_a_live_runs_stream_pushed_unchanged_as_json_and_as_sse_renders_the_same(
    conversation, agents, api, user, path
):
    """docs/events.md#ag-ui: the log keeps each AG-UI event as the agent streamed it;
    those very events teed to another conversation — as JSON and as SSE text — give
    the same tool entries, failures, retries and answer as the run chatui drove."""
    send(conversation, AGUIAgent(url=agents.url(path)))
    streamed = [
        event.payload
        for event in conversation.events.filter(type__startswith="agui.").order_by("seq")
    ]
    assert streamed and streamed[0]["type"] == "RUN_STARTED"
    live = agent_work(conversation)
    assert ("tool", "run_cmd", ToolStatus.ERROR) in [entry[:3] for entry in live]
    for as_sse in (False, True):
        assert agent_work(pushed_copy(api, user, streamed, as_sse=as_sse)) == live


# -- approvals: an interrupt, a decision, the run resumed ---------------------------------


def wait_until(predicate, timeout=20.0):
    async def poll():
        for _ in range(int(timeout / 0.05)):
            if await database_sync_to_async(predicate)():
                return True
            await asyncio.sleep(0.05)
        return False

    return asyncio.run(poll())


@pytest.mark.parametrize("decision", ["approved", "denied", "expired"])
def test_a_tool_call_interrupt_asks_a_person_and_the_decision_resumes_the_run(
    conversation, agents, settings, decision
):
    settings.CHATUI_AGENT = "agui"
    settings.CHATUI_AGUI_URL = agents.url("/pydantic-approval")
    run_id = send(conversation, AGUIAgent())
    (deploy,) = tools(conversation)
    assert deploy.tool_name == "deploy" and deploy.tool_status == ToolStatus.AWAITING_APPROVAL

    if decision == "expired":  # nobody decided before the deadline: the server did
        assert approvals.expire_overdue(conversation, now=timezone.now() + timedelta(days=1))
    else:
        approvals.decide_as(conversation, deploy.tool_call_id, decision, "alice", note="no")
    resumed = resume_run_id(run_id)
    assert wait_until(
        lambda: (
            Run.objects.filter(conversation=conversation, run_id=resumed)
            .exclude(status="running")
            .exists()
        )
    ), "the decision did not resume the run"
    assert run_of(conversation, resumed).status == "completed"
    deploy.refresh_from_db()
    if decision == "approved":
        assert deploy.tool_status == ToolStatus.SUCCESS and DEPLOYED in deploy.content
    else:  # the agent was told no (Pydantic AI's ToolDenied): the tool never ran
        assert deploy.tool_status == ToolStatus.DENIED and DEPLOYED not in deploy.content
    # What the resumed run carried: one resume entry answering the interrupt.
    (entry,) = build_input(conversation, "again", "", resume_of=run_id)["resume"]
    assert entry["interruptId"].endswith(deploy.tool_call_id) and entry["status"] == "resolved"
    assert (
        entry["payload"]
        == {
            "approved": {"approved": True},
            "denied": {"approved": False, "reason": "no"},
            "expired": {"approved": False, "reason": "the approval request expired"},
        }[decision]
    )
    assert "deployment handled" in answer(conversation)
