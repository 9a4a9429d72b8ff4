"""The OpenAI-compatible agent against a fake endpoint: a real HTTP server on
loopback, in a thread, speaking chat-completions SSE (and failing on demand)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from chatui.agents import start_run, wait_for_run
from chatui.agents.openai import OpenAIAgent
from chatui.ingest.service import ingest
from chatui.models import Event, Message, Run
from chatui.read.presenters import present_transcript
from chatui.text import format_duration
from tests.support.leaks import assert_failure_leaks_nothing
from tests.support.live import free_port as closed_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user(db):
    """conftest's user without the (deliberately slow) password hashing."""
    return get_user_model().objects.create(username="alice")


# A reply is ("sse", [data lines]) or (status, JSON body or raw bytes) or ("hang", seconds).
Reply = tuple[Any, Any]


def chunk(delta: dict | None = None, finish: str | None = None, usage: dict | None = None) -> str:
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": []}
    if delta is not None or finish is not None:
        body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body)


def tool_delta(index: int, *, id: str | None = None, name: str | None = None, args: str = ""):
    piece: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id:
        piece["id"], piece["type"] = id, "function"
    if name:
        piece["function"]["name"] = name
    return chunk({"tool_calls": [piece]})


class FakeOpenAI(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, reply: Callable[[dict], Reply]):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.released = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {"path": self.path, "headers": dict(self.headers), "body": body}
        )
        kind, payload = self.server.reply(body)
        if kind == "hang":
            self.server.released.wait(payload)
            return
        if kind == "sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b": keep-alive comment\n\n")
            for line in payload:
                self.wfile.write(f"data: {line}\n\n".encode())
                self.wfile.flush()
            return
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(kind)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@contextmanager
def fake_openai(reply: Callable[[dict], Reply]) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(reply)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.released.set()
        server.shutdown()
        server.server_close()


def ask(conversation, text: str, agent: OpenAIAgent) -> str:
    """As the composer does: ingest the user's message, then start the run."""
    ingest(conversation, {"type": "user.message", "content": text})

    async def main() -> str:
        run_id = start_run(conversation, text, agent=agent)
        assert await wait_for_run(conversation.pk, timeout=20)
        return run_id

    return asyncio.run(main())


def agent_for(base_url: str, **options) -> OpenAIAgent:
    return OpenAIAgent(base_url=base_url, model="fake-model", api_key="sk-test", delay=0, **options)


def round_trip(body: dict) -> Reply:
    """First call: two tool calls, their pieces spread over chunks. Then: text."""
    if not any(message["role"] == "tool" for message in body["messages"]):
        return "sse", [
            chunk({"role": "assistant", "content": None}),
            tool_delta(0, id="call_1", name="calculate"),
            tool_delta(0, args='{"expression": '),
            tool_delta(0, args='"2+3*4"}'),
            tool_delta(1, id="call_2", name="read_file", args='{"path": "notes/todo.txt"}'),
            chunk(finish="tool_calls"),
            chunk(usage={"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}),
            "[DONE]",
        ]
    return "sse", [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "The answer "}),
        chunk({"content": "is **14**."}),
        chunk(finish="stop"),
        chunk(usage={"prompt_tokens": 70, "completion_tokens": 10, "total_tokens": 80}),
        "[DONE]",
    ]


def test_a_tool_call_round_trip(conversation):
    ingest(
        conversation,
        [
            {"type": "user.message", "content": "earlier question"},
            {"type": "agent.step.completed", "content": "earlier answer"},
        ],
    )
    with fake_openai(round_trip) as server:
        run_id = ask(conversation, "what is 2+3*4?", agent_for(server.base_url))
        first, second = server.requests

    assert Run.objects.get(run_id=run_id).status == "completed"
    assert first["path"] == "/v1/chat/completions"
    assert first["headers"]["Authorization"] == "Bearer sk-test"
    sent = first["body"]
    assert sent["model"] == "fake-model" and sent["stream"] is True
    assert {"calculate", "read_file", "list_files"} <= {
        t["function"]["name"] for t in sent["tools"]
    }
    calculate = next(t for t in sent["tools"] if t["function"]["name"] == "calculate")
    assert calculate["function"]["parameters"]["required"] == ["expression"]
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "user"]
    assert sent["messages"][1:] == [
        {"role": "user", "content": "earlier question"},
        {"role": "assistant", "content": "earlier answer"},
        {"role": "user", "content": "what is 2+3*4?"},
    ]
    assistant_call, *results = second["body"]["messages"][4:]
    assert [c["id"] for c in assistant_call["tool_calls"]] == ["call_1", "call_2"]
    assert assistant_call["tool_calls"][0]["function"] == {
        "name": "calculate",
        "arguments": '{"expression": "2+3*4"}',
    }
    assert results[0] == {"role": "tool", "tool_call_id": "call_1", "content": "14"}
    assert results[1]["tool_call_id"] == "call_2" and "@alice" in results[1]["content"]

    found = list(Message.objects.filter(conversation=conversation, run_id=run_id))
    step, calc, read, final = [m for m in found if m.role != "status"]
    assert [c["name"] for c in step.metadata["tool_calls"]] == ["calculate", "read_file"]
    assert step.metadata["tool_calls"][0]["args"] == {"expression": "2+3*4"}
    assert step.metadata["tokens"] == 60 and step.metadata["duration_ms"] >= 0
    assert (calc.tool_name, calc.tool_status, calc.content) == ("calculate", "success", "14")
    assert read.metadata["details"]["kind"] == "file"
    assert calc.tool_call_id.startswith(run_id)  # our ids, not the model's
    assert final.content == "The answer is **14**." and final.is_final
    # S1/S4: each step its own tokens, in and out, so the meta line's sum is the run's.
    assert final.metadata["tokens"] == 80
    assert step.metadata["usage"]["input_tokens"] == 50
    assert final.metadata["usage"]["output_tokens"] == 10
    assert final.metadata["usage"]["model"] == step.metadata["usage"]["model"]
    window = list(Message.objects.filter(conversation=conversation).order_by("position"))
    (line,) = [
        item.meta_line for item in present_transcript(window) if getattr(item, "meta_line", None)
    ]
    assert "· 140 tokens" in line
    deltas = Event.objects.filter(
        conversation=conversation, type="agent.message.delta", payload__message_id=final.message_id
    )
    assert "".join(e.payload["delta"] for e in deltas) == final.content
    assert not Message.objects.filter(conversation=conversation, status_type="thinking").exists()


