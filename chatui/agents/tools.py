"""Real, safe tools over a read-only sandbox folder, for the demo and OpenAI agents.

Nothing here touches the network, runs a process or writes a file:

- file tools resolve every path inside the sandbox folder (`Sandbox.resolve`);
  `..`, absolute paths and symlinks cannot leave it;
- `calculate` parses with `ast` and evaluates a small whitelist (no `eval`);
- `run_command` is a tiny simulated shell over the sandbox (`ls`, `cat`, `wc`…);
- `fetch_url` answers from a table of canned pages (status codes included).

A tool is a function `(env, **args) -> result` where the result is a string, an
AgentSpine `{"text", "details"}` result [001] or any JSON value, and a `ToolError`
is the tool's error. `Toolbox.execute` turns one `ToolCall` into its
started/progress/completed events. `plan_tools` is the demo's keyword planner
(also used by the `delegate` sub-agent).

Tool work never runs on the event loop, which serves every page and every run
of the process: a plain `def` tool runs on a worker thread, and an `async def`
tool (one that reports progress or runs other tools) hands its work to
`off_loop`. Each call is awaited under a time limit (`CHATUI_TOOL_TIMEOUT`), and
a Stop cancels the wait at once. A thread cannot be killed, and a big-integer
operation holds the GIL until it is done, so the work itself must be bounded
too: the calculator refuses operands whose results would be huge *before*
computing them, and the shell caps its arguments and output.
"""

from __future__ import annotations

import ast
import asyncio
import csv
import functools
import hashlib
import inspect
import io
import json
import logging
import math
import mimetypes
import operator
import os
import re
import shlex
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..events import result_text
from ..text import human_size
from .base import ToolCall, setting

logger = logging.getLogger(__name__)

SANDBOX_DIR = Path(__file__).resolve().parent / "sandbox"
MAX_READ_BYTES = 64 * 1024
MAX_SEARCH_HITS = 50
MAX_DELEGATE_DEPTH = 3
#: The simulated shell's limits: operands per command, and characters of output.
MAX_SHELL_ARGS = 20
MAX_SHELL_OUTPUT = MAX_READ_BYTES
#: Integer arguments given as strings: longer ones are not numbers a tool needs
#: (and int() of a huge digit string is itself slow).
MAX_INTEGER_DIGITS = 18


class ToolError(Exception):
    """The tool failed; the message is what the user sees as the tool's error."""


# -- the sandbox ------------------------------------------------------------------


class Sandbox:
    """A read-only folder. Paths are relative to it; "/" means its root."""

    def __init__(self, root: Path | str = SANDBOX_DIR):
        self.root = Path(root).resolve()

    def resolve(self, path: str) -> Path:
        if not isinstance(path, str):
            raise ToolError("path must be a string")
        if "\x00" in path:
            raise ToolError("path must not contain NUL bytes")
        relative = path.strip().replace("\\", "/").lstrip("/") or "."
        target = (self.root / relative).resolve()
        if not target.is_relative_to(self.root):
            raise ToolError(f"path escapes the sandbox: {path}")
        return target

    def display(self, target: Path) -> str:
        relative = target.relative_to(self.root).as_posix()
        return "." if relative in ("", ".") else relative

    def file(self, path: str) -> Path:
        target = self.resolve(path)
        if not target.is_file():
            raise ToolError(f"no such file in the sandbox: {path}")
        return target

    def folder(self, path: str) -> Path:
        target = self.resolve(path)
        if not target.is_dir():
            raise ToolError(f"no such folder in the sandbox: {path}")
        return target

    def read_text(self, path: str) -> tuple[str, str, int]:
        """(display path, text, full size in bytes); the text is cut at 64 KiB."""
        target = self.file(path)
        size = target.stat().st_size
        with target.open("rb") as handle:
            data = handle.read(MAX_READ_BYTES)
        if b"\x00" in data:
            raise ToolError(f"not a text file: {path}")
        return self.display(target), data.decode("utf-8", errors="replace"), size

    def files(self, under: str = ".") -> list[Path]:
        """Every regular file under `under`, sorted, never leaving the sandbox."""
        start = self.resolve(under)
        if start.is_file():
            return [start]
        if not start.is_dir():
            raise ToolError(f"no such file or folder in the sandbox: {under}")
        found = []
        for folder, dirs, names in os.walk(start, followlinks=False):
            dirs[:] = sorted(name for name in dirs if not name.startswith("."))
            for name in sorted(names):
                if name.startswith("."):
                    continue
                path = Path(folder, name).resolve()
                if path.is_relative_to(self.root) and path.is_file():
                    found.append(path)
        return found


