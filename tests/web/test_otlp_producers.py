"""Real producers into a running chatui (docs/events.md#otlp): Pydantic AI's own
instrumentation, in its current and older data formats, and OpenInference's LangChain
instrumentor, each exporting through OpenTelemetry's stock OTLP/HTTP exporter to a real
daphne. Offline: the models are scripted (tests/support/otlp_agents.py)."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.support import otlp_agents
from tests.support.otlp_agents import CMD_ERROR, PROMPT, exporting_to

PROTOBUF = "application/x-protobuf"


def _conversations(server) -> dict[str, dict]:
    answer = httpx.get(
        f"{server.url}/api/v1/conversations",
        headers={"Authorization": f"Bearer {server.token}"},
    )
    return {c["id"]: c for c in answer.json()["conversations"]}


def _messages(server, conversation_id: str) -> list[dict]:
    answer = httpx.get(
        f"{server.url}/api/v1/conversations/{conversation_id}",
        headers={"Authorization": f"Bearer {server.token}"},
    )
    messages = answer.json()["messages"]
    for message in messages:  # a tool's columns are mirrored in its metadata
        message.update(
            {k: v for k, v in message.get("metadata", {}).items() if k.startswith("tool_")}
        )
    return messages


def _new_conversation(server, before: dict[str, dict]) -> dict:
    after = _conversations(server)
    new = [c for cid, c in after.items() if cid not in before]
    assert len(new) == 1, new
    return new[0]


def _assert_scenario(messages: list[dict], *, failed_call_named: bool = True) -> None:
    users = [m for m in messages if m["role"] == "user"]
    assert [m["content"] for m in users] == [PROMPT]  # once, however many calls repeat it
    tools = [m for m in messages if m["role"] == "tool"]
    assert [t["tool_name"] for t in tools] == ["read_file", "run_cmd", "run_cmd", "fetch"]
    assert [t["tool_status"] for t in tools] == ["success", "error", "success", "success"]
    assert CMD_ERROR in tools[1]["content"]
    assert "# demo-service" in tools[0]["content"]
    assert '"green"' in tools[3]["content"] or "green" in tools[3]["content"]
    answers = [m for m in messages if m["role"] == "assistant" and m["content"]]
    assert answers[-1]["content"].startswith("## Result")
    # The answer comes after every tool: ordered by the spans' start times.
    assert messages.index(answers[-1]) > messages.index(tools[-1])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("version", [None, 2, 6])
def test_pydantic_ai_instrumentation_exports_a_readable_transcript(chatui_server, version):
    """The default data format, the oldest it still offers (`running tool` spans with
    `tool_arguments`/`tool_response`) and the newest (tool results in `tool` messages)."""
    before = _conversations(chatui_server)
    with exporting_to(chatui_server.url, chatui_server.token, gzip=version == 6) as provider:
        output = otlp_agents.run_pydantic_ai(provider, version=version)
    assert output.startswith("## Result")
    conversation = _new_conversation(chatui_server, before)
    assert conversation["title"] == PROMPT
    assert conversation["status"] == "completed"  # the root span ended the run
    messages = _messages(chatui_server, conversation["id"])
    _assert_scenario(messages)
    tokens = [m["metadata"].get("tokens") for m in messages if m["role"] == "assistant"]
    assert all(isinstance(t, int) and t > 0 for t in tokens)


@pytest.mark.timeout(120)
def test_openinference_langchain_run_becomes_the_same_transcript(chatui_server):
    before = _conversations(chatui_server)
    session = f"lc-{uuid.uuid4().hex[:8]}"
    with exporting_to(chatui_server.url, chatui_server.token) as provider:
        otlp_agents.run_langchain(provider, session)
    conversation = _new_conversation(chatui_server, before)
    assert conversation["title"] == PROMPT
    messages = _messages(chatui_server, conversation["id"])
    _assert_scenario(messages)
    tools = [m for m in messages if m["role"] == "tool"]
    # The model's calls were claimed by the tool spans: no call is left queued.
    ids = [t["tool_call_id"].split("@")[0] for t in tools]
    assert ids == ["lc_read", "lc_cmd_1", "lc_cmd_2", "lc_fetch"]


@pytest.mark.timeout(120)
def test_the_same_session_again_adds_a_run_to_its_conversation(chatui_server):
    session = f"lc-{uuid.uuid4().hex[:8]}"
    before = _conversations(chatui_server)
    with exporting_to(chatui_server.url, chatui_server.token) as provider:
        otlp_agents.run_langchain(provider, session)
    conversation = _new_conversation(chatui_server, before)
    with exporting_to(chatui_server.url, chatui_server.token) as provider:
        otlp_agents.run_langchain(provider, session)
    assert _conversations(chatui_server).keys() == {*before, conversation["id"]}
    messages = _messages(chatui_server, conversation["id"])
    assert len([m for m in messages if m["role"] == "tool"]) == 8
    events = httpx.get(
        f"{chatui_server.url}/api/v1/conversations/{conversation['id']}/events",
        headers={"Authorization": f"Bearer {chatui_server.token}"},
    ).json()["events"]
    assert {e["type"] for e in events} == {"otel.span"}  # each span kept as received
    assert len({e["run_id"] for e in events}) == 2  # a trace is a run


def test_the_edge_refuses_an_export_with_an_otlp_status(chatui_server):
    """Refused before its body is read (no token; a body past the limit): the answer is
    a google.rpc.Status in the request's encoding all the same."""
    from google.rpc.status_pb2 import Status

    url = f"{chatui_server.url}/api/v1/otlp/v1/traces"
    answer = httpx.post(url, content=b"\x0a\x00", headers={"Content-Type": PROTOBUF})
    assert answer.status_code == 401
    assert answer.headers["content-type"] == PROTOBUF
    status = Status()
    status.ParseFromString(answer.content)
    assert (status.code, status.message) == (16, "missing or invalid bearer token")
    answer = httpx.post(url, content=b"{}", headers={"Content-Type": "application/json"})
    assert answer.status_code == 401 and answer.json()["code"] == 16
    huge = b"x" * (8 * 1024 * 1024 + 1)
    headers = {"Content-Type": PROTOBUF, "Authorization": f"Bearer {chatui_server.token}"}
    answer = httpx.post(url, content=huge, headers=headers)
    assert answer.status_code == 413
    status.ParseFromString(answer.content)
    assert status.code == 8 and "larger than" in status.message
