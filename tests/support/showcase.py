"""A conversation that exercises every render rule of docs/rendering.md#render-rules, as events.

Three runs: a completed one (batches, every result shape and kind, nesting,
a retry, hidden tool-args JSON, Markdown, the meta line), a failed one (S2) and
one still running (pending entries, progress, live output, statuses, streaming).
"""

from __future__ import annotations

from typing import Any

LONG_LINES = "\n".join(f"line {n}: {'x' * 20}" for n in range(1, 21))
THREE_KB = "A" * 3072
MARKDOWN = """Here is what I found:

| check | result |
|---|---|
| tests | 1 failing |
| lint | clean |

```python
def parse(text):
    return text.split(",")
```

See [the docs](https://example.org/docs) — thanks @alice."""


class Script:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.clock = 0

    def add(self, type_: str, run: str, **fields: Any) -> None:
        self.clock += 1
        minutes, seconds = divmod(self.clock, 60)
        self.events.append(
            {
                "type": type_,
                "run_id": run,
                "event_id": f"show-{len(self.events) + 1}",
                "timestamp": f"2026-11-02T10:{minutes:02d}:{seconds:02d}Z",
                **fields,
            }
        )

    def tool(
        self,
        run: str,
        call: str,
        name: str,
        args: dict | None = None,
        *,
        parent: str | None = None,
        attempt: int | None = None,
        max_attempts=None,
        **completed: Any,
    ) -> None:
        started: dict[str, Any] = {"tool_call_id": call, "tool_name": name, "args": args or {}}
        if parent:
            started["parent_tool_call_id"] = parent
        if attempt:
            started.update(attempt=attempt, max_attempts=max_attempts)
        self.add("agent.tool.started", run, **started)
        if completed:
            self.add("agent.tool.completed", run, tool_call_id=call, tool_name=name, **completed)


def showcase_events() -> list[dict[str, Any]]:
    s = Script()
    r1, r2, r3 = "run-1", "run-2", "run-3"
    # --- run 1: completed ---------------------------------------------------------
    s.add(
        "user.message",
        r1,
        message_id="u1",
        content="Show me everything <b>you</b> can do.\nSecond line stays a line.",
    )
    s.add("agent.status", r1, status="running")
    s.add("agent.status", r1, status="thinking", message="Planning…")
    s.add(
        "agent.step.completed",
        r1,
        message_id="a1",
        content='{"plan": ["ls", "cat"]}',
        tool_calls=[
            {"id": "c1", "name": "list_files", "args": {"path": "."}},
            {"id": "c2", "name": "read_file", "args": {"path": "notes.txt"}},
            {"id": "c3", "name": "run_cmd", "args": {"command": "make build"}},
            {"id": "c4", "name": "web_fetch"},
        ],
        duration_ms=400,
        tokens=120,
    )
    s.tool(r1, "c1", "list_files", {"path": "."}, result="README.md, src/, tests/", duration_ms=250)
    s.tool(
        r1,
        "c2",
        "read_file",
        {"path": "notes.txt"},
        result={"text": LONG_LINES, "details": {"kind": "file", "path": "notes.txt"}},
        duration_ms=12,
    )
    s.tool(
        r1,
        "c3",
        "run_cmd",
        {"command": "make build"},
        error="make: *** [build] Error 2",
        details={"kind": "command", "command": "make build", "exit_code": 2},
        duration_ms=1200,
    )
    s.tool(
        r1,
        "c4",
        "web_fetch",
        {"url": "https://example.org/big", "headers": {"a": "b"}},
        result=THREE_KB,
        details={"kind": "fetch", "url": "https://example.org/big", "status_code": 200},
        duration_ms=310,
    )
    s.add("agent.status", r1, status="info", message="Using the cached index")
    s.add(
        "agent.step.completed", r1, message_id="a2", content=MARKDOWN, duration_ms=900, tokens=300
    )
    s.tool(
        r1,
        "c5",
        "image_generation",
        {"prompt": "a cat"},
        result="SUCCESS: Generated 1 image",
        duration_ms=3500,
    )
    s.add("agent.step.completed", r1, message_id="a3", content="Now a sub-agent.")
    s.tool(
        r1,
        "c6",
        "sessions_spawn",
        {"task": "audit"},
        result={
            "text": "sub-agent finished",
            "details": {
                "kind": "subagent",
                "run_id": "sub-7",
                "states": ["queued", "running", "done"],
            },
        },
        duration_ms=5000,
    )
    s.tool(r1, "c7", "read_file", {"path": "a.txt"}, parent="c6", result="alpha", duration_ms=5)
    s.tool(
        r1, "c8", "search_text", {"query": "TODO"}, parent="c7", result="2 matches", duration_ms=8
    )
    s.tool(r1, "c9", "flaky_tool", {}, attempt=1, max_attempts=3, error="timeout")
    s.tool(r1, "c10", "flaky_tool", {}, attempt=2, max_attempts=3, result="ok on retry")
    s.tool(
        r1,
        "c11",
        "notify",
        {"to": "@bob"},
        result="pinged @alice <script>alert(1)</script>",
        details={"kind": "custom", "summary": "1 notification sent"},
    )
    s.add(
        "agent.step.completed",
        r1,
        message_id="a4",
        content="All done. One build step failed; see the red card.",
        duration_ms=1200,
        tokens=650,
    )
    s.add(
        "agent.continuation",
        r1,
        should_continue=False,
        stop_reason="end_turn",
        resolved_by="ModelStop",
    )
    s.add("agent.status", r1, status="completed")
    # --- run 2: failed --------------------------------------------------------------
    s.add("user.message", r2, message_id="u2", content="Now deploy it.")
    s.add("agent.status", r2, status="running")
    s.tool(r2, "d1", "deploy", {"env": "prod"}, error="credentials missing")
    s.add(
        "agent.status", r2, status="failed", error_message="Deployment failed: credentials missing"
    )
    # --- run 3: still running -----------------------------------------------------------
    s.add("user.message", r3, message_id="u3", content="Run the slow build.")
    s.add("agent.status", r3, status="running")
    s.add("agent.status", r3, status="thinking", message="Thinking…")
    s.add(
        "agent.step.completed",
        r3,
        message_id="a5",
        content="",
        tool_calls=[{"id": "e1", "name": "slow_build"}, {"id": "e2", "name": "run_tests"}],
    )
    s.tool(r3, "e1", "slow_build", {"target": "all"})
    s.add(
        "agent.tool.progress",
        r3,
        tool_call_id="e1",
        progress=0.4,
        output="compiling a.c\ncompiling b.c\n",
        message="→ linking step 2/5",
    )
    s.add("agent.status", r3, status="info", message="Build cache is cold")
    s.add("agent.message.delta", r3, message_id="a6", delta="Working on it")
    return s.events
