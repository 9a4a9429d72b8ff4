"""The demo agent, its tools and the showcase (docs/events.md#agents, docs/rendering.md#render-rules
coverage by the script).

Runs are driven for real: `start_run` on an asyncio loop, events through
`ingest` in the worker thread, assertions on the resulting Messages and Events.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model

from chatui.agents import start_run, start_showcase, wait_for_run
from chatui.agents.base import RunContext, chunk_words
from chatui.agents.demo import KEYWORDS, DemoAgent, help_text
from chatui.agents.planner import plan_tools
from chatui.agents.showcase import SHOWCASE_CLOSING_PROMPT, SHOWCASE_FAILURE_PROMPT, SHOWCASE_OPENER
from chatui.agents.tools import (
    SANDBOX_DIR,
    Sandbox,
    SimulatedShell,
    Tool,
    Toolbox,
    ToolError,
    params,
    safe_eval,
)
from chatui.models import Conversation, Event, Message, Run
from chatui.text import humanise_tool_name

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user(db):
    """conftest's user without the (deliberately slow) password hashing."""
    return get_user_model().objects.create(username="alice")


def run_agent(conversation, text, agent, run_id=None) -> str:
    async def main() -> str:
        started = start_run(conversation, text, agent=agent, run_id=run_id)
        assert await wait_for_run(conversation.pk, timeout=30)
        return started

    return asyncio.run(main())


def messages(conversation) -> list[Message]:
    return list(Message.objects.filter(conversation=conversation).order_by("position"))


def tools(conversation) -> list[Message]:
    return [m for m in messages(conversation) if m.role == "tool"]


def events(conversation, run_id=None) -> list[Event]:
    found = Event.objects.filter(conversation=conversation).order_by("seq")
    return list(found.filter(run_id=run_id) if run_id else found)


# -- the showcase: every render rule ------------------------------------------------------


def test_everything_run_exercises_every_render_rule(conversation):
    """One "everything" run (it is the slow part of this file), checked rule by rule."""
    run_id = run_agent(conversation, "show me everything", DemoAgent(delay=0))
    everything = (conversation, run_id)
    check_run_completes_with_ids_derived_from_the_run_id(everything)
    check_tool_results_of_every_status_and_kind(everything)
    check_nesting_two_levels_retries_and_errors(everything)
    check_result_shapes_g4_and_t1(everything)
    check_progress_output_and_stable_title(everything)
    check_roles_batches_statuses_and_meta(everything)


def check_run_completes_with_ids_derived_from_the_run_id(everything):
    conversation, run_id = everything
    run = Run.objects.get(conversation=conversation, run_id=run_id)
    assert run.status == "completed"
    conversation.refresh_from_db()
    assert conversation.status == "completed"
    log = events(conversation, run_id)
    assert log[0].type == "agent.status" and log[0].payload["status"] == "running"
    assert log[-1].type == "agent.status" and log[-1].payload["status"] == "completed"
    assert [e.event_id for e in log] == [f"{run_id}.e{n}" for n in range(1, len(log) + 1)]
    ours = [m for m in messages(conversation) if m.role != "status"]  # status ids: the seq's
    assert all(m.message_id.startswith((run_id, f"tool_{run_id}")) for m in ours)


def check_tool_results_of_every_status_and_kind(everything):
    conversation, _ = everything
    entries = tools(conversation)
    assert {m.tool_status for m in entries} == {"success", "error"}
    kinds = {m.metadata.get("details", {}).get("kind") for m in entries}
    assert {"file", "command", "fetch", "subagent", "custom", "telemetry"} <= kinds
    # every tool was queued by its step before it started (G5)
    log = events(conversation)
    queued_at = {}
    for event in log:
        if event.type == "agent.step.completed":
            for call in event.payload.get("tool_calls", []):
                queued_at[call["id"]] = event.seq
    started_at = {e.tool_call_id: e.seq for e in log if e.type == "agent.tool.started"}
    assert queued_at and all(queued_at[c] < started_at[c] for c in queued_at if c in started_at)
    exits = {
        m.metadata["details"]["exit_code"]
        for m in entries
        if m.metadata.get("details", {}).get("kind") == "command"
    }
    assert exits == {0, 1}  # G9: a non-zero exit code is shown as a failure
    fetches = {m.metadata["details"]["status_code"] for m in entries if m.tool_name == "fetch_url"}
    assert fetches == {200, 404}


