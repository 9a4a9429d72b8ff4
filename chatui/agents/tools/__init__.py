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
started/progress/completed events. The demo's keyword planner is
`chatui.agents.planner`.

Tool work never runs on the event loop, which serves every page and every run
of the process: a plain `def` tool runs on a worker thread, and an `async def`
tool (one that reports progress or runs other tools) hands its work to
`off_loop`. Each call is awaited under a time limit (`CHATUI_TOOL_TIMEOUT`), and
a Stop cancels the wait at once. A thread cannot be killed, and a big-integer
operation holds the GIL until it is done, so the work itself must be bounded
too: the calculator refuses operands whose results would be huge *before*
computing them, and the shell caps its arguments and output.

Modules: `base` (the tool contract), `sandbox`, `toolbox` (runs a call and reports
it), `builtin` (the tools and `TOOLS`), `calculator`, `shell`. This package
re-exports what the agents and the tests use.
"""

from .base import Tool, ToolEnv, ToolError, ToolOutcome, off_loop, params, validate_args
from .builtin import TOOLS
from .calculator import safe_eval
from .sandbox import SANDBOX_DIR, Sandbox
from .shell import SimulatedShell
from .toolbox import Toolbox

__all__ = [
    "SANDBOX_DIR",
    "TOOLS",
    "Sandbox",
    "SimulatedShell",
    "Tool",
    "ToolEnv",
    "ToolError",
    "ToolOutcome",
    "Toolbox",
    "off_loop",
    "params",
    "safe_eval",
    "validate_args",
]
