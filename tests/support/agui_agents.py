"""Real AG-UI agents, offline, served by uvicorn: what `CHATUI_AGENT=agui` talks to in
tests and in bench/p7_agui.py.

Each framework drives the same scenario with its own test model:

    read_file(path="README.md")        -> a short text
    run_cmd(command="make test")       -> fails the first time (the framework's own
                                          way of reporting it) ...
    run_cmd(command="make test")       -> ... and passes when the model calls it again,
    slow_status()                      -> beside it, takes TOOL_SECONDS (~1 s)
    a Markdown answer, streamed in several deltas

- Pydantic AI (`pydantic-ai-slim[ag-ui]`): an `Agent` on a `FunctionModel`, served by
  its `AGUIAdapter` at /pydantic; the same agent with a tool that needs approval
  (`requires_approval=True`) at /pydantic-approval.
- LangGraph (`ag-ui-langgraph`): a graph with an agent node (langchain-core's
  `GenericFakeChatModel`, taught to stream its tool calls) and langgraph's `ToolNode`,
  at /langgraph.
- /instant: a Pydantic AI agent whose every run calls one tool at once and answers;
  the benchmark's agent (no sleeps, so the latency measured is chatui's).

Every tool call gets a fresh id, so runs in one conversation never share ids. `ByThread`
lets one chatui server talk to all of them (a conversation's runs go to the agent its
test registered), and a few small agents misbehave on purpose (`MISBEHAVING_ROUTES`).

Why it is long: two frameworks' agents, each scripted with its own test model, and the
agents that fail in each way a run can fail, are served together so every test module
and the benchmark start one server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic_ai import Agent, DeferredToolRequests, ModelRetry, RunContext
from pydantic_ai.messages import ModelRequest, ModelResponse, UserPromptPart
from pydantic_ai.models.function import DeltaToolCall, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Mount, Route

TOOL_SECONDS = 1.0
README = "# demo-service\n\nA tiny service.\n\n    make test\n"
CMD_ERROR = "make: *** [Makefile:12: test] Error 2 (exit code 2): 1 failed, 11 passed"
CMD_OUTPUT = "12 passed in 0.41s"
STATUS = {"status": "green", "build": 1423}
ANSWER_CHUNKS = [
    "## Result\n\n",
    "- **README**: read\n",
    "- **Tests**: `make test` failed once, ",
    "then passed (12 passed)\n",
    "- **CI**: build 1423 is **green**.\n",
]
ANSWER = "".join(ANSWER_CHUNKS)
#: When each slow_status call returned (time.time()): a page can tell it showed the
#: card while the tool still worked.
SLOW_TOOL_ENDS: list[float] = []
#: What the approval agent's guarded tool does once approved.
DEPLOYED = "deployed build 1423"


def new_call_id(name: str) -> str:
    return f"call_{name}_{uuid.uuid4().hex[:10]}"


# -- Pydantic AI ------------------------------------------------------------------------

#: turn -> the calls the model makes in it (name, args); after the last, it answers.
PYDANTIC_SCRIPT: list[list[tuple[str, dict]]] = [
    [("read_file", {"path": "README.md"})],
    [("run_cmd", {"command": "make test"})],
    [("run_cmd", {"command": "make test"}), ("slow_status", {})],
]


def _turn_of_this_prompt(messages: list) -> int:
    """Model responses since the latest user prompt: where in the script this run is."""

    turn = 0
    for message in messages:
        if isinstance(message, ModelRequest) and any(
            isinstance(part, UserPromptPart) for part in message.parts
        ):
            turn = 0
        elif isinstance(message, ModelResponse):
            turn += 1
    return turn


def _scripted_stream(script: list[list[tuple[str, dict]]], chunks: list[str]):

    async def stream(messages: list, info: Any) -> AsyncIterator[Any]:
        turn = _turn_of_this_prompt(messages)
        if turn < len(script):
            # One call after the other, each's JSON arguments in two pieces (as OpenAI
            # and Anthropic stream parallel calls).
            for index, (name, args) in enumerate(script[turn]):
                text = json.dumps(args)
                half = len(text) // 2
                yield {index: DeltaToolCall(name=name, tool_call_id=new_call_id(name))}
                yield {index: DeltaToolCall(json_args=text[:half])}
                yield {index: DeltaToolCall(json_args=text[half:])}
            return
        for chunk in chunks:
            yield chunk

    return stream


def _unused_model_function(messages: list, info: Any) -> Any:
    raise AssertionError("the AG-UI adapter streams: only the stream function is used")


def pydantic_agent() -> Any:

    agent = Agent(
        FunctionModel(
            _unused_model_function,
            stream_function=_scripted_stream(PYDANTIC_SCRIPT, ANSWER_CHUNKS),
            model_name="scripted-model",
        ),
        name="chatui_test_agent",
        retries=2,
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a text file."""
        return README

    @agent.tool
    def run_cmd(ctx: RunContext[None], command: str) -> str:
        """Run a shell command: fails on its first try in a run, as flaky tests do."""
        if ctx.retry == 0:
            raise ModelRetry(CMD_ERROR)
        return CMD_OUTPUT

    @agent.tool_plain
    async def slow_status() -> dict:
        """The build status, from a slow service."""
        await asyncio.sleep(TOOL_SECONDS)
        SLOW_TOOL_ENDS.append(time.time())
        return STATUS

    return agent


