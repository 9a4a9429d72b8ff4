"""The demo agent (default, `CHATUI_AGENT=demo`) and the showcase script.

No network, no model: the demo picks real tools from the user's words (see
`KEYWORDS`, also shown by its help answer), runs them over the read-only
sandbox folder, and streams a deterministic answer. Ids and content depend only
on the run id and the user's text; `delay` (seconds, `CHATUI_DEMO_DELAY`, 0 in
tests) only paces it for human eyes.

`ShowcaseAgent` plays a script that exercises every render rule of docs/rendering.md#render-rules;
the
`/showcase` page starts it with `runner.start_showcase`, and the demo agent plays
its main part when asked for "showcase" or "everything".
"""

from __future__ import annotations

import json
import re
import time

from chatui.ingest import approvals
from chatui.text import first_line, humanise_tool_name

from .approval import ask_approval, wait_for_decision
from .base import AgentError, RunContext, demo_delay, estimate_tokens
from .planner import Planned, plan_tools, wants
from .runner import db
from .showcase_rich import showcase_rich
from .tools import Sandbox, Toolbox, ToolOutcome

#: (words in the user's message, what the demo does, an example). The order of
#: the tool rows is the order in which the tools run.
KEYWORDS: list[tuple[str, str, str]] = [
    ("showcase, everything", "plays the showcase: every render rule", "show me everything"),
    ("crash", "fails the run on purpose (red banner)", "crash please"),
    (
        "delegate, subagent",
        "a sub-agent runs the rest; after 'then', a nested one",
        "delegate: list the files in notes, then read notes/todo.txt",
    ),
    ("list, ls, files", "`list_files` (folder after 'in')", "list the files in data"),
    ("read/open/cat/show PATH", "`read_file`", "read notes/todo.txt"),
    ("search/grep/find TEXT", "`search_text`", "search TODO"),
    ("calculate/calc/compute EXPR", "`calculate` (ast, no eval)", "calculate (2+3)*4"),
    ("slow, progress", "`slow_task` with a progress bar and live output", "run something slow"),
    ("command, shell, `CMD`", "`run_command` in a simulated shell", "run `wc -l data/server.log`"),
    ("fetch, web, a URL", "`fetch_url` (simulated, canned pages)", "fetch https://example.com/"),
    ("stats, words", "`word_stats` (a custom-kind result)", "word stats"),
    ("table, csv, cities", "`query_csv` (a JSON result)", "show the cities table"),
    ("image, picture, draw", "`image_generation` (progress lines)", "draw a lighthouse"),
    ("chart, plot, mcp", "`chart_cities`: an MCP result with a PNG chart", "chart the cities"),
    (
        "flaky, retry",
        "`flaky_lookup`: fails, then succeeds on attempt 2 of 3",
        "try the flaky tool",
    ),
    ("fail, broken", "a tool that errors (a missing file)", "make a tool fail"),
    (
        "delete/remove PATH",
        "`delete_file`: asks you first (Approve / Deny), then simulates it",
        "delete notes/todo.txt",
    ),
]

#: docs/events.md#approvals: the demo's one destructive tool waits this long for a person.
DELETE_APPROVAL_TIMEOUT_S = 120
DELETE_TARGET = re.compile(r"\b(?:delete|remove)\s+(?:the\s+file\s+)?(?P<path>[\w./-]+)", re.I)