def test_s1_each_step_sends_its_own_duration_so_the_meta_line_is_not_counted_twice(
    conversation,
):
    """S1 sums the run's steps' `duration_ms`: the last step sent the whole run's time, so
    the first step's was counted twice (a 400 ms step and a fast answer read ≥ 0.8 s)."""

    def slow_first(body: dict) -> Reply:
        if not any(message["role"] == "tool" for message in body["messages"]):
            time.sleep(0.4)
        return round_trip(body)

    with fake_openai(slow_first) as server:
        run_id = ask(conversation, "what is 2+3*4?", agent_for(server.base_url))
    steps = Message.objects.filter(conversation=conversation, run_id=run_id, role="assistant")
    first, final = steps.order_by("position")
    assert first.metadata["duration_ms"] >= 400
    assert final.metadata["duration_ms"] < 400, "the last step sent the run's time"
    window = list(Message.objects.filter(conversation=conversation).order_by("position"))
    (line,) = [
        item.meta_line for item in present_transcript(window) if getattr(item, "meta_line", None)
    ]
    total = first.metadata["duration_ms"] + final.metadata["duration_ms"]
    assert line.startswith(f"Assistant · {format_duration(total, compact=True)} ·"), line


def test_bad_tool_arguments_become_a_tool_error_the_model_sees(conversation):
    def reply(body: dict) -> Reply:
        if any(m["role"] == "tool" for m in body["messages"]):
            return "sse", [chunk({"content": "Sorry."}), chunk(finish="stop"), "[DONE]"]
        return "sse", [
            tool_delta(0, id="call_x", name="read_file", args="{not json"),
            chunk(finish="tool_calls"),
            "[DONE]",
        ]

    with fake_openai(reply) as server:
        ask(conversation, "read something", agent_for(server.base_url))
        tool_reply = server.requests[1]["body"]["messages"][-1]
    assert tool_reply["content"].startswith("Error: the model sent arguments that are not JSON")
    tool = Message.objects.get(conversation=conversation, role="tool")
    assert tool.tool_status == "error" and "not JSON" in tool.content


@pytest.mark.parametrize(
    "arguments",
    ['{"path": NaN}', "[" * 100_000, '{"n": ' + "1" * 5000 + "}"],
    ids=["nan", "nested-too-deep", "integer-of-5000-digits"],
)
def test_hostile_tool_arguments_are_a_tool_error_not_a_crash(conversation, arguments):
    def reply(body: dict) -> Reply:
        if any(m["role"] == "tool" for m in body["messages"]):
            return "sse", [chunk({"content": "Sorry."}), chunk(finish="stop"), "[DONE]"]
        return "sse", [
            tool_delta(0, id="call_x", name="read_file", args=arguments),
            chunk(finish="tool_calls"),
            "[DONE]",
        ]

    with fake_openai(reply) as server:
        run_id = ask(conversation, "read something", agent_for(server.base_url))
    assert Run.objects.get(run_id=run_id).status == "completed"
    tool = Message.objects.get(conversation=conversation, role="tool")
    assert tool.tool_status == "error" and "not JSON" in tool.content


