"""docs/events.md#ag-ui: the README's "tee your stream" lines, run as written against a real
daphne server, with a real Pydantic AI agent (its `FunctionModel`) streaming AG-UI through
its own adapter: what the agent's front end gets is unchanged, and chatui shows the run."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
from ag_ui.core import RunAgentInput
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_tee():
    """The `tee` function exactly as the README shows it."""
    section = README.read_text().split("**Tee your stream.**", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace = {"httpx": httpx}
    exec(compile(code, "README.md", "exec"), namespace)
    return namespace["tee"]


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if not any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[ToolCallPart("read_file", {"path": "a.txt"}, "call_a")])
    return ModelResponse(parts=[TextPart("The file says **hello**.")])


async def streamed(messages: list[ModelMessage], info: AgentInfo):
    if not any(isinstance(m, ModelResponse) for m in messages):
        yield {0: DeltaToolCall(name="read_file", tool_call_id="call_a")}
        yield {0: DeltaToolCall(json_args='{"path": "a.txt"}')}
        return
    for piece in ("The file says ", "**hello**."):
        yield piece


def agent() -> Agent:
    built = Agent(FunctionModel(scripted, stream_function=streamed, model_name="scripted"))

    @built.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return "hello"

    return built


def test_readme_tee_sends_chatui_a_copy_of_a_pydantic_ai_stream(chatui_server):
    tee = readme_tee()
    conversation_id = chatui_server.new_conversation("teed")
    conversation_url = f"{chatui_server.url}/api/v1/conversations/{conversation_id}"
    run_input = RunAgentInput(
        thread_id="thread-tee",
        run_id="run-tee",
        messages=[{"id": "u1", "role": "user", "content": "What does a.txt say?"}],
        tools=[],
        context=[],
        state={},
        forwarded_props={},
    )

    async def front_end() -> list:
        adapter = AGUIAdapter(agent=agent(), run_input=run_input)
        return [e async for e in tee(adapter.run_stream(), conversation_url, chatui_server.token)]

    seen = asyncio.run(front_end())
    assert (seen[0].type.value, seen[-1].type.value) == ("RUN_STARTED", "RUN_FINISHED")
    with chatui_server.api() as api:
        shown = api.get(f"/conversations/{conversation_id}").json()
    tools = [m for m in shown["messages"] if m["role"] == "tool"]
    answers = [m for m in shown["messages"] if m["role"] == "assistant"]
    assert [(t["metadata"]["tool_status"], t["content"]) for t in tools] == [("success", "hello")]
    assert tools[0]["metadata"]["args"] == {"path": "a.txt"}
    assert [a["content"] for a in answers] == ["The file says **hello**."]
    assert shown["conversation"]["status"] == "completed"
