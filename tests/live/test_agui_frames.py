"""docs/rendering.md#r6, docs/events.md#ag-ui: live frames of an AG-UI stream show what a fresh
load shows — the reasoning block as it streams, the card as its call starts, the failed
attempt when Pydantic AI's marker arrives."""

from __future__ import annotations

import re

from chatui.ingest.service import ingest
from chatui.live import frames
from tests.support.agui import capture


def frame_for(conversation, *events) -> str:
    result = ingest(conversation, list(events))
    conversation.refresh_from_db()
    first = result.last_seq - result.accepted + 1
    return frames.change_frame(conversation, first, result.last_seq, result.changes).html


def transcript_html(conversation) -> str:
    frame = frames.replay_frame(conversation.pk, 0)
    return frame.html


def test_r6_a_reasoning_block_appears_live_and_ends_the_batch_as_a_fresh_load_does(conversation):
    frame_for(conversation, {"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
    live = frame_for(
        conversation,
        {"type": "TOOL_CALL_START", "toolCallId": "c0", "toolCallName": "ls"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "Hmm <b>x</b>"},
    )
    assert "data-reasoning" in live and "Thinking…" in live
    assert "Hmm &lt;b&gt;x&lt;/b&gt;" in live
    after = frame_for(
        conversation,
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "cat"},
    )
    assert 'data-count="1"' in after  # a new batch after the block, not the first one's
    fresh = transcript_html(conversation)
    assert len(re.findall(r"data-tool-batch\b", fresh)) == 2
    assert fresh.index('data-message-id="r1"') < fresh.index("Cat")


def test_g6_the_retried_marker_turns_the_card_into_a_failure_in_a_live_frame(conversation):
    events = capture("pydantic_ai")
    marker = next(i for i, e in enumerate(events) if e["type"] == "REASONING_ENCRYPTED_VALUE")
    ingest(conversation, events[:marker])
    live = frame_for(conversation, events[marker])
    assert 'data-status="error"' in live
