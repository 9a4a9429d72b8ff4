"""Real OTLP producers for the receiver's tests: Pydantic AI's own instrumentation and
OpenInference's LangChain instrumentor, each exporting through OpenTelemetry's stock
OTLP/HTTP exporter to a running chatui. Offline: the models are scripted
(Pydantic AI's FunctionModel, langchain-core's GenericFakeChatModel).

The scenario, in both: read_file, then run_cmd which fails, then run_cmd again and
fetch, then a Markdown answer.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

PROMPT = "Check the README, run the tests and fetch the build status."
README = "# demo-service\n\nmake test\n"
CMD_ERROR = "make: *** [Makefile:12: test] Error 2"
CMD_OUTPUT = "12 passed in 0.41s"
STATUS = {"status": "green", "build": 1423}
ANSWER = "## Result\n\n- tests **pass** after one retry\n"


@contextmanager
def exporting_to(server_url: str, token: str, *, gzip: bool = False) -> Iterator[TracerProvider]:
    """A tracer provider whose spans go, by the real exporter, to chatui's receiver."""
    exporter = OTLPSpanExporter(
        endpoint=f"{server_url}/api/v1/otlp/v1/traces",
        headers={"Authorization": f"Bearer {token}"},
        compression=Compression.Gzip if gzip else Compression.NoCompression,
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "chatui-test-agent"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=512))
    try:
        yield provider
    finally:
        provider.force_flush()
        provider.shutdown()


def run_pydantic_ai(provider: TracerProvider, *, version: int | None = None) -> str:
    """The scenario through Pydantic AI, instrumented (`version`: its data format)."""
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    script = [
        [("read_file", {"path": "README.md"}, "call_read")],
        [("run_cmd", {"command": "make test"}, "call_cmd_1")],
        [("run_cmd", {"command": "make test"}, "call_cmd_2"), ("fetch", {"url": "ci"}, "call_f")],
    ]

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn < len(script):
            calls = script[turn]
            return ModelResponse(parts=[ToolCallPart(n, a, tool_call_id=i) for n, a, i in calls])
        return ModelResponse(parts=[TextPart(ANSWER)])

    settings = {"tracer_provider": provider}
    if version is not None:
        settings["version"] = version
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # versions 2–4 are deprecated, and say so
        instrumentation = InstrumentationSettings(**settings)
    agent = Agent(FunctionModel(model, model_name="scripted"))
    failed = []

    @agent.tool_plain
    def read_file(path: str) -> str:
        return README

    @agent.tool_plain
    def run_cmd(command: str) -> str:
        if not failed:
            failed.append(command)
            raise ModelRetry(CMD_ERROR)
        return CMD_OUTPUT

    @agent.tool_plain
    def fetch(url: str) -> dict:
        return STATUS

    # This Pydantic AI takes its instrumentation only process-wide (`Agent(instrument=…)`
    # is gone): on for this run, off again after.
    Agent.instrument_all(instrumentation)
    try:
        return agent.run_sync(PROMPT).output
    finally:
        Agent.instrument_all(False)


def run_langchain(provider: TracerProvider, session_id: str) -> str:
    """The scenario as a LangChain tool loop, traced by OpenInference's instrumentor."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import tool
    from openinference.instrumentation import using_session
    from openinference.instrumentation.langchain import LangChainInstrumentor

    @tool
    def read_file(path: str) -> str:
        """Read a text file."""
        return README

    attempts = []

    @tool
    def run_cmd(command: str) -> str:
        """Run a shell command."""
        if not attempts:
            attempts.append(command)
            raise RuntimeError(CMD_ERROR)
        return CMD_OUTPUT

    @tool
    def fetch(url: str) -> dict:
        """Fetch a URL's JSON."""
        return STATUS

    tools = {t.name: t for t in (read_file, run_cmd, fetch)}

    def call(name: str, args: dict, call_id: str) -> dict:
        return {"name": name, "args": args, "id": call_id, "type": "tool_call"}

    replies = iter(
        [
            AIMessage("", tool_calls=[call("read_file", {"path": "README.md"}, "lc_read")]),
            AIMessage("", tool_calls=[call("run_cmd", {"command": "make test"}, "lc_cmd_1")]),
            AIMessage(
                "",
                tool_calls=[
                    call("run_cmd", {"command": "make test"}, "lc_cmd_2"),
                    call("fetch", {"url": "ci"}, "lc_fetch"),
                ],
            ),
            AIMessage(ANSWER),
        ]
    )
    model = GenericFakeChatModel(messages=replies)

    def agent_loop(prompt: str) -> str:
        messages = [HumanMessage(prompt)]
        while True:
            reply = model.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return reply.content
            for tool_call in reply.tool_calls:
                try:
                    messages.append(tools[tool_call["name"]].invoke(tool_call))
                except RuntimeError as problem:
                    from langchain_core.messages import ToolMessage

                    messages.append(ToolMessage(str(problem), tool_call_id=tool_call["id"]))

    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with using_session(session_id):
            return RunnableLambda(agent_loop).with_config(run_name="agent").invoke(PROMPT)
    finally:
        instrumentor.uninstrument()
