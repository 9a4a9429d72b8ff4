"""chatui.read.display: every text a presenter shows goes through the one display policy
(issue 10, move 7), so a new text field needs only its type, never an edit in the
admin's invisible-character pass (chatui.read.reveal) or anywhere else.

The transcript below feeds real events through ingest and presents them as the views
do; the transform marks what it saw, and every text of every view must be marked.
"""

from __future__ import annotations

import dataclasses
import typing

import pytest

from chatui.ingest import approvals
from chatui.ingest.service import ingest
from chatui.models import Conversation, ToolStatus
from chatui.read import display, presenters
from chatui.read.display import Display, Text

SECRET = "sk-live-abcdefghijklmnop9876"


def fetch_attempt(number: int) -> dict:
    return {
        "type": "agent.tool.started",
        "tool_call_id": f"a{number}",
        "tool_name": "fetch_page",
        "args": {"url": "https://example.com"},
        "attempt": number,
        "max_attempts": 3,
    }


EVENTS = [
    {"type": "user.message", "content": "hi @bob"},
    {"type": "agent.reasoning.delta", "message_id": "think", "delta": "Weighing @bob's ask"},
    {"type": "agent.status", "status": "thinking", "message": "Pondering", "run_id": "r1"},
    {
        "type": "agent.continuation",
        "should_continue": False,
        "stop_reason": "max",
        "resolved_by": "Steps",
    },
    {"type": "agent.step.completed", "content": "<validation>checked</validation>", "run_id": "r0"},
    {"type": "agent.step.completed", "content": "**Done**", "run_id": "r1", "duration_ms": 5},
    # G14: a failed attempt, then a retry that succeeds
    fetch_attempt(1),
    {"type": "agent.tool.completed", "tool_call_id": "a1", "error": "timed out", "duration_ms": 9},
    fetch_attempt(2),
    {"type": "agent.tool.completed", "tool_call_id": "a2", "result": "ok"},
    # G4/G9/G15: a long result, a command that failed by its exit code, a preview
    {
        "type": "agent.tool.started",
        "tool_call_id": "c",
        "tool_name": "run_cmd",
        "args": {"k": SECRET},
    },
    {
        "type": "agent.tool.completed",
        "tool_call_id": "c",
        "result": "\n".join(f"line {n}" for n in range(20)),
        "details": {"kind": "command", "command": "make", "exit_code": 2},
        "duration_ms": 1200,
    },
    {
        "type": "agent.tool.started",
        "tool_call_id": "p",
        "tool_name": "read",
        "args_summary": "a file",
    },
    {
        "type": "agent.tool.completed",
        "tool_call_id": "p",
        "result": "the start of it...",
        "result_is_preview": True,
    },
    # G13: a nested call; G11/G12: still running, with progress and output
    {
        "type": "agent.tool.started",
        "tool_call_id": "n",
        "tool_name": "child",
        "parent_tool_call_id": "p",
    },
    {
        "type": "agent.tool.progress",
        "tool_call_id": "n",
        "progress": 0.5,
        "output": "out\n→ step 2\n",
    },
    {"type": "agent.tool.completed", "tool_call_id": "s", "tool_name": "skip_me", "skipped": True},
    # docs/rendering.md#approvals: asked, and decided with a note
    {
        "type": "agent.tool.approval_requested",
        "tool_call_id": "d",
        "tool_name": "rm",
        "reason": "deletes",
    },
    {
        "type": "agent.tool.approval_requested",
        "tool_call_id": "w",
        "tool_name": "rm",
        "reason": "waits",
    },
    # W4: an expired request, counted apart from denied ones
    {"type": "agent.tool.approval_requested", "tool_call_id": "x", "tool_name": "rm"},
    {"type": "tool.approval", "tool_call_id": "x", "decision": "expired"},
    # Issue 28: texts beyond the page's bound are left out; the Details say their size
    {"type": "agent.tool.started", "tool_call_id": "big", "tool_name": "cat"},
    {"type": "agent.tool.completed", "tool_call_id": "big", "result": "x\n" * 10_000},
    {
        "type": "agent.step.completed",
        "content": "",
        "tool_calls": [{"name": "later", "arguments": "{}"}],
    },
    # W5: a run the user stopped; its running tool is cancelled, not failed
    {"type": "agent.tool.started", "tool_call_id": "stopped", "tool_name": "slow", "run_id": "r9"},
    {"type": "agent.status", "status": "cancelled", "run_id": "r9"},
    {"type": "agent.message.delta", "message_id": "streaming", "delta": "still typing"},
    # docs/rendering.md#rich-output: G17 terminal, G18 a diff and a patch argument, G19 code,
    # G20 records, a key/value list and Details with a text block
    *[
        event
        for call, name, args, result in (
            ("g17", "run_tests", {}, "\x1b[32mPASSED\x1b[0m @bob\nok"),
            (
                "g18",
                "apply_patch",
                {"patch": "*** Begin Patch\n*** Update File: a.py\n-x\n+y"},
                "Done",
            ),
            ("g18r", "git_diff", {}, "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a\n+b"),
            ("g19", "read_file", {"path": "src/app.py"}, "def f():\n    return 1\n"),
            ("g20", "query", {}, [{"id": n, "name": f"@bob{n}"} for n in range(52)]),
            ("g20o", "lookup", {}, {"bio": "line 1\nline 2", **{f"k{n}": n for n in range(50)}}),
            # G21: an MCP result (text, an image with its alt text, a link; structured
            # content that is neither a record nor an object: shown as JSON text)
            (
                "g21",
                "chart",
                {},
                {
                    "content": [
                        {"type": "text", "text": "drawn for @bob"},
                        {"type": "image", "data": "iVBORw0KGgoAAAAA", "alt": "@bob's chart"},
                        {"type": "resource_link", "uri": "https://x.org/", "name": "@bob"},
                    ],
                    "structuredContent": [1, 2],
                },
            ),
        )
        for event in (
            {"type": "agent.tool.started", "tool_call_id": call, "tool_name": name, "args": args},
            {"type": "agent.tool.completed", "tool_call_id": call, "result": result},
        )
    ],
]


