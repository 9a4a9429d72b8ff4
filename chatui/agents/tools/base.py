"""The tool contract: what a tool is (`Tool`, its JSON-schema `params`), what it gets
(`ToolEnv`), what it returns (`ToolOutcome`) or raises (`ToolError`), and `off_loop`,
the worker threads its work runs on. Every other module of the package builds on this.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chatui.agents.base import ToolCall, setting
from chatui.ingest.values import result_text

if TYPE_CHECKING:  # annotations only: the toolbox and sandbox build on this module
    from .sandbox import Sandbox
    from .toolbox import Toolbox

#: Integer arguments given as strings: longer ones are not numbers a tool needs
#: (and int() of a huge digit string is itself slow).
MAX_INTEGER_DIGITS = 18


class ToolError(Exception):
    """The tool failed; the message is what the user sees as the tool's error."""


Result = Any
#: `def` (runs on a worker thread) or `async def` (runs on the loop and only
#: orchestrates: progress, pauses, `off_loop` for its work, child calls).
ToolFunc = Callable[..., Awaitable[Result]] | Callable[..., Result]

#: The threads tool work runs on. A pool of its own: work that goes on after a
#: Stop or a timeout (a thread cannot be killed) must not starve the loop's
#: default executor, which asyncio also uses for DNS lookups.
_WORKERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="chatui-tool")


async def off_loop(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """`func(*args, **kwargs)` on a tool worker thread. Cancelling the await (a Stop,
    a timeout) returns at once; the thread finishes its bounded work on its own."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_WORKERS, functools.partial(func, *args, **kwargs))


def tool_timeout() -> float | None:
    """Seconds a tool call may take (`CHATUI_TOOL_TIMEOUT`, default 30; 0 = no limit)."""
    seconds = setting("CHATUI_TOOL_TIMEOUT", 30.0, float)
    return seconds if seconds > 0 else None


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    func: ToolFunc
    #: Failed attempts are retried with a new tool_call_id (G14).
    retryable: bool = False
    #: The tool runs other tools (a sub-agent): each of those has its own time
    #: limit, so it has none of its own, which would cut a child off mid-call
    #: and leave its entry running.
    runs_children: bool = False

    def schema(self) -> dict[str, Any]:
        """The OpenAI `tools[]` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass
class ToolEnv:
    """What a tool function gets besides its arguments. A `def` tool, on its worker
    thread, uses only `sandbox`: the call's methods are coroutines of the loop."""

    toolbox: Toolbox
    call: ToolCall

    @property
    def sandbox(self) -> Sandbox:
        return self.toolbox.sandbox

    async def pause(self, factor: float = 1.0) -> None:
        await self.call.ctx.pause(factor)


@dataclass
class ToolOutcome:
    call: ToolCall
    result: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def text(self) -> str:
        return self.error if self.error is not None else result_text(self.result)


def params(required: tuple[str, ...] = (), **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def validate_args(tool: Tool, args: Any) -> dict[str, Any]:
    """Check arguments against the tool's JSON schema (the subset we use)."""
    if not isinstance(args, dict):
        raise ToolError(f"arguments for {tool.name} must be an object")
    properties = tool.parameters.get("properties", {})
    unknown = sorted(set(args) - set(properties))
    if unknown:
        raise ToolError(f"unknown argument for {tool.name}: {', '.join(unknown)}")
    for name in tool.parameters.get("required", []):
        if name not in args:
            raise ToolError(f"missing argument for {tool.name}: {name}")
    clean = {}
    for name, value in args.items():
        kind = properties[name].get("type")
        if kind == "integer":
            digits = value.strip().lstrip("-") if isinstance(value, str) else ""
            if digits.isdigit() and len(digits) <= MAX_INTEGER_DIGITS:
                value = int(value)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ToolError(f"argument {name} of {tool.name} must be an integer")
        elif kind == "string" and not isinstance(value, str):
            raise ToolError(f"argument {name} of {tool.name} must be a string")
        clean[name] = value
    return clean
