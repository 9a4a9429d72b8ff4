"""Issue 28: a moment's transcript items are rendered once and kept between moments
(chatui.web.replay_views.items_html) — and the transcript is still, byte for byte, the
live page's `transcript` partial rendered with the same items: over a walk of moments
(so items come from what earlier moments kept), with texts kept on the server whose
links name each moment's own seq, and for views that compare equal but render apart.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from chatui.ingest.service import ingest
from chatui.models import Conversation
from chatui.read import presenters, replay
from chatui.web import replay_views
from tests.support.huge_results import huge_result
from tests.support.showcase import showcase_events

START = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


@pytest.fixture
def fresh_memo():
    replay.kept.clear()
    replay_views._ITEM_HTML.clear()
    yield
    replay.kept.clear()
    replay_views._ITEM_HTML.clear()


def conversation_with_a_huge_result(user) -> Conversation:
    """The showcase, then a tool whose result is kept on the server (its link asks for
    the text as of the moment: `?at=N`), then more steps after it."""
    events = showcase_events()
    events += [
        {"type": "user.message", "run_id": "big", "content": "Read the log <b>now</b>"},
        {"type": "agent.tool.started", "run_id": "big", "tool_call_id": "huge",
         "tool_name": "read_file", "args": {"path": "app.log"}},
        {"type": "agent.tool.completed", "run_id": "big", "tool_call_id": "huge",
         "result": huge_result("moment", size=300_000), "duration_ms": 5},
    ]  # fmt: skip
    events += [
        {"type": "agent.status", "run_id": "big", "status": "info", "message": f"step {n}"}
        for n in range(6)
    ]
    for n, event in enumerate(events):
        event["timestamp"] = (START + timedelta(seconds=n)).isoformat()
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, events)
    return conversation


def test_issue28_a_moments_transcript_is_the_live_transcript_partial(user, fresh_memo):
    conversation = conversation_with_a_huge_result(user)
    last = conversation.last_seq
    walk = [last, last - 1, last - 3, last, last - 6, last - 2, last - 6, 5, last]
    for seq in walk:
        at = replay.moment(conversation, seq)
        expected = render_to_string(
            "chatui/_transcript.html#transcript", replay.transcript_context(conversation, at)
        )
        got = render_to_string(
            "chatui/_moment.html#transcript", replay_views.moment_context(conversation, at)
        )
        assert got == expected, f"at {seq}"
        if seq >= last - 6:  # the huge result is there, its text on the server
            assert f"output?at={seq}" in got
            assert "<script>alert" not in got
    assert len(replay_views._ITEM_HTML._entries) > 0  # items were kept, and served


def test_issue28_views_equal_in_value_but_rendered_apart_do_not_share_html(user, fresh_memo):
    """`"<b>x</b>" == SafeString("<b>x</b>")`, and `1 == 1.0`: a memo keyed by the view
    would serve an answer's sanitised HTML for a text to escape (or the reverse)."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(
        conversation,
        [
            {"type": "user.message", "run_id": "r", "content": "hi"},
            {"type": "agent.step.completed", "run_id": "r", "message_id": "a",
             "content": "**fine**"},
        ],
    )  # fmt: skip
    at = replay.moment(conversation, conversation.last_seq)
    items = replay.transcript_context(conversation, at)["items"]
    answer = next(item for item in items if isinstance(item, presenters.AssistantView))
    safe = dataclasses.replace(answer, html=SafeString("<b>x</b>"))
    plain = dataclasses.replace(answer, html="<b>x</b>")
    assert safe == plain  # what a key by value would conflate
    [safe_html] = replay_views.items_html([safe], at)
    [plain_html] = replay_views.items_html([plain], at)
    assert "<b>x</b>" in safe_html
    assert "&lt;b&gt;x&lt;/b&gt;" in plain_html and "<b>x</b>" not in plain_html