class DemoAgent:
    name = "demo"
    #: Messages sent during a run are acknowledged and folded into its answer.
    accepts_interjections = True

    def __init__(self, *, delay: float | None = None, sandbox: Sandbox | None = None):
        self.delay = demo_delay() if delay is None else delay
        self.toolbox = Toolbox(sandbox)

    async def run(self, ctx: RunContext) -> None:
        text = ctx.user_text
        if wants(text, "showcase", "everything"):
            await showcase_main(ctx, self.toolbox)
            return
        await ctx.thinking("Reading your message…")
        await ctx.pause()
        if wants(text, "crash"):
            raise AgentError("The demo agent crashed on purpose, as you asked. History is kept.")
        if wants(text, "delete", "remove"):
            await self._delete_with_approval(ctx)
            return
        plan = plan_tools(text)
        if not plan:
            await self._help(ctx)
            return
        outcomes, notes = await self._use_tools(ctx, plan)
        failed = sum(1 for outcome in outcomes if not outcome.ok)
        await ctx.info(
            f"{len(outcomes)} tool call{'s' if len(outcomes) != 1 else ''} finished"
            + (f", {failed} failed" if failed else "")
        )
        await ctx.pause()
        notes += ctx.take_interjections()
        answer = compose_answer(outcomes, notes)
        final = ctx.assistant()
        await final.stream(answer)
        await final.complete(
            duration_ms=round((time.monotonic() - ctx.started) * 1000),
            tokens=estimate_tokens(text, answer, *(o.text for o in outcomes)),
        )
        await ctx.continuation(
            should_continue=False, stop_reason="end_turn", resolved_by="DemoAgent"
        )

    async def _use_tools(
        self, ctx: RunContext, plan: list[Planned]
    ) -> tuple[list[ToolOutcome], list[str]]:
        calls = [self.toolbox.call(ctx, step.name, step.args) for step in plan]
        step = ctx.assistant()
        preface = (
            "Let me use a tool for that."
            if len(calls) == 1
            else f"Let me use {len(calls)} tools for that."
        )
        await step.stream(preface)
        await step.complete(tool_calls=calls, tokens=estimate_tokens(ctx.user_text, preface))
        outcomes, notes = [], []
        for call in calls:
            await ctx.pause()
            outcomes.append(await self.toolbox.execute_with_retry(call))
            for note in ctx.take_interjections():
                notes.append(note)
                await ctx.info(f"Noted while working: {first_line(note, 80)}")
        return outcomes, notes

    async def _delete_with_approval(self, ctx: RunContext) -> None:
        """docs/events.md#approvals: the demo's one destructive tool asks a person before it
        runs."""
        found = DELETE_TARGET.search(ctx.user_text)
        path = found.group("path") if found else "notes/todo.txt"
        step = ctx.assistant()
        preface = f"Deleting `{path}` cannot be undone, so I'll ask you first."
        await step.stream(preface)
        call = ctx.tool("delete_file", {"path": path})
        await step.complete(tool_calls=[call], tokens=estimate_tokens(ctx.user_text, preface))
        decision = await ask_approval(
            call, reason=f"Deletes {path} from the sandbox", timeout_s=DELETE_APPROVAL_TIMEOUT_S
        )
        if decision.decision == "approved":
            await call.start()
            await ctx.pause()
            # The sandbox is read-only (every demo shares it): the deletion is simulated.
            await call.succeed(
                f"deleted {path} (simulated: the demo sandbox is read-only)",
                details={"kind": "file", "path": path},
            )
            answer = f"Done: `{path}` is deleted (simulated), as {decision.decided_by} approved."
        elif decision.decision == "denied":
            reason = f": {decision.note}" if decision.note else "."
            answer = f"I left `{path}` alone — {decision.decided_by} denied it{reason}"
        else:
            answer = f"Nobody decided in time, so I left `{path}` alone (the request expired)."
        final = ctx.assistant()
        await final.stream(answer)
        await final.complete(tokens=estimate_tokens(answer))
        await ctx.continuation(
            should_continue=False, stop_reason="end_turn", resolved_by="DemoAgent"
        )

    async def _help(self, ctx: RunContext) -> None:
        answer = help_text()
        turn = ctx.assistant()
        await turn.stream(answer, words_per_chunk=8)
        await turn.complete(tokens=estimate_tokens(ctx.user_text, answer))
        await ctx.continuation(
            should_continue=False, stop_reason="end_turn", resolved_by="DemoAgent"
        )


def help_text() -> str:
    rows = "\n".join(f"| {words} | {does} | `{example}` |" for words, does, example in KEYWORDS)
    return (
        "I'm the demo agent: no model, no network, just real tools over a read-only "
        "sandbox folder. Say one or more of these words and I'll use the matching tools:\n\n"
        "| say | I do | e.g. |\n|---|---|---|\n"
        f"{rows}\n\n"
        "For example:\n\n```text\nlist the files, read notes/todo.txt and calculate 2+3*4\n```\n"
    )


