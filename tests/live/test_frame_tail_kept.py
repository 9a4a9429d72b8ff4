"""docs/PERFORMANCE.md#p2 (issue 12): a live frame reads no rows it already has.

Each process keeps a conversation's latest messages between live frames
(chatui.live.tail_cache) and brings them up to date from the next frame's ChangeSet, reading
only the rows it names. The rule these tests hold it to: every live frame is exactly
the frame that reads everything afresh (no kept tail, no kept tool batch), whatever
the events — text, streamed deltas, statuses, tool calls nested or not, runs ending
(their statuses removed), batched ingests, frames this process did not render, and
rebuilds of the projection it did not see.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatui.ingest.service import ingest, reproject
from chatui.live import batch_cache, frames, tail_cache
from chatui.models import Conversation, Message
from chatui.read import selectors
from tests.support.frame_queries import frame_queries
from tests.support.frame_script import Script
from tests.support.html import untimed

pytestmark = pytest.mark.django_db


def kept(conversation: Conversation) -> tail_cache.KeptTail | None:
    return tail_cache.TAILS.get(batch_cache.key_of(conversation.pk))


def afresh(conversation: Conversation, first: int, last: int, changes) -> str:
    """The frame read afresh: nothing kept used, and what was kept left as it was."""
    key = batch_cache.key_of(conversation.pk)
    tail, batch = tail_cache.TAILS.get(key), batch_cache.BATCHES.get(key)
    tail_cache.TAILS.discard(key)
    batch_cache.BATCHES.discard(key)
    html = frames.change_frame(conversation, first, last, changes).html
    tail_cache.TAILS.discard(key)
    batch_cache.BATCHES.discard(key)
    if tail is not None:
        tail_cache.TAILS.put(key, tail)
    if batch is not None:
        batch_cache.BATCHES.put(key, batch)
    return html


def frame_of(conversation: Conversation, events: list[dict], *, render: bool = True):
    """Ingest `events`; (the live frame, the frame read afresh) — None when nothing was
    accepted or the frame is not rendered here (`render=False`: as if nobody watched)."""
    result = ingest(conversation, events)
    if not result.accepted or not render:
        return None
    conversation.refresh_from_db()
    first = result.last_seq - result.accepted + 1
    fresh = afresh(conversation, first, result.last_seq, result.changes)
    live = frames.change_frame(conversation, first, result.last_seq, result.changes).html
    return untimed(live), untimed(fresh)


# -- the property -------------------------------------------------------------------------


#: Deltas and steps weigh more: streamed text that frames do not read, then a frame
#: showing the streamed message again, is the kept tail's hardest case.
KINDS = st.sampled_from(
    ["start", "start", "ok", "ok", "error", "progress", "thinking", "thinking"]
    + ["delta"] * 5
    + ["step", "hidden", "hidden", "user", "end", "burst"]
)
#: What happens to an ingest's frame: rendered here, not rendered (a gap), or the
#: projection rebuilt by "another process" before it (its own frame not seen here).
FATES = st.sampled_from(["render"] * 12 + ["unseen", "rebuilt"])
INGESTS = st.lists(
    st.tuples(st.lists(st.tuples(KINDS, st.integers(0, 30)), min_size=1, max_size=3), FATES),
    min_size=10,  # long enough to go past a tail and stream into a message
    max_size=40,
)


@given(ingests=INGESTS)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_p2_every_live_frame_from_the_kept_tail_equals_the_frame_read_afresh(user, ingests):
    conversation = Conversation.objects.create(owner=user, title="property")
    script = Script()
    ingest(conversation, [{"type": "user.message", "run_id": "r0", "content": "Go"}])
    ingest(conversation, [{"type": "agent.status", "run_id": "r0", "status": "running"}])
    for group, fate in ingests:
        if fate == "rebuilt":
            reproject(conversation)  # its full frame is rendered elsewhere: not here
        events = [event for kind, index in group for event in script.events(kind, index)]
        found = frame_of(conversation, events, render=fate != "unseen")
        if found is not None:
            live, fresh = found
            assert live == fresh, events


# -- what a frame reads -------------------------------------------------------------------


def running_conversation(user, tools: int = 10) -> Conversation:
    """A run with tools past a frame's tail (selectors.FRAME_TAIL), every frame rendered."""
    conversation = Conversation.objects.create(owner=user, title="kept")
    frame_queries(conversation, [{"type": "user.message", "run_id": "r", "content": "Go"}])
    frame_queries(conversation, [{"type": "agent.status", "run_id": "r", "status": "running"}])
    for n in range(tools):
        frame_queries(conversation, [tool_started(f"c{n}")])
        frame_queries(conversation, [tool_done(f"c{n}")])
    return conversation


