"""Streaming answers cost O(delta) (docs/PERFORMANCE.md#p5, docs/rendering.md#streaming-text, issue
12 item 1): a delta appends in SQL and its live frame carries only the new text; the message's end
brings the final Markdown, as a fresh load shows it."""

from __future__ import annotations

import re

from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatui.ingest.service import ingest, reproject
from chatui.live import frames
from chatui.models import Message
from chatui.read import pages

LONG_TEXT = "All work and no play makes Jack a dull boy. " * 400  # ~18 KB


def delta(text: str, message_id: str = "a1", **extra) -> dict:
    return {"type": "agent.message.delta", "message_id": message_id, "delta": text, **extra}


def frame_for(conversation, *events) -> str:
    result = ingest(conversation, list(events))
    conversation.refresh_from_db()
    first = result.last_seq - result.accepted + 1
    return frames.change_frame(conversation, first, result.last_seq, result.changes).html


def fresh_transcript(conversation) -> str:
    return frames.full_frame(conversation).html


def test_p5_delta_frame_on_a_long_message_carries_only_the_new_text(conversation):
    ingest(conversation, [delta(LONG_TEXT)])
    html = frame_for(conversation, delta("tokens"))
    pk = Message.objects.get(message_id="a1").pk
    assert len(html.encode()) <= 1024
    assert f'hx-swap-oob="beforeend:#m-{pk} [data-stream-text]"' in html and ">tokens</div>" in html
    assert "dull boy" not in html


def test_p5_delta_does_not_read_the_message_text_back(conversation):
    ingest(conversation, [delta(LONG_TEXT)])
    with CaptureQueriesContext(connection) as queries:
        ingest(conversation, [delta("more"), delta(" text")])
    sql = "\n".join(query["sql"] for query in queries.captured_queries)
    assert "dull boy" not in sql  # the text is neither read into a statement nor rewritten
    assert re.search(r'SET "content" = .*("content"|CONCAT).*\|\||CONCAT\(', sql)
    message = Message.objects.get(message_id="a1")
    assert message.content == LONG_TEXT + "more text" and message.updated_seq == 3


def test_p5_deltas_of_one_batch_are_one_part_each_with_their_seq(conversation):
    ingest(conversation, [delta("Hello")])
    html = frame_for(conversation, delta(", "), delta("world"))
    assert re.findall(r'data-delta-seq="(\d+)">([^<]*)</div>', html) == [
        ("2", ", "),
        ("3", "world"),
    ]


def test_sec_delta_frame_text_is_escaped(conversation):
    ingest(conversation, [delta("Start ")])
    html = frame_for(conversation, delta('<img src=x onerror="alert(1)">&'))
    assert "<img" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;" in html


def test_p5_delta_to_a_bubble_not_shown_yet_renders_the_message(conversation):
    # Blank so far: the page has no bubble to append to, so the message is rendered.
    ingest(conversation, [delta("   ")])
    html = frame_for(conversation, delta("Now words"))
    assert "data-delta-seq" not in html and "Now words" in html and "data-stream-text" in html


def test_r3_json_like_streaming_text_stays_held_back_not_appended(conversation):
    ingest(conversation, [delta('{"query": ')])
    html = frame_for(conversation, delta('"x"}'))
    assert "data-delta-seq" not in html and "query" not in html


def test_p5_delta_and_step_completed_in_one_batch_send_the_final_render(conversation):
    ingest(conversation, [delta("Streaming ")])
    html = frame_for(
        conversation,
        delta("text"),
        {"type": "agent.step.completed", "message_id": "a1", "content": "Final **answer**"},
    )
    assert "data-delta-seq" not in html and "<strong>answer</strong>" in html


def test_sec10_streaming_answer_is_aria_busy_and_escaped_text_until_it_ends(conversation):
    ingest(conversation, [delta("Some **bold** <b>text</b>")])
    html = fresh_transcript(conversation)
    assert 'aria-busy="true"' in html and "data-streaming" in html
    assert "Some **bold** &lt;b&gt;text&lt;/b&gt;" in html and "<strong>" not in html


def test_s3_run_end_ends_its_streaming_answer_with_the_final_markdown(conversation):
    run = {"run_id": "r1"}
    ingest(conversation, [{"type": "agent.status", "status": "running", **run}])
    ingest(conversation, [delta("Half **an** answer", **run)])
    html = frame_for(conversation, {"type": "agent.status", "status": "completed", **run})
    assert "<strong>an</strong>" in html and "aria-busy" not in html
    message = Message.objects.get(message_id="a1")
    assert message.is_final and message.content == "Half **an** answer"
    assert "<strong>an</strong>" in fresh_transcript(conversation)
    # A delta after the end is ignored, like one after step.completed (docs/events.md#tolerance
    # tolerance).
    ingest(conversation, [delta(" more", **run)])
    assert Message.objects.get(message_id="a1").content == "Half **an** answer"


def test_reproject_gives_the_text_the_appends_built(conversation):
    ingest(conversation, [delta("one ")])
    for word in ("two ", "three ", "four"):
        ingest(conversation, [delta(word)])
    before = list(Message.objects.values_list("message_id", "content", "updated_seq"))
    reproject(conversation)
    assert list(Message.objects.values_list("message_id", "content", "updated_seq")) == before
    assert before[0][1] == "one two three four"


def test_l3_replay_after_deltas_sends_the_whole_streaming_text(conversation):
    ingest(conversation, [delta("Hello")])
    ingest(conversation, [delta(", wor")])
    ingest(conversation, [delta("ld")])
    replay = frames.replay_frame(conversation.pk, 1)
    assert "Hello, world" in replay.html and "data-delta-seq" not in replay.html
    assert 'data-seq="3"' in replay.html


def test_transcript_context_of_a_streaming_answer_renders(conversation):
    ingest(conversation, [delta("partial")])
    assert pages.transcript_context(conversation)["last_seq"] == 1


def test_p5_agentspine_message_update_is_sent_as_a_delta_too(conversation):
    ingest(conversation, [{"type": "agent_start"}, {"type": "message_start", "role": "assistant"}])
    ingest(conversation, [{"type": "message_update", "role": "assistant", "delta": "Hello"}])
    html = frame_for(conversation, {"type": "message_update", "role": "assistant", "delta": " you"})
    assert re.search(r'data-delta-seq="\d+"> you</div>', html)
    ingest(conversation, [{"type": "message_end", "role": "assistant", "text_preview": "x"}])
    assert Message.objects.get(role="assistant").content == "Hello you"