APPROVAL_SCRIPT: list[list[tuple[str, dict]]] = [[("deploy", {"build": 1423})]]


def pydantic_approval_agent() -> Any:
    """Calls `deploy`, which needs a person's approval (an AG-UI interrupt), then
    answers with what the tool said."""

    agent = Agent(
        FunctionModel(
            _unused_model_function,
            stream_function=_scripted_stream(APPROVAL_SCRIPT, ["Done: ", "deployment handled."]),
            model_name="scripted-model",
        ),
        name="chatui_approval_agent",
        output_type=[str, DeferredToolRequests],
    )

    @agent.tool_plain(requires_approval=True)
    def deploy(build: int) -> str:
        """Deploy a build (asks a person first)."""
        return DEPLOYED

    return agent


INSTANT_SCRIPT: list[list[tuple[str, dict]]] = [[("read_file", {"path": "README.md"})]]


def pydantic_instant_agent() -> Any:

    agent = Agent(
        FunctionModel(
            _unused_model_function,
            stream_function=_scripted_stream(INSTANT_SCRIPT, ["Read ", "it."]),
            model_name="scripted-model",
        ),
        name="chatui_instant_agent",
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a text file."""
        return README

    return agent


def _adapter_route(agent: Any) -> Any:

    async def endpoint(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    return endpoint


# -- LangGraph --------------------------------------------------------------------------


def langgraph_app() -> Any:
    """A FastAPI app serving the LangGraph agent at its root (`ag-ui-langgraph`)."""

    class StreamingToolsFakeModel(GenericFakeChatModel):
        """langchain-core's fake model streams text only; real providers stream tool
        calls as `tool_call_chunks`, and this one does too (what ag-ui-langgraph reads)."""

        def _stream(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
            message = (
                self._generate(messages, stop=stop, run_manager=run_manager).generations[0].message
            )
            if not message.tool_calls:
                for piece in re.split(r"(?<=\n)", str(message.content)):
                    if piece:
                        chunk = ChatGenerationChunk(
                            message=AIMessageChunk(content=piece, id=message.id)
                        )
                        if run_manager:
                            run_manager.on_llm_new_token(piece, chunk=chunk)
                        yield chunk
                return
            for index, call in enumerate(message.tool_calls):
                text = json.dumps(call["args"])
                half = len(text) // 2
                for piece, first in ((text[:half], True), (text[half:], False)):
                    chunk = ChatGenerationChunk(
                        message=AIMessageChunk(
                            content="",
                            id=message.id,
                            tool_call_chunks=[
                                {
                                    "name": call["name"] if first else None,
                                    "args": piece,
                                    "id": call["id"] if first else None,
                                    "index": index,
                                }
                            ],
                        )
                    )
                    if run_manager:
                        run_manager.on_llm_new_token("", chunk=chunk)
                    yield chunk

    failures: dict[str, int] = {}

    @tool
    def read_file(path: str) -> str:
        """Read a text file."""
        return README

    @tool
    async def slow_status() -> dict:
        """The build status, from a slow service."""
        await asyncio.sleep(TOOL_SECONDS)
        SLOW_TOOL_ENDS.append(time.time())
        return STATUS

    def script_for(messages: list) -> AIMessage:
        """The model: the turn is the number of AI messages since the last human one."""
        turn = 0
        for message in messages:
            if isinstance(message, HumanMessage):
                turn = 0
            elif isinstance(message, AIMessage):
                turn += 1
        calls = PYDANTIC_SCRIPT[turn] if turn < len(PYDANTIC_SCRIPT) else None
        if calls is None:
            return AIMessage(content=ANSWER, id=f"msg_{uuid.uuid4().hex[:10]}")
        return AIMessage(
            content="",
            id=f"msg_{uuid.uuid4().hex[:10]}",
            tool_calls=[
                {"name": name, "args": args, "id": new_call_id(name), "type": "tool_call"}
                for name, args in calls
            ],
        )

    class ScriptedModel(StreamingToolsFakeModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
            return ChatResult(generations=[ChatGeneration(message=script_for(messages))])

    model = ScriptedModel(messages=iter(()))

    async def agent_node(state: MessagesState, config: RunnableConfig) -> dict:
        message = None
        async for chunk in model.astream(state["messages"], config):
            message = chunk if message is None else message + chunk
        return {"messages": [_as_message(message)]}

    def _as_message(chunk: Any) -> AIMessage:
        return AIMessage(content=chunk.content, id=chunk.id, tool_calls=chunk.tool_calls)

    async def run_cmd_flaky(command: str, thread: str) -> str:
        failures[thread] = failures.get(thread, 0) + 1
        if failures[thread] % 2 == 1:
            raise RuntimeError(CMD_ERROR)
        return CMD_OUTPUT

    # run_cmd needs its thread to know its first try: a tool with the config injected.
    @tool("run_cmd")
    async def run_cmd_in_thread(command: str, config: RunnableConfig) -> str:
        """Run a shell command: fails on its first try in a run, as flaky tests do."""
        thread = str((config.get("configurable") or {}).get("thread_id", ""))
        return await run_cmd_flaky(command, thread)

    tools = [read_file, run_cmd_in_thread, slow_status]
    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent_node)
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges(
        "agent", lambda state: "tools" if state["messages"][-1].tool_calls else END
    )
    graph.add_edge("tools", "agent")
    compiled = graph.compile(checkpointer=MemorySaver())

    app = FastAPI()
    add_langgraph_fastapi_endpoint(
        app, LangGraphAgent(name="chatui_test_graph", graph=compiled), "/"
    )
    return app


# -- serving ----------------------------------------------------------------------------


#: threadId -> the path of the agent that conversation talks to (`ByThread`).
THREAD_ROUTES: dict[str, str] = {}


class ByThread:
    """ASGI: `POST /by-thread` goes to the agent registered for the RunAgentInput's
    `threadId` (the conversation), so one chatui server can talk to every test agent."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/by-thread":
            return await self.app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        path = THREAD_ROUTES.get(json.loads(body).get("threadId"), "/unregistered")
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # then the client's disconnect, when it goes

        await self.app({**scope, "path": path, "raw_path": path.encode()}, replay, send)


def agents_app() -> Any:
    return ByThread(_routes())


def _routes() -> Starlette:
    return Starlette(
        routes=[
            Route("/pydantic", _adapter_route(pydantic_agent()), methods=["POST"]),
            Route(
                "/pydantic-approval", _adapter_route(pydantic_approval_agent()), methods=["POST"]
            ),
            Route("/instant", _adapter_route(pydantic_instant_agent()), methods=["POST"]),
            Mount("/langgraph", app=langgraph_app()),
            *MISBEHAVING_ROUTES,
        ]
    )


@dataclass
class AgentServer:
    base_url: str

    def url(self, path: str) -> str:
        return self.base_url + path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serve_agents(app: Any = None) -> Iterator[AgentServer]:
    """The agents under a real uvicorn, on a free port, in a thread of this process."""
    port = free_port()
    config = uvicorn.Config(
        app or agents_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="agui-agents", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the AG-UI test agents did not start")
        time.sleep(0.02)
    try:
        yield AgentServer(f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(timeout=10)


# -- agents that misbehave, and one that records what it was sent --------------------------


@dataclass
class Recorder:
    """What /echo, /endless and /secret saw: request bodies and headers, and whether the
    client went away mid-stream."""

    bodies: list = field(default_factory=list)
    headers: list = field(default_factory=list)
    client_left: threading.Event = field(default_factory=threading.Event)
    streaming: threading.Event = field(default_factory=threading.Event)


RECORDER = Recorder()
SECRET = "hdr-secret-4242"


def sse(*events: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)


def _run_events(body: dict) -> tuple[dict, dict]:
    started = {"type": "RUN_STARTED", "threadId": body["threadId"], "runId": body["runId"]}
    finished = {"type": "RUN_FINISHED", "threadId": body["threadId"], "runId": body["runId"]}
    return started, finished


async def _echo(request: Request) -> Response:
    body = await request.json()
    RECORDER.bodies.append(body)
    RECORDER.headers.append(dict(request.headers))
    started, finished = _run_events(body)
    return Response(sse(started, finished), media_type="text/event-stream")


async def _refuse(request: Request) -> Response:
    return Response(
        f"upstream says no; your key was {SECRET}\n" + "x" * 5000,
        status_code=503,
        media_type="text/plain",
    )


async def _html(request: Request) -> Response:
    return Response("<html>login first</html>", media_type="text/html")


async def _proto(request: Request) -> Response:
    return Response(b"\x0a\x02\x08\x01", media_type="application/vnd.ag-ui.event+proto")


def _tool_start(call_id: str) -> dict:
    return {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": "run_cmd"}


async def _broken(request: Request) -> Response:
    """Starts a tool, then the connection drops (the server process died, say)."""
    body = await request.json()
    started, _ = _run_events(body)

    async def stream() -> AsyncIterator[bytes]:
        yield sse(started, _tool_start(f"{body['runId']}-t1"))
        await asyncio.sleep(0.05)
        raise ConnectionResetError("agent process died")

    return StreamingResponse(stream(), media_type="text/event-stream")


async def _ends_early(request: Request) -> Response:
    """Closes its stream cleanly without finishing its run."""
    body = await request.json()
    started, _ = _run_events(body)
    return Response(
        sse(started, _tool_start(f"{body['runId']}-t1")), media_type="text/event-stream"
    )


async def _endless(request: Request) -> Response:
    """Starts a tool and works on it for ever, noting when its client goes away."""
    body = await request.json()
    started, _ = _run_events(body)

    async def stream() -> AsyncIterator[bytes]:
        try:
            yield sse(started, _tool_start(f"{body['runId']}-t1"))
            RECORDER.streaming.set()
            while True:
                await asyncio.sleep(0.05)
                yield b": still working\n\n"
        finally:
            RECORDER.client_left.set()

    return StreamingResponse(stream(), media_type="text/event-stream")


async def _not_json(request: Request) -> Response:
    body = await request.json()
    started, _ = _run_events(body)
    return Response(sse(started) + b"data: <b>not json</b>\n\n", media_type="text/event-stream")


MISBEHAVING_ROUTES = [
    Route("/echo", _echo, methods=["POST"]),
    Route("/refuse", _refuse, methods=["POST"]),
    Route("/html", _html, methods=["POST"]),
    Route("/proto", _proto, methods=["POST"]),
    Route("/broken", _broken, methods=["POST"]),
    Route("/ends-early", _ends_early, methods=["POST"]),
    Route("/endless", _endless, methods=["POST"]),
    Route("/not-json", _not_json, methods=["POST"]),
]