def test_the_steps_limit_ends_the_run_with_a_continuation(conversation):
    def reply(body: dict) -> Reply:
        return "sse", [
            tool_delta(0, id="c", name="calculate", args='{"expression": "1+1"}'),
            chunk(finish="tool_calls"),
            "[DONE]",
        ]

    with fake_openai(reply) as server:
        run_id = ask(conversation, "loop", agent_for(server.base_url, max_steps=2))
        assert len(server.requests) == 2
    assert Run.objects.get(run_id=run_id).status == "completed"
    continuation = Message.objects.get(conversation=conversation, status_type="continuation")
    assert continuation.metadata["continuation"] == {
        "should_continue": False,
        "stop_reason": "steps_limit",
        "resolved_by": "StepsLimit",
    }


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            (500, {"error": {"message": "upstream overloaded", "type": "server_error"}}),
            "The model endpoint answered HTTP 500: upstream overloaded",
        ),
        (
            (401, {"error": {"message": "Incorrect API key provided"}}),
            "The model endpoint answered HTTP 401: Incorrect API key provided",
        ),
        (("sse", ["{not json"]), "Malformed stream from the model endpoint: not JSON: '{not json'"),
        (
            ("sse", [chunk({"content": "Half an ans"})]),
            "Malformed stream from the model endpoint: it ended before [DONE] or a finish_reason",
        ),
        (
            ("sse", [json.dumps({"error": {"message": "rate limited"}})]),
            "The model endpoint reported an error: rate limited",
        ),
        (("hang", 5), "did not answer within 0.5 s"),
    ],
    ids=["http-500", "http-401", "not-json", "truncated", "error-chunk", "timeout"],
)
def test_endpoint_failures_fail_the_run_with_a_clear_message(conversation, reply, expected):
    with fake_openai(lambda body: reply) as server:
        run_id = ask(conversation, "hi", agent_for(server.base_url, timeout=0.5))
    run = Run.objects.get(run_id=run_id)
    assert run.status == "failed" and expected in run.error_message
    banner = Message.objects.get(conversation=conversation, status_type="error")
    assert banner.content == run.error_message  # S2
    assert not Message.objects.filter(conversation=conversation, role="assistant", is_final=False)


SECRET_ERROR = (
    "Incorrect API key provided: sk-test (via http://modeluser:model-pass-456@proxy/)\n"
    "\x00\u2028" + "trace " * 60 + "OTHER_KEY=body-secret-at-the-end"
)


@pytest.mark.parametrize(
    "reply",
    [
        (500, {"error": {"message": SECRET_ERROR}}),
        (502, SECRET_ERROR.encode()),
        ("sse", [SECRET_ERROR]),
    ],
    ids=["json-error", "text-body", "stream"],
)
def test_sec_failure_message_shows_the_endpoint_origin_and_a_short_masked_excerpt(
    conversation, reply
):
    """The failure lands in the banner, the event log and exports: it never holds the
    base URL's password or query, the API key, or the body beyond a short excerpt."""
    with fake_openai(lambda body: reply) as server:
        host = server.base_url.removeprefix("http://").removesuffix("/v1")
        base_url = f"http://modeluser:model-pass-456@{host}/v1?key=query-secret"
        run_id = ask(conversation, "hi", agent_for(base_url))
    run = Run.objects.get(run_id=run_id)
    assert run.status == "failed"
    if reply[0] != "sse":
        assert run.error_message.startswith(
            f"The model endpoint answered HTTP {reply[0]}: Incorrect API key provided: *** "
            "(via http://***@proxy/) trace trace"
        )
    assert_failure_leaks_nothing(
        conversation,
        run,
        ("model-pass-456", "query-secret", "sk-test", "body-secret", "\\u0000"),
        "\u2028",
    )


def test_an_unreachable_endpoint_with_credentials_is_named_by_its_origin(conversation):
    port = closed_port()
    base_url = f"http://modeluser:model-pass-456@127.0.0.1:{port}/v1?key=query-secret"
    run_id = ask(conversation, "hi", agent_for(base_url))
    message = Run.objects.get(run_id=run_id).error_message
    assert message.startswith(f"Cannot reach the model endpoint at http://127.0.0.1:{port}: ")
    assert "model-pass-456" not in message and "query-secret" not in message


def test_a_half_streamed_answer_is_kept_when_the_stream_breaks(conversation):
    with fake_openai(lambda body: ("sse", [chunk({"content": "Half an ans"})])) as server:
        ask(conversation, "hi", agent_for(server.base_url))
    (partial,) = Message.objects.filter(conversation=conversation, role="assistant")
    assert partial.content == "Half an ans" and partial.is_final


def test_an_unreachable_endpoint_fails_the_run(conversation):
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    run_id = ask(conversation, "hi", agent_for(base_url))
    run = Run.objects.get(run_id=run_id)
    assert run.status == "failed"
    origin = base_url.removesuffix("/v1")  # the endpoint's origin only: no path, no query
    assert run.error_message.startswith(f"Cannot reach the model endpoint at {origin}: ")


def test_configuration_comes_from_settings(settings):
    """config/settings.py reads OPENAI_* from the environment once, at start."""
    settings.OPENAI_BASE_URL = "http://env.example/v1/"
    settings.OPENAI_MODEL = "settings-model"
    settings.OPENAI_API_KEY = ""
    agent = OpenAIAgent()
    assert (agent.base_url, agent.model, agent.api_key) == (
        "http://env.example/v1",
        "settings-model",
        "",
    )
    assert agent.endpoint == "http://env.example/v1/chat/completions"