def check_nesting_two_levels_retries_and_errors(everything):
    conversation, _ = everything
    entries = {m.tool_call_id: m for m in tools(conversation)}

    def depth(message: Message) -> int:
        parent = message.parent_tool_call_id
        return 0 if not parent else 1 + depth(entries[parent])

    assert max(depth(m) for m in entries.values()) == 2  # G13
    grandchild = next(m for m in entries.values() if depth(m) == 2)
    assert grandchild.metadata["parent_tool_call_id"] == grandchild.parent_tool_call_id
    assert entries[grandchild.parent_tool_call_id].tool_name == "delegate"

    flaky = [m for m in entries.values() if m.tool_name == "flaky_lookup"]  # G14
    assert [(m.metadata["attempt"], m.metadata["max_attempts"], m.tool_status) for m in flaky] == [
        (1, 3, "error"),
        (2, 3, "success"),
    ]
    assert flaky[0].tool_call_id != flaky[1].tool_call_id
    errors = {m.tool_name: m.content for m in entries.values() if m.tool_status == "error"}
    assert errors["calculate"] == "division by zero"  # G6
    assert errors["read_file"].startswith("path escapes the sandbox")


def check_result_shapes_g4_and_t1(everything):
    conversation, _ = everything
    contents = [m.content for m in tools(conversation)]
    assert any("\n" not in c and len(c) <= 80 for c in contents)  # inline "→"
    assert any("\n" not in c and 80 < len(c) < 500 for c in contents)  # long single line
    assert any(c.count("\n") > 8 for c in contents)  # "… (N more lines)"
    assert any(len(c.encode()) >= 3000 and "\n" not in c for c in contents)  # "(truncated, 3 KB)"
    assert any(len(c.encode()) >= 3000 and c.count("\n") > 40 for c in contents)
    assert any("@alice" in c for c in contents)  # T1: must be neutralised when rendered
    assert any("<b>not bold</b> @bob" in c for c in contents)
    assert any(m.metadata.get("args_summary") == "2 + 3 * 4" for m in tools(conversation))  # G3
    json_result = next(m for m in tools(conversation) if m.tool_name == "query_csv")
    assert isinstance(json_result.metadata["tool_result"], list)  # compact JSON content
    assert json.loads(json_result.content)[0]["city"] == "Tokyo"


def check_progress_output_and_stable_title(everything):
    conversation, _ = everything
    image = next(m for m in tools(conversation) if m.tool_name == "image_generation")
    assert image.content == "SUCCESS: Generated 1 image"  # G11 real output
    assert humanise_tool_name(image.tool_name) == "Image Generation"  # G10
    progress = [
        e.payload
        for e in events(conversation)
        if e.type == "agent.tool.progress" and e.tool_call_id == image.tool_call_id
    ]
    fractions = [p["progress"] for p in progress if "progress" in p]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0  # G12
    assert sum(1 for p in progress if p.get("output")) >= 3
    assert all(p["message"].startswith("→ ") for p in progress)  # G11
    assert image.metadata["progress"] == 1.0 and image.metadata["output"].count("\n") >= 3


def check_roles_batches_statuses_and_meta(everything):
    conversation, _ = everything
    found = messages(conversation)
    assistants = [m for m in found if m.role == "assistant"]
    intro = assistants[0]
    assert "| rule |" in intro.content and "```python" in intro.content  # R2
    assert intro.metadata["duration_ms"] == 1200 and intro.metadata["tokens"] == 650  # S1
    hidden = [m for m in assistants if m.metadata.get("tool_calls")]
    assert any(m.content.startswith("{") for m in hidden)  # R3: JSON content with tool_calls
    sizes = sorted(len(m.metadata["tool_calls"]) for m in hidden)
    assert sizes[0] == 1 and sizes[-1] >= 7  # G1: a batch of one and batches of many
    assert [m.role for m in found].count("user") == 1  # the mid-run message (G1 split)
    statuses = [m for m in found if m.role == "status"]
    # S3: ephemerals removed; R5: the continuation stays — the showcase stops for a reason
    # worth a line (`max_turns`), where a normal end (`end_turn`) would add none (W6)
    assert [(m.status_type, m.content) for m in statuses] == [
        ("continuation", "Agent stopped: max_turns")
    ]
    types = [e.payload.get("status") for e in events(conversation) if e.type == "agent.status"]
    assert {"thinking", "info"} <= set(types)  # R5: they were shown while running
    aliases = [e for e in events(conversation) if e.tool_call_id and e.payload.get("details")]
    assert any(e.payload["details"].get("kind") == "telemetry" for e in aliases)  # [001] alias
    assert assistants[-1].metadata["tokens"] > 0 and "duration_ms" in assistants[-1].metadata


