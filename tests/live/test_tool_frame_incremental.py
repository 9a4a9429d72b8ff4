"""docs/PERFORMANCE.md tool steps (issue 12): a tool event's frame costs what changed, not the
batch.

Live frames keep each conversation's latest tool batch (chatui.live.batch_cache) and bring
it up to date from the next frame's ChangeSet instead of reading and presenting the
whole batch again. The rule these tests hold it to: every frame is exactly the frame
the batch read afresh gives (the golden frames of tests/live/test_tool_frame_cost.py pin
the same down for fixed scenarios), and a frame that cannot know what changed since
the kept batch (a gap, a rebuild elsewhere) reads the batch again.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chatui.ingest.service import ingest, reproject
from chatui.live import batch_cache, frames
from chatui.models import Conversation
from chatui.read import presenters, selectors
from tests.support.frame_queries import frame_queries
from tests.support.html import untimed
from tests.support.tool_steps import done, status, timed, tool

RUN = "r"

pytestmark = pytest.mark.django_db


def fresh_frame(conversation: Conversation, first: int, last: int, changes) -> str:
    """The frame as the batch read afresh gives it; the kept batch is left as it was."""
    key = batch_cache.key_of(conversation.pk)
    kept = batch_cache.BATCHES.get(key)
    batch_cache.BATCHES.discard(key)
    html = frames.change_frame(conversation, first, last, changes).html
    batch_cache.BATCHES.discard(key)
    if kept is not None:
        batch_cache.BATCHES.put(key, kept)
    return html


def step(conversation: Conversation, events: list[dict]) -> tuple[str, str] | None:
    """Ingest `events`; (the live frame, the frame read afresh), or None if none."""
    result = ingest(conversation, events)
    if not result.accepted:
        return None
    conversation.refresh_from_db()
    first = result.last_seq - result.accepted + 1
    fresh = fresh_frame(conversation, first, result.last_seq, result.changes)
    live = frames.change_frame(conversation, first, result.last_seq, result.changes).html
    return untimed(live), untimed(fresh)


def kept_seq(conversation: Conversation) -> int | None:
    kept = batch_cache.BATCHES.get(batch_cache.key_of(conversation.pk))
    return None if kept is None else kept.seq


@pytest.fixture
def small_window(monkeypatch):
    """BATCH_WINDOW of 4: giant batches (docs/rendering.md#long-transcripts) within a few events."""
    for module in (presenters, selectors, batch_cache):
        monkeypatch.setattr(module, "BATCH_WINDOW", 4)


# -- the property -------------------------------------------------------------------------


def _event(kind: str, n: int, calls: list[str], draw_index: int) -> dict | None:
    """One event of a run: `draw_index` picks the call it is about."""
    call = calls[draw_index % len(calls)] if calls else None
    if kind == "start" or call is None:
        new = f"c{n}"
        parent = calls[draw_index % len(calls)] if calls and draw_index % 3 == 0 else None
        calls.append(new)
        fields = {"args": {"path": f"f{n % 4}"}}
        if parent is not None:
            fields["parent_tool_call_id"] = parent
        if draw_index % 5 == 1:  # an attempt of the same call and args (G14)
            fields.update(args={"path": "f"}, attempt=1 + draw_index % 3, max_attempts=3)
            return tool(new, "flaky", **fields)
        return tool(new, **fields)
    if kind == "progress":
        return {
            "type": "agent.tool.progress",
            "run_id": RUN,
            "tool_call_id": call,
            "output": f"line {n}\n",
            "progress": (n % 10) / 10,
        }
    if kind == "ok":
        return done(call, result=f"ok {n}", duration_ms=n)
    if kind == "error":
        return done(call, error=f"failed {n}")
    if kind == "thinking":
        return status("thinking", message=f"step {n}")
    if kind == "text":
        return {
            "type": "agent.step.completed",
            "run_id": RUN,
            "message_id": f"text-{n}",
            "content": f"Checked {n}.",
        }
    if kind == "hidden":  # a step that only calls tools: does not end the batch
        return {
            "type": "agent.step.completed",
            "run_id": RUN,
            "message_id": f"s-{n}",
            "content": "",
            "tool_calls": [{"id": f"c{n + 1}", "name": "read_file"}],
        }
    raise AssertionError(kind)


KINDS = st.sampled_from(
    ["start", "start", "start", "progress", "ok", "ok", "error", "thinking", "text", "hidden"]
)
RUNS = st.lists(
    st.lists(st.tuples(KINDS, st.integers(0, 30)), min_size=1, max_size=3),
    min_size=1,
    max_size=40,
)


def play(user, ingests) -> None:
    conversation = Conversation.objects.create(owner=user, title="property")
    ingest(conversation, timed([{"type": "user.message", "run_id": RUN, "content": "Go"}]))
    ingest(conversation, timed([status("running")]))
    calls: list[str] = []
    n = 0
    for group in ingests:
        events = []
        for kind, index in group:
            n += 1
            event = _event(kind, n, calls, index)
            events.append({"timestamp": f"2026-11-02T12:{n // 60 % 60:02d}:{n % 60:02d}Z", **event})
        frames_ = step(conversation, events)
        if frames_ is not None:
            live, fresh = frames_
            assert live == fresh, events


@given(ingests=RUNS)
# Found by this test: a tool nested under a retried attempt, in the frame of the retry,
# reset the kept batch's changed entries (the retried entry was not sent).
@example(ingests=[[("start", 1), ("error", 0)], [("start", 11), ("start", 0)]])
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_p1_every_frame_from_the_kept_batch_equals_the_frame_read_afresh(user, ingests):
    """Random runs: calls started, nested (G13), retried (G14), progressing, failing,
    thinking lines, texts that end batches, several events an ingest."""
    batch_cache.BATCHES.clear()
    play(user, ingests)


@given(ingests=RUNS)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_p1_every_frame_of_a_giant_batch_from_the_kept_batch_equals_the_frame_read_afresh(
    user, small_window, ingests
):
    """The same with a batch window of 4: entries leave the window into its counted
    part (docs/rendering.md#long-transcripts) while the batch is kept."""
    batch_cache.BATCHES.clear()
    play(user, ingests)


def test_p1_a_batch_crossing_the_window_is_kept_and_its_head_counted(user, small_window):
    """Entries leaving the window of a kept giant batch are counted in its summary as
    the query counts them (failed, running), frame after frame."""
    conversation = Conversation.objects.create(owner=user, title="giant")
    ingest(conversation, timed([{"type": "user.message", "run_id": RUN, "content": "Go"}]))
    kept_frames = 0
    for n in range(12):
        events = [tool(f"g{n}")]
        if n % 3 == 0:
            events.append(done(f"g{n}", error="no"))
        elif n % 3 == 1:
            events.append(done(f"g{n}", result="ok"))
        before = kept_seq(conversation)
        live, fresh = step(conversation, timed(events))
        assert live == fresh
        kept_frames += before is not None and kept_seq(conversation) > before
    assert kept_frames >= 8  # the batch stayed kept past its window's first fill
    assert 'data-batch-count="12"' in live and "4 failed" in live


# -- what a frame reads ---------------------------------------------------------------------


def batch_with_frames(user, calls: int, earlier: int = 0, running: int = -1) -> Conversation:
    """A batch of `calls` finished calls (but call `running`), each ingest's frame
    rendered (so kept), after a batch of `earlier` calls ended by a text."""
    conversation = Conversation.objects.create(owner=user, title=f"{calls}")
    step(conversation, timed([{"type": "user.message", "run_id": RUN, "content": "Go"}]))
    step(conversation, timed([status("running")]))
    before = [tool(f"e{n}") for n in range(earlier)]
    text = {"type": "agent.step.completed", "run_id": RUN, "message_id": "t", "content": "So:"}
    if earlier:
        step(conversation, timed([*before, *(done(e["tool_call_id"]) for e in before), text]))
    for n in range(calls):
        step(conversation, timed([tool(f"c{n}", args={"path": f"f{n}"})]))
        if n != running:
            step(conversation, timed([done(f"c{n}", result=f"ok {n}")]))
    return conversation


def test_p1_tool_frame_reads_no_more_on_a_100_entry_batch_than_on_a_3_entry_one(user):
    """Both conversations longer than a frame's first read (selectors.FRAME_TAIL), so
    that both look for the run's thinking lines by query."""
    small = batch_with_frames(user, 3, earlier=2 * selectors.FRAME_TAIL)
    large = batch_with_frames(user, 100)
    for events in ([tool("new", args={"path": "x"})], [done("new", result="done")]):
        few, small_html = frame_queries(small, timed(events))
        many, large_html = frame_queries(large, timed(events))
        assert len(many) <= len(few) <= 4  # 2 of them the run strip's (W2: a long run)
        assert 'data-batch-count="4"' in small_html and 'data-batch-count="101"' in large_html
        assert large_html.count('class="tool-entry"') == 1


def test_p1_tool_frame_reads_no_batch_rows_when_contiguous(user):
    """The frame's one read of the latest messages is all: no walk back through the
    batch (selectors._older), though the batch is far longer than that read."""
    conversation = batch_with_frames(user, 40, running=3)
    sql, html = frame_queries(conversation, timed([done("c3", result="late")]))
    # The early entry by pk (its row is not among the latest messages, which the frame
    # before kept: chatui.live.tail_cache), and the run strip's two reads of the run (W2:
    # its calls counted by status, its pending and failed ones), nothing else.
    assert len(sql) == 3 and '"id" IN' in sql[0]
    assert all('"run_id" =' in query for query in sql[1:])
    assert 'data-tool-call-id="c3"' in html and "late" in html
    assert 'data-batch-count="40"' in html and html.count('class="tool-entry"') == 1


# -- what the kept batch cannot know ------------------------------------------------------------


def test_p1_a_frame_after_a_gap_reads_the_batch_again(user):
    """An ingest whose frame this process did not render (another process wrote, or
    the frame was skipped): the next frame's seqs do not follow the kept batch's."""
    conversation = batch_with_frames(user, 5, running=1)
    unseen = ingest(conversation, timed([done("c1", error="changed unseen")]))  # no frame
    assert unseen.accepted and kept_seq(conversation) == unseen.last_seq - 1
    live, fresh = step(conversation, timed([tool("next")]))
    assert live == fresh
    assert "changed unseen" not in live  # not this frame's entry: its summary only
    assert "1 failed" in live
    assert kept_seq(conversation) == conversation.last_seq  # kept again, read afresh


def test_p1_a_projection_rebuilt_elsewhere_is_not_shown_from_the_kept_batch(user):
    """`reproject` writes new rows under the same seqs; in another process its frame is
    not seen here, so the next frame follows on from the kept batch's seq. Its latest
    messages then hold rows the kept batch does not: the batch is read again."""
    conversation = batch_with_frames(user, 5)
    assert kept_seq(conversation) == conversation.last_seq
    reproject(conversation)  # its full frame is rendered elsewhere: not here
    conversation.refresh_from_db()
    live, fresh = step(conversation, timed([tool("next")]))
    assert live == fresh
    rows = {m.dom_id for m in conversation.messages.filter(role="tool")}
    assert set(re.findall(r'id="(m-\d+)"', live)) <= rows


def test_p1_a_rebuild_seen_here_drops_the_kept_batch(user):
    conversation = batch_with_frames(user, 3)
    changes = reproject(conversation)
    conversation.refresh_from_db()
    frames.change_frame(conversation, 1, conversation.last_seq, changes)
    assert kept_seq(conversation) is None


def test_p1_a_frame_older_than_the_kept_batch_does_not_replace_it(user):
    """Frames of one conversation rendered out of order by two threads: the kept
    batch only moves forward."""
    conversation = batch_with_frames(user, 3)
    result = ingest(conversation, timed([tool("late")]))
    conversation.refresh_from_db()
    newest = kept_seq(conversation)
    ahead = ingest(conversation, timed([done("late", result="ok")]))
    conversation.refresh_from_db()
    frames.change_frame(conversation, ahead.last_seq, ahead.last_seq, ahead.changes)
    assert kept_seq(conversation) == ahead.last_seq > newest
    first = result.last_seq - result.accepted + 1
    frames.change_frame(conversation, first, result.last_seq, result.changes)
    assert kept_seq(conversation) == ahead.last_seq


def test_p1_a_replayed_frame_neither_uses_nor_keeps_the_batch(user):
    """A reconnecting page's ChangeSet is rebuilt from `updated_seq` and names no
    removed message: it is not trusted to bring a kept batch up to date."""
    conversation = batch_with_frames(user, 3)
    key = batch_cache.key_of(conversation.pk)
    kept = batch_cache.BATCHES.get(key)
    replayed = frames.replay_frame(conversation.pk, kept.seq - 1)
    assert replayed is not None and batch_cache.BATCHES.get(key) is kept


def test_g5_a_running_entry_kept_in_the_batch_shows_the_time_of_each_frame(user, monkeypatch):
    """A pending entry's clock moves (G5, docs/rendering.md#watching-a-run the summary's live line):
    it is presented anew at every frame, never lent from the frame before."""
    from datetime import UTC, datetime, timedelta

    from django.utils import timezone

    clock = [datetime(2026, 11, 2, 12, 0, tzinfo=UTC)]
    monkeypatch.setattr(timezone, "now", lambda: clock[0])
    conversation = Conversation.objects.create(owner=user, title="clock")
    step(conversation, timed([{"type": "user.message", "run_id": RUN, "content": "Go"}]))
    step(conversation, timed([tool("slow")]))
    for n in range(3):
        clock[0] += timedelta(minutes=7)
        result = ingest(conversation, timed([tool(f"c{n}"), done(f"c{n}", result="ok")]))
        conversation.refresh_from_db()
        first = result.last_seq - result.accepted + 1
        before = kept_seq(conversation)
        live = frames.change_frame(conversation, first, result.last_seq, result.changes).html
        assert before == first - 1  # from the kept batch
        assert live == fresh_frame(conversation, first, result.last_seq, result.changes)
        summary = live.split("</summary>")[0]
        assert "data-elapsed" in summary and 'data-tool-call-id="slow"' not in live


def test_p1_a_frame_changing_no_message_keeps_the_batch_following(user):
    """A status event between tool steps changes the conversation, no message: the
    kept batch follows its seq, so the next tool step does not read the batch."""
    conversation = batch_with_frames(user, 20)
    result = ingest(conversation, timed([status("running", message="still")]))
    conversation.refresh_from_db()
    first = result.last_seq - result.accepted + 1
    assert result.accepted and not result.changes.changed
    frames.change_frame(conversation, first, result.last_seq, result.changes)
    assert kept_seq(conversation) == result.last_seq
    sql, html = frame_queries(conversation, timed([tool("next")]))
    assert len(sql) <= 4 and 'data-batch-count="21"' in html  # 2 of them W2's strip
    # No walk back through the batch: the only read before a position is the run's
    # thinking lines' (the new call replaces the latest, docs/rendering.md#one-status-line).
    assert all(
        "thinking" in query for query in sql if '"position" <' in query and "run_id" not in query
    )


@pytest.mark.parametrize("calls", [3, 100])
def test_p1_a_tool_frame_presents_only_the_entries_that_changed(user, calls, monkeypatch):
    """No batch presented (present_transcript) and one entry presented, for a call that
    started and for one that completed, however long the batch: the summary is
    counted from the counts before (presenters.flat_batch_after)."""
    conversation = batch_with_frames(user, calls)
    presented: list[int] = []
    whole: list[object] = []

    def entry(message, **kwargs):
        presented.append(message.pk)
        return real_entry(message, **kwargs)

    def transcript(messages, **kwargs):
        whole.append(messages)
        return real_transcript(messages, **kwargs)

    real_entry, real_transcript = presenters._present_entry, presenters.present_transcript
    monkeypatch.setattr(presenters, "_present_entry", entry)
    monkeypatch.setattr(presenters, "present_transcript", transcript)
    monkeypatch.setattr(batch_cache, "present_transcript", transcript)
    # W1: the batch stays open once the call ended, its run still in it (held)
    steps = [([tool("new", args={"path": "x"})], "true"), ([done("new", result="done")], "true")]
    for events, running in steps:
        presented.clear()
        _sql, html = frame_queries(conversation, timed(events))
        assert len(presented) == 1 and not whole
        assert f'data-batch-count="{calls + 1}"' in html
        # docs/rendering.md#watching-a-run: open while one runs, and (W1) between calls
        assert f'data-batch-open="{running}"' in html
    assert 'data-batch-held="true"' in html


def test_p1_a_batch_holding_more_text_than_kept_text_is_read_not_kept(conversation, monkeypatch):
    """Huge results cost no memory in the cache: such a batch is read for each frame,
    as before, and its frames are the same."""
    monkeypatch.setattr(batch_cache.BATCHES, "max_text", 1000)
    ingest(conversation, [{"type": "user.message", "run_id": RUN, "content": "go"}])
    for call in ("a", "b"):
        live, fresh = step(conversation, [tool(call)])
        assert live == fresh
        live, fresh = step(conversation, [done(call, result="x" * 600)])
        assert live == fresh
    assert kept_seq(conversation) is None  # 1,200 characters of results: not kept
    live, fresh = step(conversation, [tool("c")])
    assert live == fresh and kept_seq(conversation) is None
