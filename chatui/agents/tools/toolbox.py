"""The toolbox: the tool set, and the code that runs one call under its time limit and
reports it as started/progress/completed events.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

from chatui.agents.base import ToolCall

from .base import (
    Result,
    Tool,
    ToolEnv,
    ToolError,
    ToolOutcome,
    off_loop,
    tool_timeout,
    validate_args,
)
from .builtin import TOOLS
from .sandbox import Sandbox

logger = logging.getLogger(__name__)


class Toolbox:
    """The tool set, and the code that runs one call and reports it as events."""

    def __init__(
        self,
        sandbox: Sandbox | None = None,
        tools: list[Tool] | None = None,
        *,
        timeout: float | None = None,
    ):
        self.sandbox = sandbox or Sandbox()
        self.tools = {tool.name: tool for tool in (tools or TOOLS)}
        #: Seconds one call may take; None: no limit.
        self.timeout = timeout if timeout is not None else tool_timeout()

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self.tools.values()]

    def call(self, ctx: Any, name: str, args: dict[str, Any], **options: Any) -> ToolCall:
        """A new call; retryable tools announce their attempt budget up front."""
        tool = self.get(name)
        if tool is not None and tool.retryable:
            options.setdefault("attempt", 1)
            options.setdefault("max_attempts", 3)
        return ctx.tool(name, args, **options)

    async def execute(self, call: ToolCall, *, duration_ms: int | None = None) -> ToolOutcome:
        """started → the tool's own progress → completed (success or error)."""
        await call.start()
        try:
            result = await self._run(call)
        except ToolError as problem:
            await call.fail(str(problem), duration_ms=duration_ms)
            return ToolOutcome(call, error=str(problem))
        except asyncio.CancelledError:
            raise
        except Exception as problem:  # a bug in a tool must not kill the run
            logger.exception("tool %s crashed", call.name)
            message = f"{type(problem).__name__}: {problem}"
            await call.fail(message, duration_ms=duration_ms)
            return ToolOutcome(call, error=message)
        await call.succeed(result, duration_ms=duration_ms)
        return ToolOutcome(call, result=result)

    async def _run(self, call: ToolCall) -> Result:
        """The tool's work, off the loop, under the time limit."""
        tool = self.get(call.name)
        if tool is None:
            raise ToolError(
                f"unknown tool '{call.name}'; available: {', '.join(sorted(self.tools))}"
            )
        args = validate_args(tool, call.args)
        env = ToolEnv(self, call)
        if tool.runs_children:
            return await tool.func(env, **args)
        limit = asyncio.timeout(self.timeout)
        try:
            async with limit:
                if inspect.iscoroutinefunction(tool.func):
                    return await tool.func(env, **args)
                return await off_loop(tool.func, env, **args)
        except TimeoutError:
            if not limit.expired():
                raise  # the tool's own TimeoutError: a crash, reported as one
            raise ToolError(f"{tool.name} timed out after {self.timeout:g} s") from None

    async def execute_with_retry(self, call: ToolCall) -> ToolOutcome:
        """Retry a retryable tool's failures, each attempt a new call (G14)."""
        tool = self.get(call.name)
        outcome = await self.execute(call)
        while (
            not outcome.ok
            and tool is not None
            and tool.retryable
            and (call.attempt or 1) < (call.max_attempts or 1)
        ):
            await call.ctx.pause(0.5)
            call = call.retry()
            outcome = await self.execute(call)
        return outcome
