"""An OpenAI Agents SDK run, offline: a fake `Model` playing a script, and the release-check
agents the tests drive (three tools — one fails once and is retried, one runs about a
second —, an agent used as a tool, a handoff, a streamed Markdown answer).

The model implements the SDK's own `Model` interface and streams the SDK's own
Responses event types (`openai.types.responses`), so the runner, its tools, tracing and
streaming are all the real SDK's; only the language model is scripted.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from agents import Agent, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.tracing import set_trace_processors
from agents.usage import Usage
from chatui_client import openai_agents
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

#: Each response's usage: 7 responses in the release check → 840 tokens for the run.
INPUT_TOKENS, OUTPUT_TOKENS = 100, 20
RESPONSE_TOKENS = INPUT_TOKENS + OUTPUT_TOKENS


@dataclass
class Say:
    """Text the model streams, `chunk` characters per delta."""

    text: str
    chunk: int = 16


@dataclass
class Call:
    """A function call the model makes."""

    name: str
    args: dict[str, Any]
    call_id: str


Turn = list[Say | Call]


class ScriptModel(Model):
    """Answers each call with the next turn of its script; `delay` seconds between deltas."""

    def __init__(self, turns: list[Turn], *, delay: float = 0.0):
        self.turns = list(turns)
        self.delay = delay
        self.responses = itertools.count(1)

    def _next(self) -> tuple[int, Turn]:
        if not self.turns:
            raise AssertionError("the script has no more turns")
        return next(self.responses), self.turns.pop(0)

    @staticmethod
    def _items(number: int, turn: Turn) -> list[Any]:
        items: list[Any] = []
        for index, part in enumerate(turn):
            if isinstance(part, Say):
                text = ResponseOutputText(text=part.text, type="output_text", annotations=[])
                items.append(
                    ResponseOutputMessage(
                        id=f"msg_{number}_{index}",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                )
            else:
                items.append(
                    ResponseFunctionToolCall(
                        id=f"fc_{part.call_id}",
                        call_id=part.call_id,
                        type="function_call",
                        name=part.name,
                        arguments=json.dumps(part.args),
                        status="completed",
                    )
                )
        return items

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        number, turn = self._next()
        return ModelResponse(
            output=self._items(number, turn),
            usage=Usage(
                requests=1,
                input_tokens=INPUT_TOKENS,
                output_tokens=OUTPUT_TOKENS,
                total_tokens=RESPONSE_TOKENS,
            ),
            response_id=f"resp_{number}",
        )

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        number, turn = self._next()
        items = self._items(number, turn)
        sequence = itertools.count()
        response = {
            "id": f"resp_{number}",
            "created_at": 0,
            "model": "script",
            "object": "response",
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        yield ResponseCreatedEvent(
            type="response.created",
            sequence_number=next(sequence),
            response=Response(**response, status="in_progress"),
        )
        for index, (part, item) in enumerate(zip(turn, items, strict=True)):
            if isinstance(part, Say):
                async for event in self._text(part, item, index, sequence):
                    yield event
            else:
                for event in self._call(item, index, sequence):
                    yield event
            yield ResponseOutputItemDoneEvent(
                type="response.output_item.done",
                output_index=index,
                item=item,
                sequence_number=next(sequence),
            )
        usage = ResponseUsage(
            input_tokens=INPUT_TOKENS,
            output_tokens=OUTPUT_TOKENS,
            total_tokens=RESPONSE_TOKENS,
            input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        )
        yield ResponseCompletedEvent(
            type="response.completed",
            sequence_number=next(sequence),
            response=Response(**{**response, "output": items}, status="completed", usage=usage),
        )

    async def _text(self, part: Say, item: Any, index: int, sequence) -> AsyncIterator[Any]:
        yield ResponseOutputItemAddedEvent(
            type="response.output_item.added",
            output_index=index,
            sequence_number=next(sequence),
            item=item.model_copy(update={"status": "in_progress", "content": []}),
        )
        yield ResponseContentPartAddedEvent(
            type="response.content_part.added",
            item_id=item.id,
            output_index=index,
            content_index=0,
            sequence_number=next(sequence),
            part=ResponseOutputText(text="", type="output_text", annotations=[]),
        )
        for start in range(0, len(part.text), part.chunk):
            await asyncio.sleep(self.delay)  # a real model's tokens take time to come
            yield ResponseTextDeltaEvent(
                type="response.output_text.delta",
                item_id=item.id,
                output_index=index,
                content_index=0,
                delta=part.text[start : start + part.chunk],
                logprobs=[],
                sequence_number=next(sequence),
            )
        yield ResponseTextDoneEvent(
            type="response.output_text.done",
            item_id=item.id,
            output_index=index,
            content_index=0,
            text=part.text,
            logprobs=[],
            sequence_number=next(sequence),
        )
        yield ResponseContentPartDoneEvent(
            type="response.content_part.done",
            item_id=item.id,
            output_index=index,
            content_index=0,
            sequence_number=next(sequence),
            part=item.content[0],
        )

    @staticmethod
    def _call(item: Any, index: int, sequence) -> list[Any]:
        return [
            ResponseOutputItemAddedEvent(
                type="response.output_item.added",
                output_index=index,
                sequence_number=next(sequence),
                item=item.model_copy(update={"arguments": "", "status": "in_progress"}),
            ),
            ResponseFunctionCallArgumentsDeltaEvent(
                type="response.function_call_arguments.delta",
                item_id=item.id,
                output_index=index,
                delta=item.arguments,
                sequence_number=next(sequence),
            ),
            ResponseFunctionCallArgumentsDoneEvent.model_validate(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item.id,
                    "output_index": index,
                    "arguments": item.arguments,
                    "name": item.name,
                    "sequence_number": next(sequence),
                }
            ),
        ]


def only_chatui_tracing() -> None:
    """The SDK's tracing goes to chatui's processor alone: its default exporter would
    post traces to OpenAI whenever OPENAI_API_KEY is set (tests stay offline)."""
    set_trace_processors([openai_agents._processor()])


# -- the release check ---------------------------------------------------------------------

QUESTION = "Can we ship <b>1.2</b>?"
#: Hostile text in a tool's error, a tool's output and an agent's name: escaped everywhere.
DISK_ERROR = "disk <b>full</b> <script>window.__pwned = 1</script>"
NOTES = '<img src=x onerror="window.__pwned = 1"> 1.2 notes'
WRITER = "Writer <i>pro</i>"
#: A tool name the SDK keeps as given (only handoff names are transformed).
NOTES_TOOL = 'read_notes<img src=x onerror="window.__pwned = 1">'
ANSWER = (
    "## Ready to ship\n\n"
    "- disk: **ok** after a retry\n"
    "- tests: `42 passed`\n"
    "- no open bugs\n\n"
    "| check | result |\n|---|---|\n| tests | 42 passed |\n"
)
SLOW_TOOL_SECONDS = 1.0


@dataclass
class ReleaseCheck:
    """The agents, their models and what their tools saw, for one run."""

    triage: Agent
    models: list[ScriptModel]
    disk_checks: list[str]

    def run(self) -> Any:
        return Runner.run_streamed(self.triage, QUESTION)


def release_check(
    *, answer_delay: float = 0.02, slow_seconds: float = SLOW_TOOL_SECONDS
) -> ReleaseCheck:
    disk_checks: list[str] = []

    @function_tool(failure_error_function=lambda _context, error: f"check_disk failed: {error}")
    async def check_disk(path: str) -> str:
        """How full a disk is."""
        disk_checks.append(path)
        if len(disk_checks) == 1:
            raise RuntimeError(DISK_ERROR)
        return f"{path}: 41% used"

    @function_tool
    async def run_tests() -> str:
        """Run the test suite."""
        await asyncio.sleep(slow_seconds)
        return "42 passed"

    @function_tool(name_override=NOTES_TOOL)
    def read_file(path: str) -> str:
        """Read a file."""
        return NOTES

    @function_tool
    def lookup(query: str) -> dict[str, Any]:
        """Search the tracker."""
        return {"query": query, "open": 0}

    researcher_model = ScriptModel(
        [[Call("lookup", {"query": "bugs for 1.2"}, "r1")], [Say("No open bugs.")]]
    )
    researcher = Agent(
        name="Researcher",
        instructions="Search the tracker.",
        model=researcher_model,
        tools=[lookup],
    )
    writer_model = ScriptModel(
        [[Call("lookup", {"query": "changelog 1.2"}, "w1")], [Say(ANSWER, chunk=12)]],
        delay=answer_delay,
    )
    writer = Agent(
        name=WRITER, instructions="Write the answer.", model=writer_model, tools=[lookup]
    )
    triage_model = ScriptModel(
        [
            [
                Say("Let me check the release."),
                Call("check_disk", {"path": "/var"}, "c1"),
                Call("run_tests", {}, "c2"),
                Call(NOTES_TOOL, {"path": "NOTES.md"}, "c3"),
            ],
            [
                Call("check_disk", {"path": "/var"}, "c4"),
                Call("research", {"input": "open bugs for 1.2"}, "c5"),
            ],
            [Call("transfer_to_writer__i_pro__i_", {}, "c6")],
        ]
    )
    triage = Agent(
        name="Triage",
        instructions="Check the release, then hand off to the writer.",
        model=triage_model,
        tools=[
            check_disk,
            run_tests,
            read_file,
            researcher.as_tool("research", "Ask the researcher."),
        ],
        handoffs=[writer],
    )
    return ReleaseCheck(triage, [triage_model, researcher_model, writer_model], disk_checks)
