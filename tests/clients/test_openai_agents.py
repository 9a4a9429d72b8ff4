"""The client's OpenAI Agents SDK extra (docs/runtimes.md#openai-agents-sdk): a real SDK run —
its runner, tools, tracing and streaming; only the model is scripted
(tests/support/agents_sdk.py) — streamed into a real chatui server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.exceptions import MaxTurnsExceeded
from chatui_client import AsyncChatuiClient, ChatuiClient, ChatuiUnavailable, RetryPolicy
from chatui_client.openai_agents import relay, stream_to_chatui

from tests.support.agents_sdk import (
    ANSWER,
    DISK_ERROR,
    NOTES,
    NOTES_TOOL,
    QUESTION,
    RESPONSE_TOKENS,
    SLOW_TOOL_SECONDS,
    WRITER,
    Call,
    Say,
    ScriptModel,
    only_chatui_tracing,
    release_check,
)
from tests.support.live import free_port


@pytest.fixture(autouse=True)
def offline_tracing():
    only_chatui_tracing()


def transcript(chatui_server, conversation_id: str) -> dict:
    with chatui_server.api() as api:
        return api.get(f"/conversations/{conversation_id}").json()


def shown(messages: list[dict]) -> list[dict]:
    """The messages a reader sees: an assistant step with no text (the model only
    called tools) is kept for its tokens and shows nothing."""
    return [m for m in messages if m["role"] != "assistant" or m["content"].strip()]


def tool(messages: list[dict], name: str, nth: int = 0) -> dict:
    return [m for m in messages if m["role"] == "tool" and m["metadata"]["tool_name"] == name][nth]


async def stream_release_check(chatui_server, conversation_id: str):
    check = release_check(answer_delay=0.0)
    async with AsyncChatuiClient(chatui_server.url, chatui_server.token) as chatui:
        result = await stream_to_chatui(chatui, conversation_id, check.run())
    return check, result


def test_g6_g13_s4_sdk_run_streams_tools_errors_nesting_and_tokens(chatui_server):
    conversation_id = chatui_server.new_conversation("agents sdk")
    check, result = asyncio.run(stream_release_check(chatui_server, conversation_id))
    assert result.final_output == ANSWER
    assert all(not model.turns for model in check.models)  # the whole script ran

    body = transcript(chatui_server, conversation_id)
    assert body["conversation"]["status"] == "completed"
    messages = body["messages"]
    outline = [
        (m["role"], m["metadata"].get("tool_name") if m["role"] == "tool" else m["content"])
        for m in shown(messages)
    ]
    assert outline == [
        ("user", QUESTION),
        ("assistant", "Let me check the release."),
        ("tool", "check_disk"),
        ("tool", "run_tests"),
        ("tool", NOTES_TOOL),
        ("tool", "check_disk"),
        ("tool", "research"),
        ("tool", "lookup"),  # the researcher's, inside research
        ("tool", "handoff"),
        ("tool", "lookup"),  # the writer's, inside the handoff
        ("assistant", ANSWER),
    ]

    # G6: the failed attempt is an error whose text is what the tool answered the model;
    # G14: the same call right after it is its second attempt.
    failed, retried = tool(messages, "check_disk"), tool(messages, "check_disk", 1)
    assert failed["metadata"]["tool_status"] == "error"
    assert failed["content"] == f"check_disk failed: {DISK_ERROR}"
    assert failed["metadata"]["args"] == {"path": "/var"}
    assert (failed["metadata"]["attempt"], retried["metadata"]["attempt"]) == (1, 2)
    assert retried["metadata"]["tool_status"] == "success"
    assert retried["content"] == "/var: 41% used"

    slow = tool(messages, "run_tests")
    assert slow["metadata"]["tool_status"] == "success"
    assert slow["metadata"]["tool_duration_ms"] >= SLOW_TOOL_SECONDS * 1000
    assert tool(messages, NOTES_TOOL)["content"] == NOTES

    # G13: the sub-agent's tool inside the agent-as-tool's card, the handed-to agent's
    # inside the handoff's.
    research, handoff = tool(messages, "research"), tool(messages, "handoff")
    assert research["content"] == "No open bugs."
    nested, written = tool(messages, "lookup"), tool(messages, "lookup", 1)
    assert nested["metadata"]["parent_tool_call_id"] == research["metadata"]["tool_call_id"]
    assert nested["metadata"]["tool_result"] == {"query": "bugs for 1.2", "open": 0}
    assert handoff["metadata"]["args"] == {"from": "Triage", "to": WRITER}
    assert written["metadata"]["parent_tool_call_id"] == handoff["metadata"]["tool_call_id"]
    for top in (failed, retried, slow, research, handoff):
        assert "parent_tool_call_id" not in top["metadata"]

    # S4: the run's tokens are the SDK's usage, the researcher's responses included.
    steps = [m for m in messages if m["role"] == "assistant"]
    assert sum(m["metadata"].get("tokens", 0) for m in steps) == 7 * RESPONSE_TOKENS
    assert result.context_wrapper.usage.total_tokens == 7 * RESPONSE_TOKENS


def test_sdk_text_streams_as_deltas_before_the_step_completes(chatui_server):
    conversation_id = chatui_server.new_conversation("agents sdk deltas")
    asyncio.run(stream_release_check(chatui_server, conversation_id))
    with chatui_server.api() as api:
        events = api.get(f"/conversations/{conversation_id}/events").json()["events"]
    answer = [
        e
        for e in events
        if e["payload"].get("message_id") == events[-2]["payload"].get("message_id")
    ]
    kinds = [e["type"] for e in answer]
    assert kinds.count("agent.message.delta") == -(-len(ANSWER) // 12)  # one per chunk
    assert kinds[-1] == "agent.step.completed"
    assert "".join(e["payload"]["delta"] for e in answer[:-1]) == ANSWER


def looping_agent() -> Agent:
    """An agent whose model calls a tool every turn: the run exceeds its turns."""
    model = ScriptModel(
        [[Say("Looking."), Call(NOTES_TOOL, {"path": "a"}, f"l{n}")] for n in range(3)]
    )
    check = release_check()
    read_file = next(t for t in check.triage.tools if t.name == NOTES_TOOL)
    return Agent(name="Looper", model=model, tools=[read_file])


def test_s2_sdk_run_that_raises_is_failed_with_the_sdks_reason(chatui_server):
    conversation_id = chatui_server.new_conversation("agents sdk failure")

    async def run() -> None:
        async with AsyncChatuiClient(chatui_server.url, chatui_server.token) as chatui:
            result = Runner.run_streamed(looping_agent(), "loop", max_turns=1)
            await stream_to_chatui(chatui, conversation_id, result)

    with pytest.raises(MaxTurnsExceeded):
        asyncio.run(run())
    body = transcript(chatui_server, conversation_id)
    assert body["conversation"]["status"] == "failed"
    errors = [m for m in body["messages"] if m.get("metadata", {}).get("status_type") == "error"]
    assert [m["content"] for m in errors] == ["MaxTurnsExceeded: Max turns (1) exceeded"]
    # What ran before the failure stays, finished.
    assert tool(body["messages"], NOTES_TOOL)["metadata"]["tool_status"] == "success"
    assert shown(body["messages"])[1]["content"] == "Looking."


def test_rel2_unreachable_chatui_never_stops_the_run_and_returns_every_event_unsent(
    chatui_server,
):
    """The sync client works too (it posts from a thread). When chatui cannot be reached
    the agent's run still completes; the error comes after, holding every event with its
    event_id, and posting those later gives the transcript a live run gives."""
    nowhere = f"http://127.0.0.1:{free_port()}"
    quick = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, total=2)
    started = []

    async def run() -> None:
        started.append(release_check(answer_delay=0.0).run())
        with ChatuiClient(nowhere, "token", retry=quick) as chatui:
            await stream_to_chatui(chatui, "any", started[0])

    with pytest.raises(ChatuiUnavailable) as raised:
        asyncio.run(run())
    (result,) = started
    assert result.is_complete and result.final_output == ANSWER
    unsent = raised.value.events
    assert [e["type"] for e in unsent[:2]] == ["user.message", "agent.status"]
    assert unsent[-1] == {**unsent[-1], "type": "agent.status", "status": "completed"}
    assert len({e["event_id"] for e in unsent}) == len(unsent)

    conversation_id = chatui_server.new_conversation("agents sdk later")
    with ChatuiClient(chatui_server.url, chatui_server.token) as chatui:
        chatui.post_events(conversation_id, unsent)
        again = chatui.post_events(conversation_id, unsent)
    assert again.accepted == 0 and again.duplicates == len(unsent)
    body = transcript(chatui_server, conversation_id)
    assert body["conversation"]["status"] == "completed"
    assert tool(body["messages"], "check_disk")["metadata"]["tool_status"] == "error"
    assert shown(body["messages"])[-1]["content"] == ANSWER


def test_tracing_disabled_run_still_streams_its_text(chatui_server, caplog):
    conversation_id = chatui_server.new_conversation("agents sdk untraced")
    agent = Agent(name="Plain", model=ScriptModel([[Say("Just **text**.")]]))

    async def run() -> None:
        async with AsyncChatuiClient(chatui_server.url, chatui_server.token) as chatui:
            result = Runner.run_streamed(agent, "hi", run_config=RunConfig(tracing_disabled=True))
            await stream_to_chatui(chatui, conversation_id, result, user_message="Hello?")

    asyncio.run(run())
    assert "tracing is disabled" in caplog.text
    body = transcript(chatui_server, conversation_id)
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("user", "Hello?"),
        ("assistant", "Just **text**."),
    ]
    assert body["messages"][1]["metadata"]["tokens"] == RESPONSE_TOKENS


def test_relay_yields_the_sdks_own_events_as_they_pass(chatui_server):
    conversation_id = chatui_server.new_conversation("agents sdk relay")

    async def run() -> list[str]:
        seen = []
        async with AsyncChatuiClient(chatui_server.url, chatui_server.token) as chatui:
            result = release_check(answer_delay=0.0).run()
            async for event in relay(chatui, conversation_id, result):
                seen.append(event.type)
        return seen

    seen = asyncio.run(run())
    assert {"raw_response_event", "run_item_stream_event", "agent_updated_stream_event"} <= set(
        seen
    )
    assert transcript(chatui_server, conversation_id)["conversation"]["status"] == "completed"


def test_the_client_imports_without_the_extra():
    """`openai-agents` is an extra: the client itself never imports it."""
    code = (
        "import json, sys, chatui_client\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('agents', 'openai')]\n"
        "print(json.dumps(loaded))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_a_result_chatui_refuses_becomes_an_error_entry_and_the_rest_arrives(chatui_server):
    """A tool's result over chatui's 1 MiB event limit is refused (413, naming the
    event): that entry ends as an error saying so, every other event is stored."""
    conversation_id = chatui_server.new_conversation("agents sdk refused")

    @function_tool
    def dump_table() -> str:
        """Dump the whole table."""
        return "row\n" * 400_000

    model = ScriptModel([[Call("dump_table", {}, "d1")], [Say("The table is **large**.")]])
    agent = Agent(name="Dumper", model=model, tools=[dump_table])

    async def run() -> None:
        async with AsyncChatuiClient(chatui_server.url, chatui_server.token) as chatui:
            await stream_to_chatui(chatui, conversation_id, Runner.run_streamed(agent, "dump"))

    asyncio.run(run())
    body = transcript(chatui_server, conversation_id)
    assert body["conversation"]["status"] == "completed"
    refused = tool(body["messages"], "dump_table")
    assert refused["metadata"]["tool_status"] == "error"
    assert refused["content"].startswith("chatui refused this result: event is larger than")
    assert shown(body["messages"])[-1]["content"] == "The table is **large**."
