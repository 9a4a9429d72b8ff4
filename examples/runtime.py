#!/usr/bin/env python3
"""An example agent runtime: one conversation driven end to end through `chatui_client`.

    python examples/runtime.py --url http://127.0.0.1:8000 --token TOKEN

(or set CHATUI_URL and CHATUI_TOKEN). It creates a conversation and plays one agent
run in it, the way a real runtime would report its work: the user's message, a
thinking line, streamed assistant text, several tool calls (one that streams progress,
one that fails, one that runs nested tools of its own), a final answer, the
continuation decision and the end of the run. It prints the conversation's URL last.

Everything is deterministic: the tools are canned, and ids and timestamps are fixed
(a fake clock stamps every event), so the transcript is always the same —
`examples/expected_transcript.json` holds it, and tests/test_example_runtime.py checks it.
Event ids are deterministic too, so running it again with `--conversation ID` posts
only duplicates and changes nothing (docs/events.md#rel1).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

try:
    from chatui_client import ChatuiClient, ChatuiError, Run, ToolCall
except ImportError:  # run from a checkout where the client is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "python"))
    from chatui_client import ChatuiClient, ChatuiError, Run, ToolCall

RUN_ID = "run_release_check"
START = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)

CHANGELOG = """\
## 1.2.0 (unreleased)
- Faster ingest: batches of 100 events in one transaction.
- Tool cards show live progress.
- Fix: a late `tool.started` no longer reopens a finished tool."""

DIFF_STAT = """\
 chatui/ingest.py      | 41 +++++++++++++++++++++++-------
 chatui/projection.py  | 18 ++++++++-----
 tests/test_ingest.py  | 57 +++++++++++++++++++++++++++++++++++++++++
 3 files changed, 96 insertions(+), 20 deletions(-)"""

TEST_FILES = ["tests/test_api.py", "tests/test_ingest.py", "tests/test_projection.py"]

FINAL_ANSWER = """\
**Yes, 1.2 can ship.**

| check | result |
|---|---|
| changelog | 3 entries, nothing breaking |
| tests | 42 passed |
| CI | unreachable (HTTP 503), local run used instead |
| review | no blocking issues |