def test_showcase_plays_a_completed_a_failed_and_a_closing_completed_run(conversation):
    async def main() -> str:
        run_id = start_showcase(conversation, delay=0)
        assert await wait_for_run(conversation.pk, timeout=30)
        return run_id

    run_id = asyncio.run(main())
    runs = list(Run.objects.filter(conversation=conversation).order_by("started_seq"))
    assert [(r.run_id, r.status) for r in runs] == [
        (run_id, "completed"),
        (f"{run_id}-2", "failed"),
        (f"{run_id}-3", "completed"),
    ]
    assert "504 Gateway Timeout" in runs[1].error_message  # S2
    users = [m.content for m in messages(conversation) if m.role == "user"]
    assert users[0] == SHOWCASE_OPENER and "\n" in users[0] and "<b>" in users[0]  # R1
    assert users[2:] == [SHOWCASE_FAILURE_PROMPT, SHOWCASE_CLOSING_PROMPT]
    banner = [m for m in messages(conversation) if m.status_type == "error"]
    assert len(banner) == 1 and banner[0].content == runs[1].error_message  # the history stays
    closing = [m for m in messages(conversation) if m.run_id == runs[2].run_id]
    assert closing[-1].role == "assistant" and closing[-1].is_final
    assert "stays in the history" in closing[-1].content
    conversation.refresh_from_db()
    assert conversation.status == "completed"


def test_the_demo_is_deterministic(user):
    def transcript(conversation):
        rows = []
        for m in messages(conversation):
            meta = {
                k: v
                for k, v in m.metadata.items()
                if k not in ("duration_ms", "tool_duration_ms", "tokens")
            }
            rows.append((m.message_id, m.role, m.content, json.dumps(meta, sort_keys=True)))
        return rows

    first = Conversation.objects.create(owner=user)
    second = Conversation.objects.create(owner=user)
    text = "list the files, read notes/todo.txt, calculate 6*7, go slow and try the flaky tool"
    run_agent(first, text, DemoAgent(delay=0), run_id="run_same")
    run_agent(second, text, DemoAgent(delay=0), run_id="run_same")
    assert transcript(first) == transcript(second)
    assert [(e.type, e.event_id) for e in events(first)] == [
        (e.type, e.event_id) for e in events(second)
    ]


# -- the demo's keywords -----------------------------------------------------------------


def test_keywords_pick_tools_and_the_answer_streams(conversation):
    run_id = run_agent(
        conversation,
        "list the files, read notes/todo.txt and calculate 2+3*4",
        DemoAgent(delay=0),
    )
    entries = tools(conversation)
    assert [(m.tool_name, m.tool_status) for m in entries] == [
        ("list_files", "success"),
        ("read_file", "success"),
        ("calculate", "success"),
    ]
    assert entries[0].content == "README.md, config.json, data/, notes/, src/"
    assert entries[1].metadata["details"]["kind"] == "file"
    assert entries[2].content == "14"
    answer = [m for m in messages(conversation) if m.role == "assistant"][-1]
    deltas = [
        e
        for e in events(conversation)
        if e.type == "agent.message.delta" and e.payload["message_id"] == answer.message_id
    ]
    assert len(deltas) > 3 and "".join(e.payload["delta"] for e in deltas) == answer.content
    assert "**Calculate** `2+3*4`: 14" in answer.content
    assert answer.metadata["tokens"] > 0 and answer.metadata["duration_ms"] >= 0
    assert Run.objects.get(run_id=run_id).status == "completed"


