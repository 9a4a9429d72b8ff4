"""Why the Agents SDK extra reads the SDK's traces (docs/runtimes.md#openai-agents-sdk): what
each of the SDK's three hooks reports about one run, offline. Should an SDK release make
its streamed events or run hooks report failures, or reach an agent used as a tool,
these fail, and the choice is worth making again."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agents import Agent, RunHooks, Runner, function_tool
from agents.tracing import FunctionSpanData, TracingProcessor, add_trace_processor

from tests.support.agents_sdk import Call, Say, ScriptModel, only_chatui_tracing


class Spans(TracingProcessor):
    def __init__(self) -> None:
        self.ended: dict[str, tuple[float, Any]] = {}  # tool → (when, error)

    def on_span_end(self, span: Any) -> None:
        if isinstance(span.span_data, FunctionSpanData):
            self.ended[span.span_data.name] = (time.monotonic(), span.error)

    def on_span_start(self, span: Any) -> None:
        pass

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


class Hooks(RunHooks):
    def __init__(self) -> None:
        self.started: list[str] = []
        self.ended: dict[str, Any] = {}

    async def on_tool_start(self, context, agent, tool) -> None:
        self.started.append(tool.name)

    async def on_tool_end(self, context, agent, tool, result) -> None:
        self.ended[tool.name] = result


def test_only_the_traces_report_a_failed_tool_live_and_the_sub_agents_tools():
    only_chatui_tracing()
    spans = Spans()
    add_trace_processor(spans)

    @function_tool
    async def broken() -> str:
        """Fails."""
        raise RuntimeError("boom")

    @function_tool
    async def slow() -> str:
        """Takes a while."""
        await asyncio.sleep(0.3)
        return "done"

    @function_tool
    def lookup() -> str:
        """The sub-agent's tool."""
        return "found"

    helper = Agent(
        name="Helper", model=ScriptModel([[Call("lookup", {}, "h1")], [Say("ok")]]), tools=[lookup]
    )
    agent = Agent(
        name="Main",
        model=ScriptModel(
            [
                [
                    Call("broken", {}, "c1"),
                    Call("slow", {}, "c2"),
                    Call("helper", {"input": "x"}, "c3"),
                ],
                [Say("end")],
            ]
        ),
        tools=[broken, slow, helper.as_tool("helper", "A helper.")],
    )
    hooks = Hooks()

    async def run() -> list[tuple[float, Any]]:
        outputs = []
        result = Runner.run_streamed(agent, "go", hooks=hooks)
        async for event in result.stream_events():
            if getattr(event, "name", "") == "tool_output":
                outputs.append((time.monotonic(), event.item))
        return outputs

    try:
        outputs = asyncio.run(run())
    finally:
        only_chatui_tracing()  # this test's processor no longer hears other runs

    # The streamed events: the turn's outputs arrive together, after the slowest tool;
    # the failed tool's is an output like any other; the sub-agent's tool is not there.
    arrived = {item.raw_item["call_id"]: (when, item) for when, item in outputs}
    assert set(arrived) == {"c1", "c2", "c3"}
    broken_output_at, broken_item = arrived["c1"]
    assert broken_output_at >= spans.ended["slow"][0]
    assert broken_item.type == "tool_call_output_item"
    assert broken_item.output == "An error occurred while running the tool. Please try again."
    # The run hooks: the failure is a result like any other, and the sub-agent's tool
    # runs without them.
    assert hooks.ended["broken"] == broken_item.output
    assert "lookup" not in hooks.started and "lookup" not in hooks.ended
    # The traces: the failure is an error, at the tool's own end; the sub-agent's tool is seen.
    assert spans.ended["broken"][1] is not None
    assert spans.ended["broken"][0] < spans.ended["slow"][0]
    assert spans.ended["slow"][1] is None
    assert "lookup" in spans.ended