def compose_answer(outcomes: list[ToolOutcome], notes: list[str] | None = None) -> str:
    lines = ["Here is what the tools returned:", ""]
    for outcome in outcomes:
        call = outcome.call
        argument = next(iter(call.args.values()), None) if call.args else None
        shown_arg = f" `{first_line(str(argument), 60)}`" if argument not in (None, "") else ""
        retried = (
            f" (attempt {call.attempt} of {call.max_attempts})"
            if call.attempt and call.attempt > 1
            else ""
        )
        if outcome.ok:
            lines.append(
                f"- **{humanise_tool_name(call.name)}**{shown_arg}{retried}: {_gist(outcome)}"
            )
        else:
            lines.append(
                f"- **{humanise_tool_name(call.name)}**{shown_arg} failed: {outcome.error}"
            )
    if notes:
        lines += ["", "You also said, while I was working:"]
        lines += [f"> {first_line(note, 200)}" for note in notes]
    return "\n".join(lines)


def _gist(outcome: ToolOutcome) -> str:
    text = outcome.text
    count = len(text.splitlines())
    gist = first_line(text, 100).replace("`", "'")
    return f"{gist} (+{count - 1} more lines)" if count > 1 else gist


# -- the showcase ----------------------------------------------------------------------

SHOWCASE_INTRO = """## The chatui showcase

This run exercises **every render rule**. Assistant text is *Markdown*,
sanitised on the server:

| rule | what you see |
|---|---|
| R2 | this message: Markdown, tables, code |
| G1 | tool calls grouped into batches |
| S1 | the meta line under this message |

```python
def greet(name):
    return f"Hello, {name}!"  # the copy button copies this
```

A [link](https://example.com/), an external image that stays a link:
![chart](https://example.com/chart.png), and raw HTML that stays inert:
<script>alert("no")</script> <img src=x onerror="alert(1)">
"""

SHOWCASE_OUTRO = """That was the whole tour:

1. **Roles** — your bubbles (R1), Markdown answers (R2), hidden JSON with tool calls (R3), \
tool entries (R4) and inline statuses (R5).
2. **Batches** — one block per run of tools with a live count (G1, G2), call lines (G3), \
inline and block results with truncation (G4), pending entries (G5), errors that open \
their batch (G6), durations (G7), full JSON on demand (G8), result kinds (G9), stable \
titles and real output (G10, G11), progress (G12), nesting (G13) and retries (G14).
3. **Output as people read it** — terminal colours (G17), diffs and patches (G18), \
highlighted code (G19), tables and key/value lists (G20).
4. **Hygiene** — everything escaped, and `@` in tool text can never mention anyone (T1).

The thinking and info lines disappear now that the run is complete (S3); the next run \
fails on purpose to show the red banner (S2)."""


SHOWCASE_CLOSING = """You're welcome. The failed run above stays in the history, \
red banner and all (S2); this short run completes, so the conversation ends completed."""


class ShowcaseAgent:
    """Plays the showcase script. `part="failure"` is the short second run (S2),
    `part="closing"` the third, which completes."""

    name = "showcase"
    accepts_interjections = False

    def __init__(
        self, *, delay: float | None = None, part: str = "main", sandbox: Sandbox | None = None
    ):
        self.delay = demo_delay() if delay is None else delay
        self.part = part
        self.toolbox = Toolbox(sandbox)

    async def run(self, ctx: RunContext) -> None:
        if self.part == "failure":
            await showcase_failure(ctx, self.toolbox)
        elif self.part == "closing":
            await showcase_closing(ctx)
        else:
            await showcase_main(ctx, self.toolbox)