def test_slow_task_reports_progress(conversation):
    run_agent(conversation, "run something slow", DemoAgent(delay=0))
    (slow,) = tools(conversation)
    progress = [e.payload for e in events(conversation) if e.type == "agent.tool.progress"]
    assert [p["progress"] for p in progress] == [0.2, 0.4, 0.6, 0.8, 1.0]
    assert all(p["output"].startswith(f"chunk {i}/5: ") for i, p in enumerate(progress, 1))
    assert all(p["message"].startswith("→ ") for p in progress)
    assert slow.content == "SUCCESS: processed 5 chunks"
    assert slow.metadata["output"].count("sha256=") == 5


def test_fail_and_flaky_keywords(conversation):
    run_agent(conversation, "try the flaky tool and make a tool fail", DemoAgent(delay=0))
    summary = [(m.tool_name, m.tool_status, m.metadata.get("attempt")) for m in tools(conversation)]
    assert summary == [
        ("flaky_lookup", "error", 1),
        ("read_file", "error", None),
        ("flaky_lookup", "success", 2),
    ]
    answer = [m for m in messages(conversation) if m.role == "assistant"][-1].content
    assert "(attempt 2 of 3)" in answer and "no such file in the sandbox" in answer


def test_delegate_runs_children_under_the_sub_agent(conversation):
    run_agent(conversation, "delegate: search TODO then calculate 6*7", DemoAgent(delay=0))
    entries = tools(conversation)
    top = [m for m in entries if not m.parent_tool_call_id]
    assert [m.tool_name for m in top] == ["delegate"]
    details = top[0].metadata["details"]
    assert details["kind"] == "subagent" and details["states"][-1] == "completed"
    assert details["run_id"] == f"{top[0].tool_call_id}.sub"
    children = {m.tool_name: m for m in entries if m.parent_tool_call_id == top[0].tool_call_id}
    assert set(children) == {"search_text", "delegate"}
    nested = [m for m in entries if m.parent_tool_call_id == children["delegate"].tool_call_id]
    assert [(m.tool_name, m.content) for m in nested] == [("calculate", "42")]


def test_no_keyword_gets_the_help_answer(conversation):
    run_agent(conversation, "hello", DemoAgent(delay=0))
    (answer,) = [m for m in messages(conversation) if m.role == "assistant"]
    assert answer.content == help_text()
    assert all(words in answer.content for words, _, _ in KEYWORDS)
    assert not tools(conversation)


def test_crash_keyword_fails_the_run(conversation):
    run_id = run_agent(conversation, "crash please", DemoAgent(delay=0))
    run = Run.objects.get(run_id=run_id)
    assert run.status == "failed" and "crashed on purpose" in run.error_message


# -- the planner ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("list the files in data", [("list_files", {"path": "data"})]),
        ("ls", [("list_files", {"path": "."})]),
        ("read notes/todo.txt", [("read_file", {"path": "notes/todo.txt"})]),
        ("please search for @alice", [("search_text", {"query": "@alice"})]),
        ("calculate (2 + 3) * 4", [("calculate", {"expression": "(2 + 3) * 4"})]),
        (
            "calculate max(1,2), then list",
            [("list_files", {"path": "."}), ("calculate", {"expression": "max(1,2)"})],
        ),
        ("run `wc -l data/server.log`", [("run_command", {"command": "wc -l data/server.log"})]),
        (
            "fetch https://example.com/api/status.",
            [("fetch_url", {"url": "https://example.com/api/status"})],
        ),
        ("show me", []),
    ],
)
def test_plan_tools(text, expected):
    assert [(p.name, p.args) for p in plan_tools(text)] == expected


def test_planner_finds_paths_in_one_pass_over_pathological_text():
    """The read-path regex backtracked quadratically: "read" and 20,000 dots held the
    event loop for 5 s, and this text for minutes. Now one linear pass."""
    planned = plan_tools("read " + "." * 100_000 + " then read notes/todo.txt.")
    assert [(p.name, p.args) for p in planned] == [("read_file", {"path": "notes/todo.txt"})]
    planned = plan_tools("x-read notes/a.txt")
    assert [(p.name, p.args) for p in planned] == [("read_file", {"path": "notes/a.txt"})]


# -- the tools, directly ------------------------------------------------------------------


class Collect:
    def __init__(self):
        self.events: list[dict] = []

    async def __call__(self, batch):
        self.events.extend(batch)


