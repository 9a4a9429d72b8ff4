"""The built-in tools of the demo and OpenAI agents, and `TOOLS`, their list.

A tool is a function `(env, **args) -> result` where the result is a string, an
AgentSpine `{"text", "details"}` result [001] or any JSON value, and a `ToolError`
is the tool's error. Nothing here touches the network, runs a process or writes a file.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import mimetypes
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from chatui.agents.planner import Planned, plan_tools
from chatui.text import first_line, human_size

from .base import Result, Tool, ToolEnv, ToolError, off_loop, params
from .calculator import format_number, safe_eval
from .charts import cities_chart
from .sandbox import MAX_READ_BYTES, Sandbox
from .shell import SimulatedShell

MAX_SEARCH_HITS = 50
MAX_DELEGATE_DEPTH = 3


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


def chart_cities(env: ToolEnv, path: str = "data/cities.csv", limit: int = 8) -> Result:
    """docs/rendering.md#g21: a CSV's cities charted, answered as an MCP server answers (a
    `CallToolResult`: text, a PNG drawn here, a resource link, structured content)."""
    rows = query_csv(env, path, limit=min(max(1, limit), 20))
    return cities_chart([row for row in rows if isinstance(row, dict)])


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
    Tool(
        "chart_cities",
        "Chart the populations of a CSV's cities as a PNG bar chart, answered as an MCP "
        "tool result (text, image, a link to the source, structured content).",
        params(path={"type": "string"}, limit={"type": "integer", "minimum": 1, "maximum": 20}),
        chart_cities,
    ),
]