Tag it with `git tag v1.2.0` once CI is back, to be safe."""


class FakeClock:
    """Deterministic time: every event is 200 ms after the previous one; tools take longer."""

    def __init__(self, start: datetime, step_ms: int = 200):
        self.now = start
        self.step = timedelta(milliseconds=step_ms)

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now

    def advance(self, ms: int) -> None:
        self.now += timedelta(milliseconds=ms)


class ToolFailed(Exception):
    def __init__(self, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.details = details


class Agent:
    """The runtime's side: executes tool calls and reports each one to chatui."""

    def __init__(self, run: Run, clock: FakeClock):
        self.run = run
        self.clock = clock

    def call_tool(
        self,
        call: ToolCall,
        execute: Callable[[ToolCall], Any],
        *,
        parent: str | None = None,
    ) -> None:
        """Report the start, run the tool, report its result or its error."""
        self.run.tool_started(
            call.id,
            call.name,
            call.args,
            args_summary=call.args_summary,
            parent_tool_call_id=parent,
        )
        started = self.clock.now
        try:
            result = execute(call)
        except ToolFailed as failure:
            self.run.tool_completed(
                call.id,
                error=str(failure),
                details=failure.details,
                duration_ms=self._elapsed_ms(started),
            )
        else:
            self.run.tool_completed(call.id, result=result, duration_ms=self._elapsed_ms(started))

    def _elapsed_ms(self, since: datetime) -> int:
        """From the `started` event to the `completed` event about to be stamped."""
        upcoming = self.clock.now + self.clock.step
        return int((upcoming - since) / timedelta(milliseconds=1))

    def stream(self, message_id: str, text: str, chunks: int) -> None:
        """Stream `text` as `chunks` deltas, split at spaces, as a model would."""
        words = text.split(" ")
        size = -(-len(words) // chunks)
        for start in range(0, len(words), size):
            piece = " ".join(words[start : start + size])
            if start + size < len(words):
                piece += " "
            self.run.say_delta(message_id, piece)

    # -- the tools (canned, so the transcript is always the same) --

    def read_file(self, call: ToolCall) -> dict[str, Any]:
        self.clock.advance(30)
        path = call.args["path"]
        return {
            "text": CHANGELOG,
            "details": {"kind": "file", "path": path, "summary": f"Read {path} (4 lines)"},
        }

    def run_tests(self, call: ToolCall) -> dict[str, Any]:
        for done, name in enumerate(TEST_FILES, start=1):
            self.clock.advance(900)
            self.run.tool_progress(
                call.id,
                round(done / len(TEST_FILES), 2),
                output=f"{name} {'.' * (10 + 2 * done)}\n",  # 12 + 14 + 16 = 42 tests
                message=f"→ {done}/{len(TEST_FILES)} test files",
            )
        self.clock.advance(400)
        return {
            "text": "42 passed in 3.10s",
            "details": {
                "kind": "command",
                "command": "pytest -q",
                "cwd": "/srv/app",
                "exit_code": 0,
                "summary": "42 passed",
            },
        }

    def fetch_ci_status(self, call: ToolCall) -> Any:
        self.clock.advance(5000)
        url = call.args["url"]
        raise ToolFailed(
            f"HTTP 503 Service Unavailable from {url}",
            details={"kind": "fetch", "url": url, "status_code": 503},
        )

    def review_diff(self, call: ToolCall) -> dict[str, Any]:
        """A sub-agent: its own tool calls are nested under this one."""
        diff = ToolCall("call_git_diff", "git_diff", {"base": "v1.1.0", "head": "main"})
        self.call_tool(diff, self.git_diff, parent=call.id)
        self.clock.advance(1500)
        return {
            "text": "No blocking issues: 3 files changed, every change is covered by tests.",
            "details": {
                "kind": "subagent",
                "run_id": "sub_review_1",
                "states": ["queued", "running", "completed"],
                "summary": "reviewer finished",
            },
        }

    def git_diff(self, call: ToolCall) -> str:
        self.clock.advance(80)
        return DIFF_STAT


def drive(run: Run, clock: FakeClock) -> None:
    """One user turn, as the model and the tools would play it."""
    agent = Agent(run, clock)
    run.user_message(
        "Can we ship 1.2 today? Check the changelog, run the tests and have someone "
        "review the diff.",
        message_id="msg_user_1",
    )
    run.status("running")
    run.status("thinking", "Reading the request…")

    # Step 1: the model streams a sentence, then asks for three tools.
    intro = "I'll read the changelog, run the test suite and check CI."
    agent.stream("msg_assistant_1", intro, chunks=3)
    calls = [
        ToolCall("call_changelog", "read_file", {"path": "CHANGELOG.md"}),
        ToolCall("call_tests", "run_tests", {"paths": ["tests"]}, args_summary="pytest -q tests"),
        ToolCall("call_ci", "fetch_url", {"url": "https://ci.example.com/api/builds/1.2"}),
    ]
    run.step_completed(
        intro, message_id="msg_assistant_1", tool_calls=calls, duration_ms=850, tokens=120
    )
    agent.call_tool(calls[0], agent.read_file)
    agent.call_tool(calls[1], agent.run_tests)
    agent.call_tool(calls[2], agent.fetch_ci_status)
    run.status("info", "CI is unreachable; relying on the local test run.")

    # Step 2: no text, one tool (a sub-agent with a nested tool of its own).
    review = ToolCall("call_review", "review_diff", {"base": "v1.1.0", "head": "main"})
    run.step_completed("", message_id="msg_assistant_2", tool_calls=[review], duration_ms=400)
    agent.call_tool(review, agent.review_diff)

    # Step 3: the final answer, streamed and then finalised.
    run.status("thinking", "Writing the answer…")
    agent.stream("msg_assistant_3", FINAL_ANSWER, chunks=6)
    run.step_completed(FINAL_ANSWER, message_id="msg_assistant_3", duration_ms=2300, tokens=530)
    run.continuation(False, "end_turn", "model")
    run.completed()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="chatui base URL (default: $CHATUI_URL)")
    parser.add_argument("--token", help="API token (default: $CHATUI_TOKEN)")
    parser.add_argument("--title", default="Example: release check")
    parser.add_argument(
        "--conversation", help="post into this existing conversation instead of a new one"
    )
    args = parser.parse_args(argv)
    try:
        with ChatuiClient(args.url, args.token) as chatui:
            if args.conversation:
                conversation_id = args.conversation
                before = chatui.get_conversation(conversation_id)["last_seq"]
            else:
                conversation_id = chatui.create_conversation(title=args.title)["id"]
                before = 0
            clock = FakeClock(START)
            run = chatui.run(conversation_id, RUN_ID, clock=clock, event_id_prefix=f"{RUN_ID}-")
            drive(run, clock)
            after = chatui.get_conversation(conversation_id)["last_seq"]
            print(f"events in the conversation: {after} ({after - before} new)")
            print(chatui.web_url(conversation_id))
    except (ChatuiError, ValueError) as problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