async def showcase_main(ctx: RunContext, tb: Toolbox) -> None:
    """Every render rule of docs/rendering.md#render-rules in one completed run (rule ids in
    comments)."""
    await ctx.thinking("Planning the showcase…")  # R5 thinking
    await ctx.pause(2)

    intro = ctx.assistant()  # R2 Markdown, SEC1/SEC2 inert HTML and images
    await intro.stream(SHOWCASE_INTRO)
    await intro.complete(duration_ms=1200, tokens=650)  # S1 "1.2s · 650 tokens"
    await ctx.pause()

    # R3: the model "speaks" JSON while calling tools: streamed, never shown.
    calls = [
        tb.call(ctx, "list_files", {"path": "."}),  # G4 inline "→", G7 "250 ms"
        tb.call(ctx, "read_file", {"path": "README.md"}),  # long multi-line, G9 file, "1.2 s"
        tb.call(ctx, "search_text", {"query": "@"}),  # T1 @mentions in output and args
        tb.call(ctx, "fetch_url", {"url": "https://example.com/"}),  # >80-char line, G9 fetch
        tb.call(ctx, "query_csv", {"path": "data/cities.csv"}),  # 3.5 KB JSON on one line
        tb.call(ctx, "read_file", {"path": "data/server.log"}),  # 3 KB over 56 lines
        tb.call(ctx, "calculate", {"expression": "2 + 3 * 4"}, args_summary="2 + 3 * 4"),  # G3
    ]
    planning = ctx.assistant()
    await planning.stream(
        json.dumps({"tool_calls": [{"name": c.name, "arguments": c.args} for c in calls[:3]]}),
        words_per_chunk=3,
    )
    await planning.complete(tool_calls=calls, tokens=120)  # G5: all queued at once
    for call, duration_ms in zip(calls, [250, 1200, 40, 830, 95, 60, 3], strict=True):
        await ctx.pause()  # G2: the header count grows as each one starts
        await tb.execute(call, duration_ms=duration_ms)

    await ctx.pause()
    await ctx.user_message(  # G1: a user message ends a batch
        "(showcase) A message sent in the middle of a run: the next tools form a new batch."
    )
    await ctx.thinking("Generating an image…")
    await ctx.pause()

    single = ctx.assistant()  # G1 batch of one, G10 stable title, G11 real output, G12
    await single.stream("A single tool call is one card, titled with the tool's name:")
    image = tb.call(ctx, "image_generation", {"prompt": "a lighthouse at dusk"})
    await single.complete(tool_calls=[image], tokens=45)
    await tb.execute(image, duration_ms=2400)
    await ctx.pause()

    kinds = ctx.assistant()
    await kinds.stream(
        "Now results of every kind, a sub-agent with a nested sub-agent, a retry and two errors:"
    )
    legacy = ctx.tool("legacy_lookup", {"record": 42})  # posted in AgentSpine's dialect [001]
    calls = [
        tb.call(ctx, "read_file", {"path": "notes/todo.txt"}),  # G9 file
        tb.call(ctx, "run_command", {"command": "grep ERROR data/server.log"}),  # G9 exit 0
        tb.call(ctx, "run_command", {"command": "grep CRITICAL data/server.log"}),  # exit 1
        tb.call(ctx, "run_command", {"command": "echo '<b>not bold</b> @bob'"}),  # T1
        tb.call(ctx, "fetch_url", {"url": "https://example.com/missing"}),  # G9 fetch 404
        tb.call(  # G9 subagent, G13 two levels deep
            ctx, "delegate", {"task": "list the files in notes, then read notes/todo.txt"}
        ),
        tb.call(ctx, "word_stats", {"path": "README.md"}),  # G9 custom: details.summary
        legacy,  # G9 unknown kind: the result preview
        tb.call(ctx, "flaky_lookup", {"key": "features.retries"}),  # G14 retry 2/3
        tb.call(ctx, "calculate", {"expression": "1 / 0"}),  # G6 error
        tb.call(ctx, "read_file", {"path": "../../settings.py"}),  # G6: the sandbox holds
    ]
    await kinds.complete(tool_calls=calls, tokens=210)
    for call in calls:
        await ctx.pause()
        if call is legacy:
            await _agentspine_tool(ctx, legacy)
        else:
            await tb.execute_with_retry(call)

    await showcase_rich(ctx)
    await ctx.pause()
    await ctx.info("Tip: open a batch, then “details” for the full arguments and result (G8).")
    await ctx.pause(2)
    outro = ctx.assistant()
    await outro.stream(SHOWCASE_OUTRO)
    await outro.complete(duration_ms=round((time.monotonic() - ctx.started) * 1000), tokens=1830)
    # R5 "Agent stopped: max_turns": a reason worth a line (a normal end_turn adds none, W6).
    await ctx.continuation(
        should_continue=False, stop_reason="max_turns", resolved_by="ShowcaseScript"
    )


