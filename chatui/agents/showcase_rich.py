"""docs/rendering.md#rich-output in the showcase: one tool call per rich renderer (G17–G21),
played by the demo agent's showcase (chatui.agents.demo) before its outro."""

from __future__ import annotations

from typing import Any

from .base import RunContext
from .tools.charts import cities_chart, rows_of

#: docs/rendering.md#rich-output in the showcase: a test run's colours (G17), a failed
#: build that keeps its colours, a patch and a diff (G18), a Python file (G19), records (G20).
RICH_TEST_RUN = (
    "\x1b[1m============ test session starts ============\x1b[0m\n"
    "collected 4 items\n\n"
    "tests/test_app.py::test_home \x1b[32mPASSED\x1b[0m\n"
    "tests/test_app.py::test_login \x1b[32mPASSED\x1b[0m\n"
    "tests/test_app.py::test_slow \x1b[33mSKIPPED\x1b[0m (needs network)\n"
    "tests/test_app.py::test_escape \x1b[32mPASSED\x1b[0m <script>alert(1)</script>\n"
    "downloading 0%\rdownloading 40%\rdownloading 100%\n"
    "\x1b[32m======= 3 passed, 1 skipped in 0.42s =======\x1b[0m"
)
RICH_BUILD_FAILURE = (
    "\x1b[36mcc\x1b[0m -c app.c -o app.o\n"
    "\x1b[1mapp.c:12:5:\x1b[0m \x1b[35mwarning:\x1b[0m unused variable 'n'\n"
    "\x1b[36mcc\x1b[0m app.o -o app\n"
    "make: *** [Makefile:4: app] Error 1"
)
RICH_PATCH = (
    "*** Begin Patch\n"
    "*** Update File: src/greet.py\n"
    "@@ def greet(name):\n"
    '-    return "Hello " + name\n'
    '+    return f"Hello, {name}!"\n'
    "*** End Patch"
)
RICH_DIFF = (
    "diff --git a/README.md b/README.md\n"
    "--- a/README.md\n"
    "+++ b/README.md\n"
    "@@ -1,4 +1,5 @@\n"
    " # chatui\n"
    "-Watch agents work.\n"
    "+Watch AI agents work, live.\n"
    "+Audit what they did afterwards.\n"
    " \n"
    " ## Run it\n"
)
RICH_CODE = (
    '"""Greetings, with <b>markup</b> that stays text."""\n'
    "\n"
    "from dataclasses import dataclass\n"
    "\n"
    "\n"
    "@dataclass\n"
    "class Greeter:\n"
    "    name: str\n"
    "\n"
    "    def greet(self, times: int = 1) -> str:\n"
    '        return ", ".join(f"Hello, {self.name}!" for _ in range(times))\n'
)
RICH_CSV = (
    "city,country,population\nTokyo,Japan,37400068\nDelhi,India,28514000\nShanghai,China,25582000\n"
)
RICH_USERS = [
    {"id": 1, "name": "Ada", "email": "ada@example.com", "logins": 42},
    {"id": 2, "name": "<i>Grace</i>", "email": "grace@example.com", "logins": 7},
    {"id": 3, "name": "Linus", "email": "linus@example.com", "logins": 1234},
]


#: (tool name, args, result, details) of each call, in order.
PLAYS: list[tuple[str, dict[str, Any], Any, dict[str, Any] | None]] = [
    ("run_tests", {"command": "pytest -q"}, RICH_TEST_RUN, {"kind": "command", "exit_code": 0}),
    ("run_command", {"command": "make"}, RICH_BUILD_FAILURE, {"kind": "command", "exit_code": 1}),
    ("apply_patch", {"input": RICH_PATCH}, "Done. Updated src/greet.py", None),
    ("git_diff", {"path": "README.md"}, RICH_DIFF, None),
    (
        "edit_file",
        {"path": "config.toml"},
        "edited config.toml",
        {
            "kind": "edit",
            "path": "config.toml",
            "old": "debug = true\nport = 80\n",
            "new": "debug = false\nport = 8080\n",
        },
    ),
    ("read_file", {"path": "src/greet.py"}, RICH_CODE, {"kind": "file", "path": "src/greet.py"}),
    ("query_db", {"sql": "select * from users"}, RICH_USERS, None),
    ("export_csv", {"table": "cities"}, RICH_CSV, None),
    (
        "lookup_user",
        {"id": 7},
        {"id": 7, "name": "Ada", "bio": "Wrote programs.\nLikes engines."},
        None,
    ),
]
# G21: an MCP server's answer (a CallToolResult with a PNG chart, a link, structured content)
PLAYS.append(("chart_cities", {"path": "data/cities.csv", "limit": 3}, None, None))
INTRO = "Tool output as people read it: a terminal, diffs, code, records and an MCP result:"


async def showcase_rich(ctx: RunContext) -> None:
    """docs/rendering.md#rich-output: one call per renderer."""
    step = ctx.assistant()
    await step.stream(INTRO)
    calls = [ctx.tool(name, args) for name, args, _, _ in PLAYS]
    await step.complete(tool_calls=calls, tokens=90)
    for call, (_, _, result, details) in zip(calls, PLAYS, strict=True):
        await ctx.pause()
        await call.start()
        if result is None:  # G21: drawn when played (a PNG of a few KB, base64 in the event)
            result = cities_chart(rows_of(RICH_CSV))
        await call.succeed(result, details=details, duration_ms=120)