def run_tool(name: str, args: dict, sandbox: Sandbox | None = None, toolbox=None):
    sink = Collect()
    ctx = RunContext(SimpleNamespace(pk="c"), "r", "", sink=sink)
    toolbox = toolbox or Toolbox(sandbox)
    outcome = asyncio.run(toolbox.execute(toolbox.call(ctx, name, args)))
    return outcome, sink.events


@pytest.mark.parametrize(
    "path",
    ["../settings.py", "../../chatui/settings.py", "notes/../../demo.py", "./../base.py"],
)
def test_paths_cannot_escape_the_sandbox(path):
    outcome, emitted = run_tool("read_file", {"path": path})
    assert outcome.error == f"path escapes the sandbox: {path}"
    assert emitted[-1]["type"] == "agent.tool.completed" and emitted[-1]["error"] == outcome.error


def test_absolute_paths_are_sandbox_relative():
    outcome, _ = run_tool("read_file", {"path": "/etc/passwd"})
    assert outcome.error == "no such file in the sandbox: /etc/passwd"
    outcome, _ = run_tool("read_file", {"path": "/notes/todo.txt"})
    assert outcome.ok and "@alice" in outcome.text


def test_symlinks_out_of_the_sandbox_are_refused(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret")
    root = tmp_path / "box"
    root.mkdir()
    (root / "ok.txt").write_text("fine")
    os.symlink(outside, root / "link.txt")
    os.symlink(tmp_path, root / "up")
    sandbox = Sandbox(root)
    assert run_tool("read_file", {"path": "link.txt"}, sandbox)[0].error.startswith(
        "path escapes the sandbox"
    )
    assert run_tool("list_files", {"path": "up"}, sandbox)[0].error.startswith("path escapes")
    search, _ = run_tool("search_text", {"query": "secret"}, sandbox)
    assert search.text == "no matches for 'secret'"
    assert [p.name for p in sandbox.files(".")] == ["ok.txt"]


def test_the_sandbox_is_read_only_and_shipped():
    assert (SANDBOX_DIR / "README.md").is_file()
    assert all("write" not in name for name in Toolbox().tools)
    assert Path(SANDBOX_DIR).resolve() == Sandbox().root


@pytest.mark.parametrize(
    ("expression", "value"),
    [("2+3*4", 14), ("(2 + 3) * 4", 20), ("2^10", 1024), ("7 / 2", 3.5), ("sqrt(16) + pi", None)],
)
def test_calculator_evaluates_arithmetic(expression, value):
    result = safe_eval(expression)
    assert result == value if value is not None else abs(result - 7.14159265) < 1e-6


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("__import__('os').system('id')", "not allowed in an expression"),
        ("().__class__", "not allowed in an expression"),
        ("open('x')", "not allowed in an expression"),
        ("9**9**9", "too large"),
        ("1/0", "division by zero"),
        ("2 +", "not an arithmetic expression"),
        ("'a' * 3", "not a number"),
    ],
)
def test_calculator_refuses_everything_else(expression, error):
    with pytest.raises(ToolError, match=error):
        safe_eval(expression)


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("round(5, -10**7)", "round() takes at most 100 digits"),  # 8 s on the loop before
        ("round(5, -10**8)", "round() takes at most 100 digits"),  # never ended before
        ("10**10**10", "too large"),
        ("9**9**9", "too large"),
        ("1<<10**9", "not allowed in an expression"),
        ("(10**5000)*(10**5000)", "too large"),
        ("(10**99)*(10**99)*(10**99)", "too large"),
        ("9**99*9**99*9**99*9**99*9**99*9**99*9**99*9**99", "too large"),
        ("max(2**300*2**300, 1)", "too large"),
        ("1" * 299, "too large"),  # a literal beyond 10^100
        ("1e400 - 1e400", "too large"),  # inf, which would make nan
        ("-" * 280 + "(2)", None),  # deep but harmless: it evaluates
        ("(" * 150 + "1" + ")" * 149, "not an arithmetic expression"),
    ],
)
def test_calculator_bounds_hostile_operands_before_computing(expression, error):
    """The calculator refuses, from the operands' sizes, any operation whose result
    would leave ±10^100, so none can hold the GIL for seconds (docs/events.md#reliability)."""
    outcome, _ = run_tool("calculate", {"expression": expression})
    if error is None:
        assert outcome.ok and outcome.text == "2"
    else:
        assert not outcome.ok and error in outcome.error