# -- tool plumbing ------------------------------------------------------------------

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


# -- the tools ----------------------------------------------------------------------


def list_files(env: ToolEnv, path: str = ".") -> Result:
    sandbox = env.sandbox
    target = sandbox.resolve(path)
    if target.is_file():
        return sandbox.display(target)
    folder = sandbox.folder(path)
    entries = sorted(
        entry.name + ("/" if entry.is_dir() else "")
        for entry in folder.iterdir()
        if not entry.name.startswith(".") and entry.resolve().is_relative_to(sandbox.root)
    )
    return ", ".join(entries) if entries else "(empty folder)"


def read_file(env: ToolEnv, path: str) -> Result:
    shown, text, size = env.sandbox.read_text(path)
    lines = len(text.splitlines())
    details: dict[str, Any] = {
        "kind": "file",
        "path": shown,
        "size": size,
        "lines": lines,
        "mime_type": mimetypes.guess_type(shown)[0] or "text/plain",
        "summary": f"{shown} · {lines} lines · {human_size(size)}",
    }
    if size > MAX_READ_BYTES:
        details["truncated"] = True
    return {"text": text, "details": details}


def search_text(env: ToolEnv, query: str, path: str = ".") -> Result:
    needle = query.strip().lower()
    if not needle:
        raise ToolError("query must not be empty")
    hits = []
    for file in env.sandbox.files(path):
        try:
            text = file.read_bytes()[:MAX_READ_BYTES].decode("utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if needle in line.lower():
                hits.append(f"{env.sandbox.display(file)}:{number}: {line.strip()}")
    if not hits:
        return f"no matches for {query!r}"
    shown = hits[:MAX_SEARCH_HITS]
    if len(hits) > MAX_SEARCH_HITS:
        shown.append(f"… and {len(hits) - MAX_SEARCH_HITS} more")
    return "\n".join(shown)


def calculate(env: ToolEnv, expression: str) -> Result:
    return format_number(safe_eval(expression))


async def slow_task(env: ToolEnv, steps: int = 5) -> Result:
    """Hash the sandbox's files chunk by chunk, reporting progress as it goes."""
    steps = max(1, min(20, steps))
    files = await off_loop(env.sandbox.files, ".")
    if not files:
        raise ToolError("the sandbox is empty")
    for step in range(1, steps + 1):
        file = files[(step - 1) % len(files)]
        digest = await off_loop(_file_digest, file)
        await env.pause()
        await env.call.progress(
            step / steps,
            output=f"chunk {step}/{steps}: {env.sandbox.display(file)} sha256={digest}\n",
            message=f"→ Processing chunk {min(step + 1, steps)}/{steps}"
            if step < steps
            else "→ Finishing",
        )
    return f"SUCCESS: processed {steps} chunks"


def _file_digest(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()[:12]


def run_command(env: ToolEnv, command: str) -> Result:
    code, output = SimulatedShell(env.sandbox).run(command)
    return {
        "text": output if output else "(no output)",
        "details": {
            "kind": "command",
            "command": command,
            "exit_code": code,
            "cwd": "/sandbox",
            "simulated": True,
            "summary": f"$ {command} → exit {code}",
        },
    }


CANNED_PAGES: dict[str, tuple[int, str, str]] = {
    "https://example.com/": (
        200,
        "text/html",
        "Example Domain — This domain is for use in illustrative examples in documents; "
        "you may use it in literature without prior coordination or asking for permission.",
    ),
    "https://example.com/api/status": (
        200,
        "application/json",
        '{"status": "ok", "version": "1.4.2", "uptime_s": 86400}',
    ),
    "https://example.com/slow": (504, "text/plain", "504 Gateway Timeout"),
}


async def fetch_url(env: ToolEnv, url: str) -> Result:
    """A simulated HTTP GET: canned pages, 404 for the rest. No network."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ToolError(f"not an http(s) URL: {url}")
    normalised = f"{parts.scheme}://{parts.netloc.lower()}{parts.path or '/'}"
    status, mime, body = CANNED_PAGES.get(
        normalised,
        (404, "text/html", f"404 Not Found: {normalised} (the demo has no network access)"),
    )
    await env.pause(0.5)
    return {
        "text": body,
        "details": {
            "kind": "fetch",
            "url": normalised,
            "status_code": status,
            "mime_type": mime,
            "simulated": True,
            "summary": f"GET {normalised} → {status}",
        },
    }


async def delegate(env: ToolEnv, task: str) -> Result:
    """A sub-agent: plans tools for `task` and runs them as children of this call.
    Whatever follows "then" is handed to a nested sub-agent."""
    parts = re.split(r"\bthen\b", task, maxsplit=1, flags=re.I)
    first, rest = parts[0], parts[1] if len(parts) > 1 else ""
    call = env.call
    states = ["queued", "running"]
    planned = [p for p in plan_tools(first) if p.name != "delegate"]
    if not planned and not rest.strip():
        planned = [Planned("list_files", {"path": "."})]
    outcomes = []
    for step in planned:
        child = env.toolbox.call(call.ctx, step.name, step.args, parent=call)
        outcomes.append(await env.toolbox.execute_with_retry(child))
    if rest.strip():
        if call.depth + 1 >= MAX_DELEGATE_DEPTH:
            raise ToolError("sub-agents are nested too deep")
        child = env.toolbox.call(call.ctx, "delegate", {"task": rest.strip(" ,.")}, parent=call)
        outcomes.append(await env.toolbox.execute(child))
    failed = [outcome for outcome in outcomes if not outcome.ok]
    states.append("completed_with_errors" if failed else "completed")
    summary = f"{len(outcomes)} tool call{'s' if len(outcomes) != 1 else ''}" + (
        f", {len(failed)} failed" if failed else ""
    )
    lines = [f"Sub-agent finished {task.strip()!r}: {summary}."]
    lines += [
        f"- {o.call.name}: {'error: ' if not o.ok else ''}{first_line(o.text, 100)}"
        for o in outcomes
    ]
    return {
        "text": "\n".join(lines),
        "details": {
            "kind": "subagent",
            "run_id": f"{call.id}.sub",
            "task": task,
            "states": states,
            "summary": summary,
        },
    }


async def flaky_lookup(env: ToolEnv, key: str = "features.retries") -> Result:
    """Look a dotted key up in config.json — after failing its first attempt."""
    if (env.call.attempt or 1) < 2:
        await env.pause(0.5)
        raise ToolError("upstream timed out (simulated: this tool fails its first attempt)")
    return await off_loop(_config_lookup, env.sandbox, key)


def _config_lookup(sandbox: Sandbox, key: str) -> str:
    _, text, _ = sandbox.read_text("config.json")
    value: Any = json.loads(text)
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise ToolError(f"no key {key[:100]!r} in config.json")
        value = value[part]
    return f"{key} = {json.dumps(value)}"


def word_stats(env: ToolEnv, path: str = "README.md") -> Result:
    shown, text, size = env.sandbox.read_text(path)
    words = re.findall(r"\w+", text)
    common = {}
    for word in words:
        lowered = word.lower()
        if len(lowered) > 3:
            common[lowered] = common.get(lowered, 0) + 1
    top = sorted(common.items(), key=lambda item: (-item[1], item[0]))[:5]
    summary = f"{len(words)} words · {len(text.splitlines())} lines · {size} bytes"
    return {
        "text": f"{shown}: {summary}; most used: "
        + ", ".join(f"{word} ({count})" for word, count in top),
        "details": {
            "kind": "custom",
            "summary": summary,
            "path": shown,
            "words": len(words),
            "top_words": dict(top),
        },
    }


async def image_generation(env: ToolEnv, prompt: str) -> Result:
    """Draws a small ASCII 'image' from the prompt's hash, row by row (G10–G12)."""
    await env.call.progress(0.0, message="→ Loading model…")
    digest = hashlib.sha256(prompt.encode()).digest()
    rows = 6
    for row in range(rows):
        await env.pause(0.5)
        line = "".join(" .:-=+*#%@"[digest[(row * 8 + col) % 32] % 10] for col in range(24))
        await env.call.progress(
            (row + 1) / rows,
            output=line + "\n",
            message=f"→ Rendering row {row + 2}/{rows}" if row + 1 < rows else "→ Saving",
        )
    return "SUCCESS: Generated 1 image"


def query_csv(env: ToolEnv, path: str = "data/cities.csv", limit: int = 100) -> Result:
    """Rows of a CSV file as JSON objects (numbers converted)."""
    _, text, _ = env.sandbox.read_text(path)
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        rows.append({key: _number_or_text(value) for key, value in row.items()})
        if len(rows) >= max(1, limit):
            break
    return rows


def _number_or_text(value: str) -> Any:
    return int(value) if re.fullmatch(r"-?\d+", value or "") else value


TOOLS: list[Tool] = [
    Tool(
        "list_files",
        "List the files and folders in a folder of the read-only sandbox.",
        params(path={"type": "string", "description": "folder, relative to the sandbox"}),
        list_files,
    ),
    Tool(
        "read_file",
        "Read a text file from the sandbox.",
        params(("path",), path={"type": "string", "description": "file, relative to the sandbox"}),
        read_file,
    ),
    Tool(
        "search_text",
        "Search the sandbox's text files for a string (case-insensitive).",
        params(
            ("query",),
            query={"type": "string"},
            path={"type": "string", "description": "folder or file to search, default all"},
        ),
        search_text,
    ),
    Tool(
        "calculate",
        "Evaluate an arithmetic expression: + - * / // % ** (or ^), parentheses, "
        "sqrt, abs, round, min, max, floor, ceil, log, sin, cos, tan, pi, e.",
        params(("expression",), expression={"type": "string"}),
        calculate,
    ),
    Tool(
        "slow_task",
        "A slow job that checksums the sandbox's files in steps, reporting progress.",
        params(steps={"type": "integer", "minimum": 1, "maximum": 20}),
        slow_task,
    ),
    Tool(
        "run_command",
        "Run a command in a simulated, read-only shell over the sandbox "
        "(ls, cat, head, tail, wc, grep, echo, pwd, true, false).",
        params(("command",), command={"type": "string"}),
        run_command,
    ),
    Tool(
        "fetch_url",
        "Fetch a web page (simulated: canned pages only, no network access).",
        params(("url",), url={"type": "string"}),
        fetch_url,
    ),
    Tool(
        "delegate",
        "Hand a task to a sub-agent, which runs its own tools; text after 'then' "
        "goes to a nested sub-agent.",
        params(("task",), task={"type": "string"}),
        delegate,
        runs_children=True,
    ),
    Tool(
        "flaky_lookup",
        "Look up a dotted key in the sandbox's config.json; fails on its first "
        "attempt and is retried.",
        params(key={"type": "string"}),
        flaky_lookup,
        retryable=True,
    ),
    Tool(
        "word_stats",
        "Count the words and lines of a sandbox file.",
        params(path={"type": "string"}),
        word_stats,
    ),
    Tool(
        "image_generation",
        "Generate a small ASCII image from a prompt, with progress.",
        params(("prompt",), prompt={"type": "string"}),
        image_generation,
    ),
    Tool(
        "query_csv",
        "Read a CSV file of the sandbox as a list of JSON rows.",
        params(path={"type": "string"}, limit={"type": "integer", "minimum": 1}),
        query_csv,
    ),
]


# -- the calculator: ast, a whitelist, bounds ----------------------------------------
#
# Every number stays within ±10^100, and every operation whose result could leave
# that range is refused from its operands' sizes *before* it is computed: Python
# computes `10**10**9`, `round(5, -10**7)` (10^(10^7) inside) or a product of two
# huge numbers in one C call that holds the GIL, so no thread, timeout or Stop
# could cut it short once it began.

MAX_EXPRESSION_CHARS = 300
MAX_MAGNITUDE = 10**100
MAX_EXPONENT = 1000
MAX_ROUND_DIGITS = 100
TOO_LARGE = "the result would be too large (the calculator works up to 10^100)"

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_NAMES = {"pi": math.pi, "e": math.e, "tau": math.tau}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "floor": math.floor,
    "ceil": math.ceil,
    "log": math.log,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
}


def safe_eval(expression: str) -> int | float:
    """Evaluate arithmetic without eval: parse to an AST and walk a whitelist."""
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    if not text:
        raise ToolError("the expression is empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):  # ValueError: e.g. a NUL character
        raise ToolError(f"not an arithmetic expression: {expression}") from None
    except (RecursionError, MemoryError):
        raise ToolError("the expression is nested too deeply") from None
    try:
        value = _evaluate(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except RecursionError:
        raise ToolError("the expression is nested too deeply") from None
    except (ValueError, OverflowError, TypeError) as problem:
        raise ToolError(f"cannot evaluate {expression}: {problem}") from None
    return value


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return _bounded(node.value)
        raise ToolError(f"not a number: {node.value!r}"[:80])
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        elif isinstance(node.op, ast.Mult):
            _check_product(left, right)
        return _bounded(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
        and node.args
    ):
        args = [_evaluate(arg) for arg in node.args]
        if node.func.id == "round":
            _check_round(args)
        return _bounded(_FUNCTIONS[node.func.id](*args))
    raise ToolError(f"not allowed in an expression: {ast.unparse(node)[:60]}")


def _check_power(base: int | float, exponent: int | float) -> None:
    if abs(exponent) > MAX_EXPONENT or (
        abs(base) > 1 and abs(exponent) * math.log10(abs(base)) > math.log10(MAX_MAGNITUDE)
    ):
        raise ToolError(TOO_LARGE)


def _check_product(left: int | float, right: int | float) -> None:
    """An integer product's size is known from its factors' bit lengths."""
    bits = MAX_MAGNITUDE.bit_length() + 1
    if (
        isinstance(left, int)
        and isinstance(right, int)
        and left.bit_length() + right.bit_length() > bits
    ):
        raise ToolError(TOO_LARGE)


def _check_round(args: list[int | float]) -> None:
    """round(x, -n) computes 10**n inside: `round(5, -10**7)` would take seconds."""
    if len(args) == 2 and isinstance(args[1], int) and abs(args[1]) > MAX_ROUND_DIGITS:
        raise ToolError(f"round() takes at most {MAX_ROUND_DIGITS} digits")


def _bounded(value: Any) -> int | float:
    if isinstance(value, complex):
        raise ToolError("the result is not a real number")
    if isinstance(value, float) and math.isnan(value):
        raise ToolError("the result is not a number")
    if isinstance(value, int | float) and abs(value) > MAX_MAGNITUDE:
        raise ToolError(TOO_LARGE)
    return value


def format_number(value: int | float) -> str:
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.12g}"
    return str(value)


# -- the simulated shell ----------------------------------------------------------------


class SimulatedShell:
    """A few read-only commands over the sandbox; no process is ever started."""

    COMMANDS = ("cat", "echo", "false", "grep", "head", "ls", "pwd", "tail", "true", "wc")

    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox

    def run(self, command: str) -> tuple[int, str]:
        try:
            argv = shlex.split(command)
        except ValueError as problem:
            return 2, f"sh: {problem}"
        if not argv:
            return 0, ""
        if any(token in ("|", "&&", ";", ">", ">>", "<") for token in argv):
            return 2, "sh: pipes and redirections are not supported in the demo shell"
        name, args = argv[0], argv[1:]
        if name not in self.COMMANDS:
            return (
                127,
                f"sh: {first_line(name, 60)}: command not found (try: {', '.join(self.COMMANDS)})",
            )
        if len(args) > MAX_SHELL_ARGS:
            return 2, f"{name}: too many arguments (at most {MAX_SHELL_ARGS})"
        try:
            code, output = getattr(self, "_" + name)(args)
        except ToolError as problem:
            return 1, f"{name}: {problem}"
        except ValueError as problem:  # e.g. `head -n x`
            return 2, f"{name}: invalid argument: {first_line(str(problem), 120)}"
        if len(output) > MAX_SHELL_OUTPUT:
            output = output[:MAX_SHELL_OUTPUT] + "\n… (output cut)"
        return code, output

    def _true(self, args: list[str]) -> tuple[int, str]:
        return 0, ""

    def _false(self, args: list[str]) -> tuple[int, str]:
        return 1, ""

    def _pwd(self, args: list[str]) -> tuple[int, str]:
        return 0, "/sandbox"

    def _echo(self, args: list[str]) -> tuple[int, str]:
        return 0, " ".join(args)

    def _ls(self, args: list[str]) -> tuple[int, str]:
        folder = self.sandbox.folder(args[0] if args else ".")
        names = sorted(
            entry.name + ("/" if entry.is_dir() else "")
            for entry in folder.iterdir()
            if not entry.name.startswith(".")
        )
        return 0, "\n".join(names)

    def _cat(self, args: list[str]) -> tuple[int, str]:
        if not args:
            return 1, "cat: missing file operand"
        return 0, "".join(self.sandbox.read_text(path)[1] for path in args).rstrip("\n")

    def _lines_option(self, args: list[str]) -> tuple[int, list[str]]:
        count, rest = 10, list(args)
        if rest[:1] == ["-n"] and len(rest) > 1:
            count, rest = int(rest[1]), rest[2:]
        elif rest and re.fullmatch(r"-\d+", rest[0]):
            count, rest = int(rest[0][1:]), rest[1:]
        return count, rest

    def _head(self, args: list[str]) -> tuple[int, str]:
        count, paths = self._lines_option(args)
        if not paths:
            return 1, "head: missing file operand"
        return 0, "\n".join(self.sandbox.read_text(paths[0])[1].splitlines()[:count])

    def _tail(self, args: list[str]) -> tuple[int, str]:
        count, paths = self._lines_option(args)
        if not paths:
            return 1, "tail: missing file operand"
        lines = self.sandbox.read_text(paths[0])[1].splitlines()
        return 0, "\n".join(lines[-count:] if count else [])

    def _wc(self, args: list[str]) -> tuple[int, str]:
        flags = [arg for arg in args if arg.startswith("-")]
        paths = [arg for arg in args if not arg.startswith("-")]
        if not paths:
            return 1, "wc: missing file operand"
        rows = []
        for path in paths:
            shown, text, size = self.sandbox.read_text(path)
            counts = {"-l": text.count("\n"), "-w": len(text.split()), "-c": size}
            picked = [counts[flag] for flag in flags if flag in counts] or list(counts.values())
            rows.append(" ".join(str(number) for number in picked) + f" {shown}")
        return 0, "\n".join(rows)

    def _grep(self, args: list[str]) -> tuple[int, str]:
        ignore_case = "-i" in args
        rest = [arg for arg in args if arg != "-i"]
        if len(rest) < 2:
            return 2, "usage: grep [-i] PATTERN FILE..."
        pattern, paths = rest[0], rest[1:]
        hits = []
        for path in paths:
            shown, text, _ = self.sandbox.read_text(path)
            for line in text.splitlines():
                haystack, needle = (
                    (line.lower(), pattern.lower()) if ignore_case else (line, pattern)
                )
                if needle in haystack:
                    hits.append(f"{shown}:{line}" if len(paths) > 1 else line)
        return (0, "\n".join(hits)) if hits else (1, "")


# -- the keyword planner -------------------------------------------------------------


@dataclass
class Planned:
    name: str
    args: dict[str, Any] = field(default_factory=dict)


#: A verb and the token after it; `_path_in` takes the path from the token. (One
#: regex for both backtracked quadratically on "read ....": 5 s for 20,000 dots,
#: on the event loop.)
_READ = re.compile(r"\b(?:read|open|cat|show)\s+(?:the\s+)?(?:file\s+)?([\w./-]+)")
_FOLDER = re.compile(r"[\w-]+/")


def plan_tools(text: str) -> list[Planned]:
    """Pick tools from the user's words. Fixed order; see KEYWORDS in demo.py."""
    lower = text.lower()
    plan: list[Planned] = []

    def has(*words: str) -> bool:
        return any(re.search(rf"\b{re.escape(word)}\b", lower) for word in words)

    if has("delegate", "subagent", "sub-agent"):
        # The whole request goes to the sub-agent, which plans its own tools.
        task = re.sub(r"\b(?:delegate|sub-?agent)\b[:,]?\s*", "", text, flags=re.I).strip()
        return [Planned("delegate", {"task": task or "list the files"})]
    if has("list", "ls", "files"):
        where = re.search(r"\b(?:in|under)\s+(?:the\s+)?([\w./-]+)", text, re.I)
        folder = where.group(1).strip("/") if where else "."
        if folder.lower() in ("", "sandbox", "root", "folder"):
            folder = "."
        plan.append(Planned("list_files", {"path": folder}))
    for path in _read_paths(text):
        plan.append(Planned("read_file", {"path": path}))
    search = re.search(
        r"\b(?:search|grep|find)\s+(?:for\s+)?[\"'“]?(.+?)[\"'”]?(?=\s+(?:in|and|then)\b|[,.?!]|$)",
        text,
        re.I,
    )
    if search and search.group(1).strip().lower() not in ("files", "the files"):
        plan.append(Planned("search_text", {"query": search.group(1).strip()}))
    calc = re.search(
        r"\b(?:calculate|calc|compute|evaluate)\s+(.+?)(?=\s+(?:and|then)\b|,\s|[?!]?\s*$)",
        text,
        re.I,
    )
    if calc:
        plan.append(Planned("calculate", {"expression": calc.group(1).strip()}))
    if has("slow", "progress"):
        plan.append(Planned("slow_task", {"steps": 5}))
    if has("command", "shell") or "`" in text:
        quoted = re.search(r"`([^`]+)`", text)
        plan.append(
            Planned(
                "run_command", {"command": quoted.group(1) if quoted else "wc -l notes/todo.txt"}
            )
        )
    url = re.search(r"https?://[^\s)>\"']+", text)
    if url or has("fetch", "download", "web"):
        plan.append(
            Planned(
                "fetch_url", {"url": url.group(0).rstrip(".,;") if url else "https://example.com/"}
            )
        )
    if has("stats", "words"):
        plan.append(Planned("word_stats", {"path": "README.md"}))
    if has("table", "csv", "cities"):
        plan.append(Planned("query_csv", {"path": "data/cities.csv", "limit": 10}))
    if has("image", "picture", "draw"):
        plan.append(Planned("image_generation", {"prompt": text.strip()[:200]}))
    if has("flaky", "retry"):
        plan.append(Planned("flaky_lookup", {"key": "features.retries"}))
    if has("fail", "failing", "broken"):
        plan.append(Planned("read_file", {"path": "notes/missing.txt"}))
    return plan


def _read_paths(text: str) -> list[str]:
    """The paths after read/open/cat/show, in order, in one linear pass."""
    paths: list[str] = []
    position = 0
    while (match := _READ.search(text, position)) is not None:
        path = _path_in(match.group(1))
        if path is None:
            position = match.start() + 1  # a verb may end this token: "x-read notes/a.txt"
        else:
            paths.append(path)
            position = match.start(1) + len(path)
    return paths


def _path_in(token: str) -> str | None:
    """The path a token starts with: up to its last word character when that much
    holds a "." or "/" ("notes/todo.txt", "a.py."), else a folder ("notes/")."""
    path = token.rstrip("./-")
    if "." in path or "/" in path:
        return path
    folder = _FOLDER.match(token)
    return folder.group() if folder else None


def first_line(text: str, limit: int = 120) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