async def _agentspine_tool(ctx: RunContext, call) -> None:
    """AgentSpine's `tool_execution_start`/`_end` [001], accepted as aliases."""
    await ctx.emit(
        {
            "type": "tool_execution_start",
            "tool_name": call.name,
            "tool_call_id": call.id,
            "args": call.args,
        }
    )
    await ctx.pause()
    await ctx.emit(
        {
            "type": "tool_execution_end",
            "tool_name": call.name,
            "tool_call_id": call.id,
            "result_preview": "record 42: status=active, owner=@carol",
            "details": {"kind": "telemetry", "trace": {"spans": 3}},
            "is_error": False,
        }
    )


#: docs/events.md#approvals in the showcase: how long its unanswered request waits before it
#: expires.
SHOWCASE_EXPIRY_S = 2
SHOWCASE_REVIEWER = "showcase script"


async def showcase_approvals(ctx: RunContext) -> None:
    """docs/events.md#approvals's three outcomes. The showcase cannot wait for you, so a reviewer
    that says what it is ("showcase script") approves one and denies one; nobody answers the
    third, and the server expires it."""
    step = ctx.assistant()
    await step.stream("Some tools ask a person first: approved, denied, expired.")
    calls = [
        ctx.tool("delete_file", {"path": "notes/old-draft.txt"}),
        ctx.tool("run_command", {"command": "rm -rf data/"}),
        ctx.tool("send_email", {"to": "everyone@example.com", "subject": "Release"}),
    ]
    await step.complete(tool_calls=calls, tokens=40)
    asks = [
        ("Deletes a draft from the sandbox", "approved", ""),
        ("Removes the whole data folder", "denied", "too risky"),
        ("Emails every customer", None, ""),
    ]
    for call, (reason, verdict, note) in zip(calls, asks, strict=True):
        await ctx.emit(
            {
                "type": "agent.tool.approval_requested",
                "tool_call_id": call.id,
                "tool_name": call.name,
                "args": call.args,
                "reason": reason,
                "timeout_s": SHOWCASE_EXPIRY_S if verdict is None else 600,
            }
        )
        await ctx.pause()
        if verdict is not None:
            await db(approvals.decide_as)(
                ctx.conversation, call.id, verdict, SHOWCASE_REVIEWER, note
            )
    await wait_for_decision(ctx.conversation_id, calls[2].id)  # the server expires it
    await calls[0].start()
    await ctx.pause()
    await calls[0].succeed(
        "deleted notes/old-draft.txt (simulated)",
        details={"kind": "file", "path": "notes/old-draft.txt"},
        duration_ms=20,
    )


async def showcase_failure(ctx: RunContext, tb: Toolbox) -> None:
    """The second run: tool approval's three outcomes (docs/events.md#approvals), then it ends
    `failed`, so the page shows the red banner (S2)."""
    await showcase_approvals(ctx)
    await ctx.thinking("Calling the model…")
    await ctx.pause()
    step = ctx.assistant()
    await step.stream("Let me check the model endpoint first.")
    call = tb.call(ctx, "fetch_url", {"url": "https://example.com/slow"})
    await step.complete(tool_calls=[call], tokens=30)
    await tb.execute(call, duration_ms=5000)
    await ctx.pause()
    raise AgentError(
        "The model endpoint answered HTTP 504 Gateway Timeout (simulated for the showcase). "
        "The history above is kept."
    )


async def showcase_closing(ctx: RunContext) -> None:
    """The third run: a short streamed answer that completes, so the conversation's
    latest run (and its list row) is completed while the failure stays above."""
    await ctx.pause()
    answer = ctx.assistant()
    await answer.stream(SHOWCASE_CLOSING)
    await answer.complete(tokens=estimate_tokens(SHOWCASE_CLOSING))