def test_integer_arguments_given_as_huge_digit_strings_are_refused():
    outcome, _ = run_tool("slow_task", {"steps": "9" * 5000})
    assert outcome.error == "argument steps of slow_task must be an integer"


def slow_tool_box(body, **options) -> Toolbox:
    return Toolbox(tools=[Tool("crunch", "A slow job.", params(), body)], **options)


def test_tool_work_runs_off_the_event_loop_which_keeps_serving_others():
    """A tool's body runs on a worker thread: while it works, the loop keeps running
    other tasks. The body waits until a heartbeat task on the loop has ticked; run
    on the loop itself, it would block that heartbeat and give up."""
    inside, ticked = threading.Event(), threading.Event()

    def crunch(env):
        inside.set()
        return "the loop kept ticking" if ticked.wait(10) else "the loop was blocked"

    async def heartbeat() -> int:
        beats = 0
        while not inside.is_set():
            await asyncio.sleep(0.005)
        while beats < 3:
            await asyncio.sleep(0)
            beats += 1
        ticked.set()
        return beats

    async def main():
        sink = Collect()
        ctx = RunContext(SimpleNamespace(pk="c"), "r", "", sink=sink)
        toolbox = slow_tool_box(crunch)
        beat = asyncio.create_task(heartbeat())
        outcome = await toolbox.execute(toolbox.call(ctx, "crunch", {}))
        return outcome, await beat

    outcome, beats = asyncio.run(main())
    assert outcome.ok and outcome.text == "the loop kept ticking"
    assert beats == 3


def test_a_tool_over_its_time_limit_fails_as_timed_out(settings):
    settings.CHATUI_TOOL_TIMEOUT = 0.05
    release = threading.Event()

    def crunch(env):
        release.wait(10)
        return "too late"

    try:
        outcome, emitted = run_tool("crunch", {}, toolbox=slow_tool_box(crunch))
    finally:
        release.set()
    assert outcome.error == "crunch timed out after 0.05 s"
    assert emitted[-1]["type"] == "agent.tool.completed"
    assert emitted[-1]["error"] == "crunch timed out after 0.05 s"


def test_simulated_shell_bounds_arguments_and_output(tmp_path):
    (tmp_path / "big.txt").write_text("x" * 60_000)
    shell = SimulatedShell(Sandbox(tmp_path))
    code, output = shell.run("cat " + " ".join(["big.txt"] * 21))
    assert (code, output) == (2, "cat: too many arguments (at most 20)")
    code, output = shell.run("cat " + " ".join(["big.txt"] * 20))
    assert code == 0 and output.endswith("… (output cut)") and len(output) < 70_000


def test_simulated_shell():
    shell = SimulatedShell(Sandbox())
    assert shell.run("wc -l notes/todo.txt") == (0, "6 notes/todo.txt")
    assert shell.run("pwd") == (0, "/sandbox")
    assert shell.run("grep -i alice notes/todo.txt") == (0, "- ping @alice about the release date")
    assert shell.run("false") == (1, "")
    assert shell.run("rm -rf /")[0] == 127
    assert shell.run("cat ../settings.py")[0] == 1
    assert shell.run("ls | cat")[0] == 2
    assert shell.run("head -n x notes/todo.txt")[0] == 2
    assert shell.run("head -n 2 notes/todo.txt") == (
        0,
        "TODO for the release\n- write the changelog",
    )


def test_fetch_is_simulated():
    outcome, _ = run_tool("fetch_url", {"url": "https://example.com/api/status"})
    assert outcome.result["details"]["status_code"] == 200
    outcome, _ = run_tool("fetch_url", {"url": "file:///etc/passwd"})
    assert outcome.error == "not an http(s) URL: file:///etc/passwd"


def test_bad_arguments_are_a_tool_error():
    outcome, _ = run_tool("read_file", {"file": "x"})
    assert outcome.error == "unknown argument for read_file: file"
    outcome, _ = run_tool("no_such_tool", {})
    assert outcome.error.startswith("unknown tool 'no_such_tool'")


def test_chunk_words_keeps_every_character():
    text = "Hello  there,\n\nworld | a | b |\n```py\nx = 1\n```"
    assert "".join(chunk_words(text, 2)) == text