def tool_started(call: str) -> dict:
    return {"type": "agent.tool.started", "run_id": "r", "tool_call_id": call, "tool_name": "read"}


def tool_done(call: str, result: str = "ok") -> dict:
    return {"type": "agent.tool.completed", "run_id": "r", "tool_call_id": call, "result": result}


def reads_latest_messages(sql: list[str]) -> bool:
    """Did a query read the conversation's newest messages (latest_messages' shape)?"""
    return any('ORDER BY "chatui_message"."position" DESC LIMIT' in query for query in sql)


def test_p2_a_tool_event_frame_after_a_kept_tail_reads_only_its_changed_rows(user):
    conversation = running_conversation(user)
    for events in ([tool_started("new")], [tool_done("new", "done")]):
        sql, html = frame_queries(conversation, events)
        assert not reads_latest_messages(sql)
        assert len(sql) == 1 and '"chatui_message"."id" IN' in sql[0]
        assert 'data-tool-call-id="new"' in html
    assert kept(conversation).seq == conversation.last_seq


def test_p2_a_status_event_frame_after_a_kept_tail_reads_no_tail(user):
    conversation = running_conversation(user)
    thinking = {"type": "agent.status", "run_id": "r", "status": "thinking", "message": "Hm"}
    sql, html = frame_queries(conversation, [thinking])
    assert not reads_latest_messages(sql) and "Hm" in html


def test_p2_without_a_kept_tail_the_frame_reads_the_latest_messages(user):
    """The counter-test: the same frame with nothing kept reads the tail."""
    conversation = running_conversation(user)
    tail_cache.discard(conversation.pk)
    sql, _html = frame_queries(conversation, [tool_started("new")])
    assert reads_latest_messages(sql)
    assert kept(conversation).seq == conversation.last_seq  # kept again from here


def test_p2_a_rebuild_in_another_process_makes_the_next_frame_read_afresh(user):
    """`reproject` writes new rows under the same seqs; its frame is rendered elsewhere,
    so the kept tail still follows on by seq: `Conversation.rebuilds` tells."""
    conversation = running_conversation(user, tools=3)
    stale = kept(conversation)
    reproject(conversation)  # this process's kept tail and batch are left in place
    assert kept(conversation) is stale
    conversation.refresh_from_db()
    sql, html = frame_queries(conversation, [tool_started("next")])
    assert reads_latest_messages(sql)
    live_pks = set(Message.objects.filter(conversation=conversation).values_list("pk", flat=True))
    assert {m.pk for m in kept(conversation).messages} <= live_pks
    first = conversation.last_seq
    assert html.startswith(frames.marker(first, first))
    shown = {int(pk) for pk in re.findall(r"#?m-(\d+)\b", html)}
    assert shown and not shown & {m.pk for m in stale.messages}  # no old row's id


def test_p2_a_marker_bumped_elsewhere_is_not_followed_by_a_status_only_frame(user):
    """A frame that reads nothing (the conversation's status only) does not carry a
    kept tail of another rebuild forward either."""
    conversation = running_conversation(user, tools=2)
    before = kept(conversation)
    Conversation.objects.filter(pk=conversation.pk).update(rebuilds=before.rebuilds + 1)
    frame_queries(conversation, [{"type": "agent.status", "run_id": "r", "status": "running"}])
    assert kept(conversation) is before  # not stamped with the new seq


def short_conversation(user) -> Conversation:
    """Fewer messages than a tail: frames take the run's steps from it (complete)."""
    conversation = Conversation.objects.create(owner=user, title="short")
    frame_queries(conversation, [{"type": "user.message", "run_id": "r", "content": "Go"}])
    frame_queries(conversation, [{"type": "agent.status", "run_id": "r", "status": "running"}])
    return conversation


DELTA = {"type": "agent.message.delta", "run_id": "r", "message_id": "a"}
STEP = {"type": "agent.step.completed", "run_id": "r"}


