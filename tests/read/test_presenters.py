"""docs/rendering.md#render-rules render rules, one test (or more) per rule, named after it.

Every test feeds real events through ingest and the projection, then presents
the conversation's messages exactly as the views do: no mocks.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils.dateparse import parse_datetime

from chatui.ingest.service import ingest
from chatui.read.presenters import (
    AssistantView,
    StatusView,
    ToolBatchView,
    ToolEntryView,
    UserView,
    batch_containing,
    call_line,
    duration_text,
    iter_entries,
    present_batch,
    present_transcript,
    truncate_block,
)
from chatui.text import ZWSP, format_duration, human_size, humanise_tool_name

T0 = "2026-01-16T10:00:00Z"


def present(conversation, **kwargs):
    return present_transcript(list(conversation.messages.order_by("position")), **kwargs)


def batches(items) -> list[ToolBatchView]:
    return [item for item in items if isinstance(item, ToolBatchView)]


def only_batch(items) -> ToolBatchView:
    (batch,) = batches(items)
    return batch


def entry(items, call_id: str) -> ToolEntryView:
    for batch in batches(items):
        for found in iter_entries(batch.entries):
            if found.tool_call_id == call_id:
                return found
    raise AssertionError(f"no entry {call_id}")


def user(text: str = "hi", **extra) -> dict:
    return {"type": "user.message", "content": text, **extra}


def started(call_id: str, name: str = "run_cmd", **extra) -> dict:
    return {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": name, **extra}


def completed(call_id: str, result="ok", **extra) -> dict:
    return {"type": "agent.tool.completed", "tool_call_id": call_id, "result": result, **extra}


def step(content: str = "", tool_calls=None, **extra) -> dict:
    event = {"type": "agent.step.completed", "content": content, **extra}
    if tool_calls is not None:
        event["tool_calls"] = tool_calls
    return event


def kinds(items) -> list[str]:
    return [item.kind for item in items]


# -- R1–R5 roles ------------------------------------------------------------------


def test_r1_user_text_is_raw_with_line_breaks_and_no_markdown(conversation, feed):
    text = "<b>hi</b> **not bold**\nsecond line @bob"
    feed(user(text, message_id="u1"))
    (view,) = present(conversation)
    assert isinstance(view, UserView)
    assert view.text == text  # escaped by the template, never rendered, never neutralised
    assert view.message_id == "u1"
    assert view.dom_id == f"m-{view.pk}"
    assert not hasattr(view, "html")


def test_r2_assistant_markdown_is_rendered_and_sanitised(conversation, feed):
    feed(step("**bold** and `code`\n\n<script>alert(1)</script>\n\n| a |\n|---|\n| 1 |"))
    (view,) = present(conversation)
    assert isinstance(view, AssistantView)
    assert "<strong>bold</strong>" in view.html
    assert "<code>code</code>" in view.html
    assert "<table>" in view.html
    assert "<script" not in view.html
    assert "&lt;script&gt;" in view.html
    assert view.is_streaming is False


def test_r3_tool_call_json_content_is_not_shown(conversation, feed):
    feed(
        user(),
        step('{"query": "dbplus"}', [{"id": "c1", "name": "SearchEntities"}]),
        step("  [1, 2]", [{"id": "c2", "name": "SearchEntities"}]),
    )
    items = present(conversation)
    assert kinds(items) == ["user", "tool_batch"]
    assert only_batch(items).count == 2


def test_r3_empty_content_with_tool_calls_is_not_shown(conversation, feed):
    feed(step("   ", [{"id": "c1", "name": "search"}]))
    assert kinds(present(conversation)) == ["tool_batch"]


def test_r3_prose_with_tool_calls_is_shown(conversation, feed):
    feed(step("Let me search for that.", [{"id": "c1", "name": "search"}]))
    items = present(conversation)
    assert kinds(items) == ["assistant", "tool_batch"]
    assert "Let me search" in items[0].html


def test_r3_hidden_assistant_message_does_not_break_a_batch(conversation, feed):
    feed(
        started("c1"),
        completed("c1"),
        step('{"cmd": "ls"}', [{"id": "c2", "name": "run_cmd"}]),
        started("c2"),
    )
    batch = only_batch(present(conversation))
    assert [e.tool_call_id for e in batch.entries] == ["c1", "c2"]


def test_r3_streaming_text_starting_like_json_is_never_flashed(conversation, feed):
    feed({"type": "agent.message.delta", "message_id": "a1", "delta": ' {"query": "x'})
    assert present(conversation) == []
    feed({"type": "agent.message.delta", "message_id": "a2", "delta": "Hello"})
    (view,) = present(conversation)
    assert view.is_streaming is True
    assert view.text == "Hello" and view.html == ""  # escaped text while streaming


def test_r4_tool_entry_matched_to_its_call_by_tool_call_id(conversation, feed):
    feed(step("", [{"id": "c1", "name": "search", "args": {"q": "x"}}]))
    queued = entry(present(conversation), "c1")
    assert queued.status == "queued"
    feed(started("c1", "search", args={"q": "x"}), completed("c1", "3 hits"))
    done = entry(present(conversation), "c1")
    assert done.dom_id == queued.dom_id
    assert done.status == "success"
    assert done.result.text == "3 hits"
    assert only_batch(present(conversation)).count == 1


def test_r4_tool_matched_by_name_when_the_call_has_no_id(conversation, feed):
    feed(step("", [{"name": "search", "args": {"q": "x"}}]), started("c9", "search"))
    batch = only_batch(present(conversation))
    assert batch.count == 1
    assert batch.entries[0].tool_call_id == "c9"
    assert batch.entries[0].status == "running"


def test_r5_status_lines_per_type(conversation, feed):
    feed(
        {"type": "agent.status", "status": "thinking", "message": "Pondering"},
        {"type": "agent.status", "status": "info", "message": "Heads up"},
        {
            "type": "agent.continuation",
            "should_continue": False,
            "stop_reason": "steps_limit",
            "resolved_by": "StepsLimit",
        },
    )
    thinking, info, cont = present(conversation)
    assert isinstance(thinking, StatusView) and thinking.is_spinner and thinking.is_ephemeral
    assert thinking.status_type == "thinking" and thinking.text == "Pondering"
    assert info.is_toast and not info.is_spinner and not info.is_banner
    assert cont.status_type == "continuation"
    assert cont.text == "Agent stopped: steps_limit"
    assert cont.continuation.resolved_by == "StepsLimit"
    assert cont.continuation.should_continue is False
    assert not cont.is_ephemeral


# -- G1–G14 tool batches ------------------------------------------------------------


def test_g1_consecutive_tools_form_one_batch(conversation, feed):
    feed(user(), started("c1"), completed("c1"), started("c2"), completed("c2"), started("c3"))
    feed(completed("c3"))
    items = present(conversation)
    assert kinds(items) == ["user", "tool_batch"]
    batch = items[1]
    assert batch.count == 3
    assert batch.title == "3 tool calls"
    assert batch.open is False  # collapsed by default once nothing in it runs


def test_g1_single_tool_batch_is_titled_with_the_tool_name(conversation, feed):
    feed(started("c1", "image_generation"))
    batch = only_batch(present(conversation))
    assert batch.count == 1
    assert batch.title == "Image Generation"


def test_g1_user_message_splits_batches(conversation, feed):
    feed(started("c1"), user("next"), started("c2"))
    items = present(conversation)
    assert kinds(items) == ["tool_batch", "user", "tool_batch"]
    assert [b.count for b in batches(items)] == [1, 1]


def test_g1_shown_assistant_text_splits_batches(conversation, feed):
    feed(started("c1"), completed("c1"), step("Found it. Now checking."), started("c2"))
    items = present(conversation)
    assert kinds(items) == ["tool_batch", "assistant", "tool_batch"]


def test_g1_status_line_does_not_split_a_batch_and_follows_it(conversation, feed):
    feed(
        started("c1"),
        {"type": "agent.status", "status": "info", "message": "Heads up"},
        started("c2"),
    )
    items = present(conversation)
    assert kinds(items) == ["tool_batch", "status"]
    assert items[0].count == 2


def test_g1_batch_dom_ids_come_from_server_pks(conversation, feed):
    hostile = '"><script>alert(1)</script>'
    feed(started(hostile), started("c2"))
    batch = only_batch(present(conversation))
    first = batch.entries[0]
    assert batch.dom_id == f"b-{first.pk}"
    assert first.dom_id == f"m-{first.pk}"
    assert first.tool_call_id == hostile  # kept raw, for an escaped attribute only


def test_g2_count_grows_in_the_same_batch(conversation, feed):
    feed(user(), started("c1"))
    first = only_batch(present(conversation))
    assert (first.count, first.title) == (1, "Run Cmd")
    feed(started("c2"))
    second = only_batch(present(conversation))
    assert second.dom_id == first.dom_id
    assert (second.count, second.title) == (2, "2 tool calls")
    assert second.running_count == 2


def test_g3_call_line_is_key_value_pairs_in_insertion_order(conversation, feed):
    args = {"path": "a.py", "lines": [1, 2], "opts": {"x": True}, "text": "one\n  two"}
    feed(started("c1", "read_file", args=args))
    assert entry(present(conversation), "c1").call_line == (
        'read_file(path=a.py, lines=[1,2], opts={"x":true}, text=one two)'
    )


def test_g3_args_summary_wins_over_args(conversation, feed):
    feed(started("c1", "search", args={"q": "x"}, args_summary="query: 'dbplus'"))
    assert entry(present(conversation), "c1").call_line == "search(query: 'dbplus')"


def test_g3_values_cut_at_250_and_the_whole_at_1200(conversation, feed):
    feed(started("c1", "write", args={f"k{i}": "v" * 300 for i in range(6)}))
    line = entry(present(conversation), "c1").call_line
    inner = line[len("write(") : -1]
    first_value = inner.split(", ")[0].split("=", 1)[1]
    assert len(first_value) == 250 and first_value.endswith("…")
    assert len(inner) == 1200 and inner.endswith("…")
    assert call_line("f", {}) == "f()"


def test_g4_short_single_line_result_is_inline(conversation, feed):
    feed(started("c1"), completed("c1", "/app"))
    result = entry(present(conversation), "c1").result
    assert result.inline is True
    assert result.text == "/app"
    assert result.note is None


def test_g4_long_result_truncated_to_8_lines_with_more_lines_note(conversation, feed):
    feed(started("c1"), completed("c1", "\n".join(f"line {i}" for i in range(20))))
    result = entry(present(conversation), "c1").result
    assert result.inline is False
    assert result.text.split("\n") == [f"line {i}" for i in range(8)]
    assert result.note == "… (12 more lines)"


def test_g4_long_single_line_is_cut_at_500_chars_with_size_note(conversation, feed):
    feed(started("c1"), completed("c1", "x" * 2400))
    result = entry(present(conversation), "c1").result
    assert result.inline is False
    assert result.text == "x" * 500
    assert result.note == "… (truncated, 2.3 KB)"


def test_g4_display_text_of_text_details_result_and_of_json(conversation, feed):
    feed(
        started("c1"),
        completed("c1", {"text": "Found 3 entities", "details": {"kind": "custom"}}),
        started("c2"),
        completed("c2", {"a": 1}),
    )
    items = present(conversation)
    assert entry(items, "c1").result.text == "Found 3 entities"
    assert entry(items, "c2").result.text == '{"a":1}'


def test_g4_helpers():
    assert truncate_block("a\nb", max_lines=1) == ("a", "… (1 more line)")
    assert human_size(512) == "512 B"
    assert human_size(int(1.5 * 1024 * 1024)) == "1.5 MB"


def test_g5_pending_entry_shows_elapsed_time_and_no_result(conversation, feed):
    feed(started("c1", timestamp=T0))
    now = parse_datetime(T0) + timedelta(seconds=3)
    running = entry(present(conversation, now=now), "c1")
    assert running.is_pending and running.status == "running"
    assert running.result is None
    assert running.elapsed_text == "3 s"
    later = entry(present(conversation, now=now + timedelta(seconds=62)), "c1")
    assert later.elapsed_text == "1 min 5 s"
    feed(completed("c1", "done"))
    done = entry(present(conversation, now=now), "c1")
    assert done.elapsed_text is None and not done.is_pending


def test_g5_queued_entry_is_pending_too(conversation, feed):
    feed(step("", [{"id": "c1", "name": "search"}]))
    queued = entry(present(conversation), "c1")
    assert queued.status == "queued" and queued.is_pending and queued.result is None
    assert queued.elapsed_text is not None


def test_g6_error_entry_shows_error_and_opens_its_batch(conversation, feed):
    feed(
        started("c1"),
        completed("c1"),
        started("c2"),
        {"type": "agent.tool.completed", "tool_call_id": "c2", "error": "permission denied"},
    )
    batch = only_batch(present(conversation))
    failed = batch.entries[1]
    assert failed.status == "error" and failed.is_error
    assert failed.error == "permission denied"
    assert failed.result.text == "permission denied"
    assert batch.open and batch.has_error
    assert batch.failed_count == 1 and batch.failed_text == "1 failed"


def test_g6_a_failed_nested_tool_opens_the_batch(conversation, feed):
    feed(
        started("p1", "subagent"),
        started("k1", "run_cmd", parent_tool_call_id="p1"),
        {"type": "agent.tool.completed", "tool_call_id": "k1", "error": "boom"},
    )
    batch = only_batch(present(conversation))
    assert batch.count == 1
    assert batch.open and batch.failed_count == 1


def test_g7_duration_text(conversation, feed):
    feed(
        started("c1"),
        completed("c1", duration_ms=250),
        started("c2"),
        completed("c2", duration_ms=1200),
        started("c3"),
        completed("c3"),
    )
    items = present(conversation)
    assert entry(items, "c1").duration_text == "250 ms"
    assert entry(items, "c2").duration_text == "1.2 s"
    assert entry(items, "c3").duration_text is None
    assert format_duration(125_000) == "2 min 5 s"
    assert format_duration(3_720_000) == "1 h 2 min"


def test_g8_details_json_holds_full_args_and_full_result(conversation, feed):
    long_result = "y" * 3000
    feed(started("c1", args={"path": "a.py", "n": 2}), completed("c1", long_result))
    details = entry(present(conversation), "c1").details_json
    assert '"args": {\n    "path": "a.py",\n    "n": 2\n  }' in details
    assert long_result in details
    assert len(entry(present(conversation), "c1").result.text) == 500


def kind_of(conversation, feed, details: dict, result="ok", **extra):
    feed(started("c1"), completed("c1", result, details=details, **extra))
    return entry(present(conversation), "c1").kind_view


def rows(kind_view) -> dict[str, str]:
    return {row.label: row.value for row in kind_view.rows}


def test_g9_file_kind_shows_path_and_content_preview(conversation, feed):
    view = kind_of(
        conversation, feed, {"kind": "file", "path": "src/a.py", "content": "1\n2\n3\n4"}
    )
    assert view.kind == "file"
    assert rows(view) == {"Path": "src/a.py", "Preview": "1\n2\n3…"}


def test_g9_command_kind_flags_non_zero_exit_code(conversation, feed):
    view = kind_of(conversation, feed, {"kind": "command", "command": "make", "exit_code": 2})
    assert rows(view) == {"Command": "make", "Exit code": "2"}
    assert view.failed
    assert [row.is_failure for row in view.rows] == [False, True]


def test_g9_command_kind_zero_exit_code_is_not_a_failure(conversation, feed):
    view = kind_of(conversation, feed, {"kind": "command", "command": "ls", "exit_code": 0})
    assert not view.failed


def test_g9_fetch_kind_shows_url_and_status(conversation, feed):
    view = kind_of(
        conversation, feed, {"kind": "fetch", "url": "https://x.test", "status_code": 404}
    )
    assert rows(view) == {"URL": "https://x.test", "HTTP status": "404"}
    assert view.failed


def test_g9_subagent_kind_shows_run_id_and_states(conversation, feed):
    details = {"kind": "subagent", "run_id": "r-7", "states": ["queued", "running", "done"]}
    view = kind_of(conversation, feed, details)
    assert rows(view) == {"Run": "r-7", "States": "queued → running → done"}


def test_g9_custom_and_unknown_kinds_show_summary_and_ignore_unknown_keys(conversation, feed):
    details = {"kind": "quantum", "summary": "Did 3 things", "zzz": {"deep": 1}}
    view = kind_of(conversation, feed, details)
    assert view.kind == "custom"
    assert rows(view) == {"Summary": "Did 3 things"}


def test_g9_malformed_kind_is_custom(conversation, feed):
    view = kind_of(conversation, feed, {"kind": {"not": "a string"}, "summary": ["a", "b"]})
    assert view.kind == "custom"
    assert rows(view) == {"Summary": '["a","b"]'}


def test_g9_file_mime_type_is_a_row(conversation, feed):
    details = {"kind": "file", "path": "src/app.py", "mime_type": "text/x-python"}
    assert rows(kind_of(conversation, feed, details)) == {
        "Path": "src/app.py",
        "Type": "text/x-python",
    }


def test_g9_command_cwd_is_a_row(conversation, feed):
    details = {"kind": "command", "command": "pytest -q", "cwd": "/ws", "exit_code": 0}
    assert rows(kind_of(conversation, feed, details)) == {
        "Command": "pytest -q",
        "Directory": "/ws",
        "Exit code": "0",
    }


def test_g9_fetch_mime_type_is_a_row_after_the_status(conversation, feed):
    details = {"kind": "fetch", "url": "https://x.test", "status_code": 200, "mime_type": "a/b"}
    assert list(rows(kind_of(conversation, feed, details)).items()) == [
        ("URL", "https://x.test"),
        ("HTTP status", "200"),
        ("Type", "a/b"),
    ]


def test_g9_subagent_child_session_id_is_a_row(conversation, feed):
    details = {"kind": "subagent", "run_id": "run_7f3a", "child_session_id": "sess_9"}
    assert rows(kind_of(conversation, feed, details)) == {
        "Run": "run_7f3a",
        "Child session": "sess_9",
    }


def test_g9_details_without_kind_read_by_keys_show_their_optional_rows(conversation, feed):
    view = kind_of(conversation, feed, {"path": "out/r.md", "mime_type": "text/markdown"})
    assert (view.kind, rows(view)) == ("file", {"Path": "out/r.md", "Type": "text/markdown"})


def test_g9_details_without_kind_show_the_rows_of_every_kind_their_keys_name(conversation, feed):
    view = kind_of(conversation, feed, {"path": "out/report.md", "exit_code": 0})
    assert (view.kind, rows(view), view.failed) == (
        "command",
        {"Exit code": "0", "Path": "out/report.md"},
        False,
    )


def test_g9_empty_or_absent_optional_keys_add_no_row(conversation, feed):
    details = {"kind": "command", "command": "ls", "cwd": " ", "mime_type": None}
    assert rows(kind_of(conversation, feed, details)) == {"Command": "ls"}


def test_g9_optional_values_are_cut_and_neutralised(conversation, feed):
    details = {"kind": "subagent", "child_session_id": "@bob:x.org\n" + "s" * 300}
    (row,) = kind_of(conversation, feed, details).rows
    assert row.value.startswith(f"@{ZWSP}bob:x.org")
    assert len(row.value) <= 202 and row.value.endswith("…")


@pytest.mark.parametrize(
    "details, shown",
    [
        (["a", 1, {"b": None}], '"details": [\n    "a",\n    1,\n    {\n      "b": null'),
        ("plain words", '"details": "plain words"'),
        (42.5, '"details": 42.5'),
        (True, '"details": true'),
    ],
    ids=["list", "string", "number", "boolean"],
)
def test_g9_non_object_details_show_as_json_in_details_and_nothing_breaks(
    conversation, feed, details, shown
):
    feed(started("c1", args={"q": 1}), completed("c1", "done", details=details))
    found = entry(present(conversation), "c1")
    assert (found.status, found.kind_view, found.is_error) == ("success", None, False)
    assert shown in found.details_json
    assert found.result.text == "done"


def test_g9_custom_without_summary_falls_back_to_the_result_preview(conversation, feed):
    feed(started("c1"), completed("c1", "preview text", details={"kind": "custom"}))
    found = entry(present(conversation), "c1")
    assert found.kind_view is None
    assert found.result.text == "preview text"


def test_g10_title_comes_from_tool_name_and_is_stable(conversation, feed):
    feed(started("c1", "image_generation"))
    running = entry(present(conversation), "c1")
    feed(completed("c1", "SUCCESS: Generated and displayed 1 image to the user"))
    done = entry(present(conversation), "c1")
    assert running.title == done.title == "Image Generation"
    assert humanise_tool_name("SearchEntities") == "Search Entities"
    assert humanise_tool_name("HTTPRequest") == "HTTP Request"
    assert humanise_tool_name("") == "Tool"


def test_g11_success_message_is_shown_as_output(conversation, feed):
    feed(started("c1", "image_generation"), completed("c1", "SUCCESS: Generated 1 image"))
    found = entry(present(conversation), "c1")
    assert found.result.text == "SUCCESS: Generated 1 image"
    assert found.title == "Image Generation"


def test_g11_arrow_lines_go_to_the_progress_line_not_the_output(conversation, feed):
    feed(
        started("c1"),
        {"type": "agent.tool.progress", "tool_call_id": "c1", "output": "→ Loading model\n"},
        {"type": "agent.tool.progress", "tool_call_id": "c1", "output": "step 1 ok\n"},
    )
    found = entry(present(conversation), "c1")
    assert found.progress_line == "→ Loading model"
    assert found.output_tail == "step 1 ok"
    feed({"type": "agent.tool.progress", "tool_call_id": "c1", "message": "Generating…"})
    assert entry(present(conversation), "c1").progress_line == "Generating…"


def test_g12_progress_bar_and_live_output_tail(conversation, feed):
    feed(started("c1"))
    for i in range(12):
        feed({"type": "agent.tool.progress", "tool_call_id": "c1", "output": f"out {i}\n"})
    feed({"type": "agent.tool.progress", "tool_call_id": "c1", "progress": 0.65})
    running = entry(present(conversation), "c1")
    assert running.progress == 0.65 and running.progress_percent == 65
    assert running.output_tail.split("\n") == [f"out {i}" for i in range(4, 12)]
    feed(completed("c1", "all done"))
    done = entry(present(conversation), "c1")
    assert done.progress is None and done.output_tail is None
    assert done.result.text == "all done"


def test_g13_child_nested_under_parent(conversation, feed):
    feed(
        started("p1", "delegate"),
        started("k1", "search", parent_tool_call_id="p1"),
        started("s1", "other"),
        started("g1", "read_file", parent_tool_call_id="k1"),
    )
    batch = only_batch(present(conversation))
    assert batch.count == 2  # children are not top-level
    parent, other = batch.entries
    assert (parent.tool_call_id, other.tool_call_id) == ("p1", "s1")
    (child,) = parent.children
    assert (child.tool_call_id, child.depth) == ("k1", 1)
    (grandchild,) = child.children
    assert (grandchild.tool_call_id, grandchild.depth) == ("g1", 2)


def test_g13_child_whose_parent_is_not_in_the_slice_is_top_level(conversation, feed):
    feed(started("p1"), user("split"), started("k1", parent_tool_call_id="p1"))
    messages = list(conversation.messages.order_by("position"))
    items = present_transcript(messages[1:])  # the parent is outside the slice
    assert kinds(items) == ["user", "tool_batch"]
    assert items[1].entries[0].tool_call_id == "k1"
    assert items[1].entries[0].depth == 0


def test_g13_parent_cycle_does_not_hide_tools(conversation, feed):
    feed(started("a", parent_tool_call_id="b"), started("b", parent_tool_call_id="a"))
    batch = only_batch(present(conversation))
    assert [e.tool_call_id for e in iter_entries(batch.entries)] == ["a", "b"]


def test_g14_retry_line(conversation, feed):
    feed(
        started("c1", "SearchEntities", attempt=2, max_attempts=3),
        started("c2", "SearchEntities", attempt=1, max_attempts=3),
    )
    items = present(conversation)
    assert entry(items, "c1").retry_line == "⟳ Search Entities — Retrying (2/3)"
    assert entry(items, "c2").retry_line is None


# -- T1, S1–S3 --------------------------------------------------------------------


def test_t1_at_sign_neutralised(conversation, feed):
    feed(
        started("c@1", "mail@bot", args={"to": "@alice"}),
        {
            "type": "agent.tool.progress",
            "tool_call_id": "c@1",
            "output": "ping @carol\n",
            "message": "→ @dave",
        },
    )
    running = entry(present(conversation), "c@1")
    feed(
        completed("c@1", "sent to @bob", details={"kind": "custom", "summary": "@all"}),
        started("c2", "x", args_summary="@eve"),
        {"type": "agent.tool.completed", "tool_call_id": "c2", "error": "no @frank"},
    )
    done = entry(present(conversation), "c@1")
    failed = entry(present(conversation), "c2")
    texts = [
        running.output_tail,
        running.progress_line,
        done.title,
        done.tool_name,
        done.call_line,
        done.result.text,
        done.details_json,
        done.kind_view.rows[0].value,
        failed.call_line,
        failed.error,
        failed.result.text,
    ]
    for text in texts:
        assert "@" in text
        assert text.count("@") == text.count("@" + ZWSP), text
    assert done.tool_call_id == "c@1"  # an attribute value, not text


def test_s1_meta_line_sums_the_run_under_its_final_assistant_message(conversation, feed):
    feed(
        user(run_id="r1"),
        step("", [{"id": "c1", "name": "search"}], run_id="r1", duration_ms=500, tokens=100),
        started("c1", "search", run_id="r1"),
        completed("c1", run_id="r1"),
        step("Interim note.", run_id="r1", message_id="a2", duration_ms=300, tokens=50),
        step("All done.", run_id="r1", message_id="a3", duration_ms=400, tokens=500),
    )
    assistants = [i for i in present(conversation) if isinstance(i, AssistantView)]
    assert [a.meta_line for a in assistants] == [None, "Assistant · 1.2s · 650 tokens"]


def test_s1_meta_line_only_with_what_is_known(conversation, feed):
    feed(step("a", message_id="a1", tokens=1), step("b", message_id="a2"))
    first, second = present(conversation)
    assert first.meta_line == "Assistant · 1 token"
    assert second.meta_line is None


def test_s1_no_meta_line_while_the_last_message_streams(conversation, feed):
    feed(
        step("First.", run_id="r1", message_id="a1", duration_ms=100),
        {"type": "agent.message.delta", "message_id": "a2", "delta": "Sec", "run_id": "r1"},
    )
    first, second = present(conversation)
    assert first.meta_line is None and second.meta_line is None
    feed(step("Second.", run_id="r1", message_id="a2", duration_ms=100))
    first, second = present(conversation)
    assert (first.meta_line, second.meta_line) == (None, "Assistant · 200ms")


# -- stored numbers ingest would not accept today render as "—", never crash ---------

HUGE = int("9" * 400)
MALFORMED_NUMBERS = [
    pytest.param(value, id=name)
    for name, value in {
        "400 digits": HUGE,
        "negative": -5,
        "string": "250",
        "list": [250],
        "bool": True,
        "1e300": 1e300,
        "inf": float("inf"),
        "nan": float("nan"),
    }.items()
]


def present_with(conversation, message_id: str, **metadata):
    """Present the conversation after overwriting one message's stored metadata, as a
    row written before ingest bounded numbers (or by hand) would hold it."""
    messages = list(conversation.messages.order_by("position"))
    for message in messages:
        if message.message_id == message_id:
            message.metadata.update(metadata)
    return present_transcript(messages)


def test_g7_duration_text_formats_what_is_sent_and_dashes_what_is_malformed():
    assert duration_text(None) is None
    assert duration_text(250) == "250 ms"
    assert duration_text(315_360_000_000) == format_duration(315_360_000_000)
    for param in MALFORMED_NUMBERS:
        assert duration_text(param.values[0]) == "—", param.id


@pytest.mark.parametrize("value", MALFORMED_NUMBERS)
def test_g7_malformed_stored_tool_duration_shows_a_dash(conversation, feed, value):
    feed(started("c1"), completed("c1", duration_ms=250))
    items = present_with(conversation, "tool_c1", tool_duration_ms=value)
    assert entry(items, "c1").duration_text == "—"


@pytest.mark.parametrize("value", MALFORMED_NUMBERS)
def test_s1_malformed_stored_duration_or_tokens_shows_a_dash_in_the_meta_line(
    conversation, feed, value
):
    feed(
        step("One.", run_id="r1", message_id="a1", duration_ms=100, tokens=5),
        step("Two.", run_id="r1", message_id="a2", duration_ms=100, tokens=5),
    )
    (_, last) = present_with(conversation, "a1", duration_ms=value)
    assert last.meta_line == "Assistant · — · 10 tokens"
    (_, last) = present_with(conversation, "a1", tokens=value)
    assert last.meta_line == "Assistant · 200ms · — tokens"


@pytest.mark.parametrize("value", MALFORMED_NUMBERS)
def test_g12_malformed_stored_progress_shows_no_bar(conversation, feed, value):
    feed(started("c1"), {"type": "agent.tool.progress", "tool_call_id": "c1", "progress": 0.5})
    running = entry(present_with(conversation, "tool_c1", progress=value), "c1")
    assert (running.progress, running.progress_percent) == (None, None)


def test_g14_malformed_stored_attempts(conversation, feed):
    feed(started("c1", "fetch", attempt=2, max_attempts=3))
    assert entry(present(conversation), "c1").retry_line == "⟳ Fetch — Retrying (2/3)"
    items = present_with(conversation, "tool_c1", max_attempts=HUGE)
    assert entry(items, "c1").retry_line == "⟳ Fetch — Retrying (2/—)"
    assert entry(present_with(conversation, "tool_c1", attempt=HUGE), "c1").retry_line is None


def test_s2_run_failure_shows_a_red_banner_and_keeps_history(conversation, feed):
    feed(
        user(run_id="r1"),
        started("c1", run_id="r1"),
        {"type": "agent.status", "status": "thinking", "run_id": "r1"},
        {"type": "agent.status", "status": "failed", "error_message": "Model down", "run_id": "r1"},
    )
    items = present(conversation)
    assert kinds(items) == ["user", "tool_batch", "status"]
    banner = items[-1]
    assert banner.is_run_error and banner.is_banner and banner.status_type == "error"
    assert banner.text == "Model down"


def test_s3_reconciled_transcript_drops_ephemeral_lines_and_keeps_the_batch(conversation, feed):
    feed(
        started("c1", run_id="r1"),
        {"type": "agent.status", "status": "thinking", "run_id": "r1"},
        started("c2", run_id="r1"),
        {"type": "agent.status", "status": "completed", "run_id": "r1"},
    )
    items = present(conversation)
    assert kinds(items) == ["tool_batch"]
    assert items[0].count == 2


# -- helpers for the live push, and cost -------------------------------------------


def test_present_batch_and_batch_containing(conversation, feed):
    feed(user(), started("c1"), started("k1", parent_tool_call_id="c1"), started("c2"))
    messages = list(conversation.messages.order_by("position"))
    batch = present_batch(messages[1:])
    assert batch.count == 2
    child = next(m for m in messages if m.tool_call_id == "k1")
    assert batch_containing(present_transcript(messages), child.pk).dom_id == batch.dom_id


@pytest.mark.django_db
def test_presenting_200_messages_needs_no_queries_and_is_fast(
    conversation, feed, django_assert_num_queries
):
    events = []
    for i in range(50):  # four messages each: started+completed is one message
        events += [
            user(f"question {i}"),
            step(f"Answer **{i}**", message_id=f"a{i}"),
            started(f"c{i}", args={"n": i}),
            completed(f"c{i}", "line\n" * 20, duration_ms=5),
            {"type": "agent.status", "status": "info", "message": "fyi"},
        ]
    feed(*events)
    messages = list(conversation.messages.order_by("position"))
    assert len(messages) == 200
    began = time.perf_counter()
    with django_assert_num_queries(0):
        items = present_transcript(messages)
    assert time.perf_counter() - began < 1.0  # generous: it takes a few milliseconds
    assert len(batches(items)) == 50


# -- [001] skipped in the batch header; G9 details read by their keys ------------------


def _entry_with_details(conversation, details):
    ingest(
        conversation,
        [
            {"type": "agent.tool.started", "tool_call_id": "d", "tool_name": "t"},
            {
                "type": "agent.tool.completed",
                "tool_call_id": "d",
                "result": "ok",
                "details": details,
            },
        ],
    )
    (batch,) = present_transcript(list(conversation.messages.order_by("position")))
    return batch.entries[0]


@pytest.mark.parametrize(
    ("details", "kind", "label"),
    [
        ({"path": "a.py"}, "file", "Path"),
        ({"exit_code": 2}, "command", "Exit code"),
        ({"command": "ls"}, "command", "Command"),
        ({"url": "https://x.org"}, "fetch", "URL"),
        ({"status_code": 404}, "fetch", "HTTP status"),
    ],
)
def test_g9_details_without_kind_are_read_by_their_keys(conversation, details, kind, label):
    view = _entry_with_details(conversation, details).kind_view
    assert view.kind == kind and view.rows[0].label == label


def test_g9_batch_header_counts_skipped_beside_failed(conversation):
    ingest(
        conversation,
        [
            {"type": "agent.tool.started", "tool_call_id": "a", "tool_name": "a"},
            {"type": "agent.tool.completed", "tool_call_id": "a", "error": "boom"},
            {"type": "agent.tool.started", "tool_call_id": "b", "tool_name": "b"},
            {"type": "agent.tool.completed", "tool_call_id": "b", "skipped": True},
        ],
    )
    (batch,) = present_transcript(list(conversation.messages.order_by("position")))
    assert (batch.failed_text, batch.skipped_text) == ("1 failed", "1 skipped")


# -- docs/rendering.md#watching-a-run watching a run: live batch summaries
# ------------------------------------------


def test_sec10_summary_names_distinct_tools_first_two_then_how_many_more(conversation, feed):
    feed(
        started("c1", "list_files"),
        started("c2", "read_file"),
        started("c3", "read_file"),
        started("c4", "grep"),
        started("c5", "write_file"),
        started("c6", "bash"),
    )
    assert only_batch(present(conversation)).names_text == "List Files, Read File +3"


def test_sec10_batch_of_one_does_not_repeat_its_title(conversation, feed):
    feed(started("c1", "list_files"))
    batch = only_batch(present(conversation))
    assert batch.title == "List Files"
    assert batch.names_text is None


def test_sec10_summary_counts_running_queued_failed_skipped_apart(conversation, feed):
    feed(
        started("c1"),
        started("c2"),
        completed("c2", error="boom"),
        started("c3"),
        completed("c3", skipped=True),
    )
    conversation.messages.filter(tool_call_id="c1").update(tool_status="queued")
    feed(started("c4"))
    batch = only_batch(present(conversation))
    assert (batch.running_text, batch.queued_text) == ("1 running", "1 waiting")  # W3
    assert (batch.failed_text, batch.skipped_text) == ("1 failed", "1 skipped")


def test_sec10_summary_shows_the_running_entry_title_progress_and_clock(conversation, feed):
    feed(
        started("c1", "list_files"),
        completed("c1"),
        started("c2", "read_file"),
        {"type": "agent.tool.progress", "tool_call_id": "c2", "message": "reading a.txt"},
    )
    live = only_batch(present(conversation)).live
    assert (live.title, live.progress_line) == ("Read File", "reading a.txt")
    assert live.elapsed_text is not None and live.started_at_iso


def test_sec10_batch_is_open_while_an_entry_runs_and_closed_after(conversation, feed):
    feed(started("c1"), started("c2"), completed("c1"))
    assert only_batch(present(conversation)).open is True
    feed(completed("c2"))
    batch = only_batch(present(conversation))
    assert batch.open is False and batch.live is None and batch.running_text is None


# -- G15 one honest outcome ----------------------------------------------------------


@pytest.mark.parametrize(
    "details",
    [{"kind": "command", "exit_code": 2}, {"kind": "fetch", "status_code": 404}],
    ids=["exit-2", "http-404"],
)
def test_g15_nonzero_exit_and_http_404_are_failures_even_if_stored_as_success(
    conversation, feed, details
):
    feed(started("c1"), completed("c1", result="output", details=details))
    # An older row stored as a success: the presenter applies the same rule.
    conversation.messages.filter(tool_call_id="c1").update(tool_status="success")
    batch = only_batch(present(conversation))
    failed = entry([batch], "c1")
    assert (failed.is_error, failed.status) == (True, "error")
    assert failed.kind_view.failed is True
    assert batch.failed_text == "1 failed" and batch.has_error


def test_g15_exit_0_and_http_200_are_not_failures(conversation, feed):
    feed(
        started("c1"),
        completed("c1", details={"kind": "command", "exit_code": 0}),
        started("c2"),
        completed("c2", details={"kind": "fetch", "status_code": 200}),
    )
    batch = only_batch(present(conversation))
    assert batch.failed_text is None
    assert not any(row.is_failure for e in batch.entries for row in e.kind_view.rows)


# -- G14 attempts of one call ------------------------------------------------------------


def test_g14_attempts_of_one_call_are_one_entry_with_history(conversation, feed):
    feed(
        started("c1", "flaky", args={"q": 1}, attempt=1, max_attempts=3),
        completed("c1", error="timeout"),
        started("c2", "flaky", args={"q": 1}, attempt=2, max_attempts=3),
        completed("c2", result="fine"),
    )
    batch = only_batch(present(conversation))
    assert batch.count == 1
    (merged,) = batch.entries
    assert merged.status == "success" and merged.tool_call_id == "c2"
    assert merged.attempt_history == "failed once, succeeded on 2/3"
    assert merged.dom_id == f"m-{merged.pks[0]}" and len(merged.pks) == 2
    assert batch.failed_text is None and not batch.has_error  # recovered: not counted


def test_g13_g14_what_an_earlier_attempt_called_stays_in_view(conversation, feed):
    """A sub-agent's first attempt called a tool, then failed; the retry is one entry
    with both attempts' nested calls, in order — the first attempt's call was hidden."""
    feed(
        started("a1", "research", args={"q": 1}, attempt=1, max_attempts=3),
        started("k1", "search", parent_tool_call_id="a1"),
        completed("k1", result="three hits"),
        completed("a1", error="timeout"),
        started("a2", "research", args={"q": 1}, attempt=2, max_attempts=3),
        started("k2", "search", parent_tool_call_id="a2"),
    )
    batch = only_batch(present(conversation))
    (merged,) = batch.entries
    assert merged.tool_call_id == "a2"
    assert merged.attempt_history == "failed once, attempt 2/3 running"
    assert [child.tool_call_id for child in merged.children] == ["k1", "k2"]


def test_g14_an_unrecovered_retry_counts_once(conversation, feed):
    feed(
        started("c1", "flaky", attempt=1, max_attempts=2),
        completed("c1", error="timeout"),
        started("c2", "flaky", attempt=2, max_attempts=2),
        completed("c2", error="timeout again"),
    )
    batch = only_batch(present(conversation))
    assert batch.entries[0].attempt_history == "failed twice"
    assert batch.failed_text == "1 failed"


def test_g14_different_args_or_a_success_before_are_separate_calls(conversation, feed):
    feed(
        started("c1", "flaky", args={"q": 1}, attempt=1),
        completed("c1", error="x"),
        started("c2", "flaky", args={"q": 2}, attempt=2),
        started("c3", "flaky", args={"q": 2}, attempt=3),
    )
    assert only_batch(present(conversation)).count == 3


def test_g14_batch_containing_finds_an_earlier_attempt(conversation, feed):
    feed(
        started("c1", "flaky", attempt=1),
        completed("c1", error="x"),
        started("c2", "flaky", attempt=2),
    )
    first = conversation.messages.get(tool_call_id="c1")
    assert batch_containing(present(conversation), first.pk) is not None


# -- G16 full output in place, copy ------------------------------------------------------


def test_g16_a_cut_result_carries_its_full_text_unquoted(conversation, feed):
    text = "\n".join(f'line {n} "quoted" @x' for n in range(20))
    feed(started("c1", args={"path": "a"}), completed("c1", result=text))
    found = entry(present(conversation), "c1")
    assert found.result.note == "… (12 more lines)"
    assert found.result.full_text.count("\n") == 19
    assert '"quoted"' in found.result.full_text and f"@{ZWSP}x" in found.result.full_text
    assert found.args_text == '{\n  "path": "a"\n}'


def test_g16_a_result_that_fits_has_no_full_text(conversation, feed):
    feed(started("c1"), completed("c1", result="short"))
    assert entry(present(conversation), "c1").result.full_text is None


def test_sec10_no_summary_row_repeating_the_call_line(conversation, feed):
    feed(
        started("c1", "search", args_summary="query: dbplus"),
        completed("c1", details={"kind": "custom", "summary": "query: dbplus"}),
    )
    assert entry(present(conversation), "c1").kind_view is None


def test_sec10_a_queued_call_without_args_has_no_empty_details(conversation, feed):
    feed(started("c1", args={}))
    found = entry(present(conversation), "c1")
    assert found.details_json is None and found.args_text is None


# -- docs/rendering.md#one-status-line one status line
# ------------------------------------------------------------------


def test_sec10_a_run_shows_one_thinking_line_the_latest(conversation, feed):
    feed(
        {"type": "agent.status", "status": "thinking", "message": "Reading", "run_id": "r"},
        {"type": "agent.status", "status": "thinking", "message": "Planning", "run_id": "r"},
    )
    lines = [item for item in present(conversation) if isinstance(item, StatusView)]
    assert [line.text for line in lines] == ["Planning"]


def test_sec10_a_runs_work_replaces_its_thinking_line(conversation, feed):
    feed(
        {"type": "agent.status", "status": "thinking", "message": "Planning", "run_id": "r"},
        {**started("c1"), "run_id": "r"},
        {"type": "agent.status", "status": "info", "message": "Heads up", "run_id": "r"},
    )
    statuses = [item.status_type for item in present(conversation) if isinstance(item, StatusView)]
    assert statuses == ["info"]  # a toast does not bring the spinner back


def test_g14_a_retry_queued_behind_other_calls_still_joins_its_first_attempt(conversation, feed):
    # A runtime that announces a step's calls up front: attempt 2 comes after them.
    feed(
        started("c1", "flaky", args={"k": 1}, attempt=1, max_attempts=3),
        started("c2", "calculate"),
        completed("c1", error="timeout"),
        completed("c2"),
        started("c3", "flaky", args={"k": 1}, attempt=2, max_attempts=3),
        completed("c3", result="ok"),
    )
    batch = only_batch(present(conversation))
    assert [e.tool_call_id for e in batch.entries] == ["c3", "c2"]  # at the first attempt's place
    assert batch.failed_text is None


def test_g5_g6_entry_icon_says_failed_pending_skipped_or_done(conversation, feed):
    feed(
        user(),
        started("ok"),
        completed("ok"),
        started("bad"),
        completed("bad", error="no such file"),
        started("busy"),
        started("skip"),
        {"type": "agent.tool.completed", "tool_call_id": "skip", "skipped": True},
    )
    items = present(conversation)
    icons = {call: entry(items, call).icon for call in ("ok", "bad", "busy", "skip")}
    # W7: names of the vendored SVG icons (chatui/icons/)
    assert icons == {
        "ok": "check",
        "bad": "circle-x",
        "busy": "loader-circle",
        "skip": "minus",
    }  # W3


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kathmandu"])
@pytest.mark.parametrize(
    "moment", ["2026-01-16T10:00:07Z", "2026-07-01T23:59:59.999999+00:00", "0999-03-04T05:06:07Z"]
)
def test_r1_a_messages_time_is_what_the_date_filter_showed(zone, moment):
    """The shown time and its title are formatted by the presenter (the `date` filter
    read the active language and time zone twice per use: docs/SCALING.md#cluster-under-fire),
    exactly as `{{ timestamp|date:"H:i" }}` and `…|date:"Y-m-d H:i:s e" }}` showed them,
    in the active time zone."""
    from django.template import Context, Template
    from django.utils import timezone

    from chatui.read.presenters import MessageView

    when = parse_datetime(moment)
    template = Template("{{ t|date:'H:i' }}|{{ t|date:'Y-m-d H:i:s e' }}")
    with timezone.override(zone):
        expected = template.render(Context({"t": when}))
        message = type("Row", (), {"timestamp": when, "dom_id": "m-1", "pk": 1})
        message.message_id, message.updated_seq = "x", 1
        fields = MessageView.fields_of(message)
    assert f"{fields['time_shown']}|{fields['time_title']}" == expected
