"""Live frames (docs/rendering.md#live-updates): what one ingest sends to every viewer."""

from __future__ import annotations

import re

from chatui.ingest.service import ingest
from chatui.live import frames


def frame_for(conversation, *events):
    result = ingest(conversation, list(events))
    conversation.refresh_from_db()
    return frames.change_frame(
        conversation, result.last_seq - result.accepted + 1, result.last_seq, result.changes
    ).html


def test_frame_marker_carries_the_seq_range(conversation):
    html = frame_for(
        conversation,
        {"type": "user.message", "content": "a"},
        {"type": "user.message", "content": "b"},
    )
    assert html.startswith("<!--seq 1 2-->")


def test_new_messages_are_appended_existing_ones_replaced_by_id(conversation):
    html = frame_for(
        conversation, {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "ls"}
    )
    assert html.count('hx-swap-oob="beforeend:#transcript"') == 1
    batch_id = re.search(r'<details id="(b-\d+)"', html).group(1)
    html = frame_for(
        conversation, {"type": "agent.tool.started", "tool_call_id": "c2", "tool_name": "cat"}
    )
    # G2 and docs/rendering.md#watching-a-run: the second tool is appended into the same batch's
    # list, and only the batch's summary is swapped (now counting two); the batch itself is not
    # re-rendered.
    assert html.count(f'hx-swap-oob="beforeend:#{batch_id}-entries"') == 1
    assert "beforeend:#transcript" not in html
    assert f'<details id="{batch_id}"' not in html
    assert f'<summary id="{batch_id}-summary"' in html and 'data-batch-count="2"' in html


def test_s1_meta_line_moves_to_the_last_final_step_live(conversation):
    frame_for(
        conversation,
        {
            "type": "agent.step.completed",
            "message_id": "a1",
            "content": "first",
            "run_id": "r",
            "duration_ms": 1000,
            "tokens": 10,
        },
    )
    html = frame_for(
        conversation,
        {
            "type": "agent.step.completed",
            "message_id": "a2",
            "content": "second",
            "run_id": "r",
            "duration_ms": 500,
            "tokens": 5,
        },
    )
    # a1 is re-rendered without its line; a2 carries the run's sum.
    assert html.count("data-meta-line") == 1
    assert "Assistant · 1.5s · 15 tokens" in html
    assert 'data-message-id="a1"' in html


def test_text_hidden_by_r3_is_deleted_live(conversation):
    frame_for(
        conversation, {"type": "agent.message.delta", "message_id": "a1", "delta": "Let me check"}
    )
    html = frame_for(
        conversation,
        {
            "type": "agent.step.completed",
            "message_id": "a1",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "ls"}],
        },
    )
    assert re.search(r'<div id="m-\d+" hx-swap-oob="delete"></div>', html)


def test_s3_run_end_removes_ephemeral_statuses_live(conversation):
    thinking = frame_for(
        conversation, {"type": "agent.status", "status": "thinking", "run_id": "r"}
    )
    dom_id = re.search(r'id="(m-\d+)" class="status', thinking).group(1)
    html = frame_for(
        conversation,
        {"type": "agent.status", "status": "failed", "run_id": "r", "error_message": "boom"},
    )
    assert f'<div id="{dom_id}" hx-swap-oob="delete"></div>' in html  # S3
    assert "data-run-error" in html and "boom" in html  # S2, appended
    assert 'id="run-state"' in html and 'data-conversation-status="failed"' in html


def test_reproject_sends_the_whole_transcript(conversation):
    from chatui.ingest.service import reproject

    ingest(conversation, {"type": "user.message", "content": "hi"})
    changes = reproject(conversation)
    conversation.refresh_from_db()
    html = frames.change_frame(conversation, 1, conversation.last_seq, changes).html
    assert '<section id="transcript"' in html and 'hx-swap-oob="true"' in html


def test_sec10_a_live_tool_change_swaps_only_that_entry_and_the_summary(conversation):
    frame_for(
        conversation,
        {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "ls"},
        {"type": "agent.tool.started", "tool_call_id": "c2", "tool_name": "cat"},
    )
    first, second = conversation.messages.order_by("position")
    html = frame_for(
        conversation,
        {"type": "agent.tool.progress", "tool_call_id": "c2", "message": "reading"},
    )
    assert f'<li id="m-{second.pk}"' in html
    assert f'id="m-{first.pk}"' not in html  # the other entry is left alone
    assert "<details id=" not in html  # the batch itself is not re-rendered
    assert f'<summary id="b-{first.pk}-summary"' in html and 'hx-swap-oob="true"' in html
    assert "reading" in html


def test_g14_a_retry_replaces_the_first_attempts_entry_in_place(conversation):
    frame_for(
        conversation,
        {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "f", "attempt": 1},
        {"type": "agent.tool.completed", "tool_call_id": "c1", "error": "x"},
    )
    first = conversation.messages.get(tool_call_id="c1")
    html = frame_for(
        conversation,
        {"type": "agent.tool.started", "tool_call_id": "c2", "tool_name": "f", "attempt": 2},
    )
    assert f'<li id="m-{first.pk}"' in html and 'data-tool-call-id="c2"' in html
    assert "beforeend" not in html


def test_sec10_a_runs_new_work_deletes_its_thinking_line_in_the_same_frame(conversation):
    frame_for(
        conversation,
        {"type": "agent.status", "status": "thinking", "message": "Planning", "run_id": "r"},
    )
    spinner = conversation.messages.get(status_type="thinking")
    html = frame_for(
        conversation,
        {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "ls", "run_id": "r"},
    )
    assert f'<div id="m-{spinner.pk}" hx-swap-oob="delete"></div>' in html


def test_sec10_the_heading_travels_with_the_run_state(conversation):
    conversation.title = ""
    conversation.save()
    html = frame_for(conversation, {"type": "user.message", "content": "Name me"})
    assert '<h1 id="conversation-title" hx-swap-oob="true">Name me</h1>' in html


def test_sec10_one_frame_with_two_thinking_lines_and_work_leaves_only_the_last_line(
    conversation,
):
    frame_for(
        conversation,
        {"type": "agent.status", "status": "thinking", "message": "Old", "run_id": "r"},
    )
    html = frame_for(
        conversation,
        {"type": "agent.status", "status": "thinking", "message": "Mid", "run_id": "r"},
        {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "ls", "run_id": "r"},
        {"type": "agent.status", "status": "thinking", "message": "New", "run_id": "r"},
    )
    old, mid, new = conversation.messages.filter(status_type="thinking").order_by("position")
    assert f'<div id="m-{old.pk}" hx-swap-oob="delete">' in html
    # Added and replaced within this frame: never sent, neither rendered nor deleted.
    assert f"m-{mid.pk}" not in html
    assert f'<div id="m-{new.pk}" hx-swap-oob="delete">' not in html