class Seen(str):
    """A text that went through the transform, with the kind it was given as."""

    kind: str


def mark(text: str, kind: display.TextKind) -> Seen:
    seen = Seen(text)
    seen.kind = kind
    return seen


def view_classes() -> set[type]:
    """Every view class a presented transcript can hold, nested ones too."""
    found: set[type] = set()
    todo = list(typing.get_args(presenters.Item))
    while todo:
        cls = todo.pop()
        if cls in found:
            continue
        found.add(cls)
        for hint in typing.get_type_hints(cls).values():
            todo.extend(inner for inner in _types_in(hint) if dataclasses.is_dataclass(inner))
    return found


def _types_in(hint) -> list:
    args = typing.get_args(hint)
    return [hint, *(inner for arg in args for inner in _types_in(arg))]


def texts(view):
    """(Class.field, value) of every str a view holds, nested views included."""
    for each in dataclasses.fields(view):
        value = getattr(view, each.name)
        name = f"{type(view).__name__}.{each.name}"
        if isinstance(value, str):
            yield name, value
        elif dataclasses.is_dataclass(value):
            yield from texts(value)
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    yield from texts(item)


@pytest.fixture
def everything(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="Everything")
    ingest(conversation, EVENTS)
    approvals.decide(conversation, "d", "denied", user, "too risky")
    # G15: a row stored as a success before exit codes failed an entry
    conversation.messages.filter(tool_call_id="c").update(tool_status=ToolStatus.SUCCESS)
    return conversation


def present(conversation: Conversation, shown: Display) -> list[presenters.Item]:
    return presenters.present_transcript(
        list(conversation.messages.order_by("position")), display=shown
    )


def test_issue10_every_text_field_of_every_view_says_what_its_text_is():
    for cls in view_classes():
        display.field_kinds(cls)  # raises for a str field without a kind

    @dataclasses.dataclass(frozen=True)
    class NewView:
        label: Text
        raw: str

    with pytest.raises(TypeError, match=r"NewView\.raw: say what the text is"):
        display.field_kinds(NewView)


def test_issue10_every_shown_text_of_a_presented_transcript_goes_through_the_display(
    everything,
):
    items = present(everything, Display(transform=mark))
    seen_fields = set()
    for item in items:
        for name, value in texts(item):
            cls_name, field_name = name.split(".")
            kind = next(
                display.field_kinds(cls)[field_name]
                for cls in view_classes()
                if cls.__name__ == cls_name
            )
            if kind == display.KEY:
                assert not isinstance(value, Seen), name
            else:
                assert isinstance(value, Seen) and value.kind == kind, name
                seen_fields.add(name)
    # The transcript holds every kind of text a view can show: a new field must be fed
    # here too, so this test proves it is shown through the display.
    declared = {
        f"{cls.__name__}.{name}"
        for cls in view_classes()
        for name, kind in display.field_kinds(cls).items()
        if kind in display.TEXT_KINDS
    }
    assert declared - seen_fields == set()


def test_issue10_keys_and_the_default_display_leave_text_as_presented(everything):
    plain = present(everything, display.MASKED)
    marked = present(everything, Display(transform=mark))
    assert [dict(texts(item)) for item in plain] == [dict(texts(item)) for item in marked]
    assert presenters.present_transcript.__kwdefaults__["display"] is display.MASKED


def test_t3_secrets_masked_unless_the_display_reveals_them(everything):
    def call_lines(shown: Display) -> str:
        return " ".join(
            value
            for item in present(everything, shown)
            for name, value in texts(item)
            if name == "ToolEntryView.call_line"
        )

    assert SECRET not in call_lines(display.MASKED) and "••••9876" in call_lines(display.MASKED)
    assert SECRET in call_lines(Display(mask_secrets=False))