def test_p2_delta_only_frames_mark_the_kept_row_stale_and_read_nothing(user):
    conversation = short_conversation(user)
    frame_queries(conversation, [{**DELTA, "delta": "Hello"}])
    pk = Message.objects.get(conversation=conversation, message_id="a").pk
    sql, html = frame_queries(conversation, [{**DELTA, "delta": " there"}])
    assert sql == [] and "data-delta-seq" in html  # streamed text only: nothing read
    assert pk in kept(conversation).stale and kept(conversation).seq == conversation.last_seq


def test_p2_a_message_streamed_into_by_delta_frames_is_shown_with_all_its_text(user):
    """Deltas whose frames read nothing, then another step of the run: its frame shows
    the streamed message again (S1: the run's steps), from the kept tail, whose row of
    it was marked stale and is read again — the text is the whole text."""
    conversation = short_conversation(user)
    frame_queries(conversation, [{**DELTA, "delta": "Hello"}])
    for word in (" there", " friend"):
        frame_queries(conversation, [{**DELTA, "delta": word}])
    sql, html = frame_queries(conversation, [{**STEP, "message_id": "b", "content": "Next."}])
    assert not reads_latest_messages(sql)
    assert "Hello there friend" in html and "Next." in html
    assert not kept(conversation).stale


def test_p2_a_delta_only_frame_then_the_steps_end_show_the_full_final_text(user):
    conversation = running_conversation(user, tools=2)
    frame_queries(conversation, [{**DELTA, "delta": "Hello"}])
    frame_queries(conversation, [{**DELTA, "delta": " there"}])
    final = "Hello there, **friend**."
    sql, html = frame_queries(conversation, [{**STEP, "message_id": "a", "content": final}])
    assert not reads_latest_messages(sql)
    assert "Hello there, <strong>friend</strong>." in html
    row = Message.objects.get(conversation=conversation, message_id="a")
    assert next(m for m in kept(conversation).messages if m.pk == row.pk).content == final


def test_p2_the_kept_tail_is_what_a_read_gives(user):
    """After a run of frames (tools, a burst bigger than a tail, a run's end), the kept
    tail's rows and completeness are those `latest_messages` reads now."""
    conversation = running_conversation(user, tools=4)
    frame_queries(conversation, [tool_started(f"b{n}") for n in range(12)])
    frame_queries(conversation, [tool_done("b3")])
    held = kept(conversation)
    read = selectors.latest_messages(conversation.pk, held.limit)
    assert [vars_of(m) for m in held.messages] == [vars_of(m) for m in read.messages]
    assert held.complete == read.complete and held.seq == conversation.last_seq


def vars_of(message: Message) -> dict:
    return {field.attname: getattr(message, field.attname) for field in Message._meta.fields}


def test_p2_a_replayed_frame_neither_uses_nor_keeps_the_tail(user):
    conversation = running_conversation(user, tools=2)
    before = kept(conversation)
    replayed = frames.replay_frame(conversation.pk, before.seq - 1)
    assert replayed is not None and kept(conversation) is before


def test_p2_a_tail_holding_more_text_than_kept_text_is_not_kept(user, monkeypatch):
    monkeypatch.setattr(tail_cache.TAILS, "max_text", 1000)
    conversation = running_conversation(user, tools=1)
    frame_queries(conversation, [tool_started("big")])
    assert kept(conversation) is not None
    frame_queries(conversation, [tool_done("big", "x" * 1200)])
    assert kept(conversation) is None


def test_p2_a_frame_older_than_the_kept_tail_does_not_replace_it(user):
    """Frames of one conversation rendered out of order by two writer threads: the kept
    tail only moves forward, and the late frame is still right."""
    conversation = running_conversation(user, tools=2)
    late = ingest(conversation, [tool_started("late")])
    ahead = ingest(conversation, [tool_done("late", "ok")])
    conversation.refresh_from_db()
    frames.change_frame(conversation, ahead.last_seq, ahead.last_seq, ahead.changes)
    newest = kept(conversation)
    assert newest.seq == ahead.last_seq
    html = frames.change_frame(conversation, late.last_seq, late.last_seq, late.changes).html
    assert kept(conversation) is newest
    assert 'data-tool-call-id="late"' in html
