"""S21: after a fault the pages of a conversation reconnect together, and one replay
serves them (chatui.live.replays, docs/SCALING.md#cluster-under-fire)."""

from __future__ import annotations

import asyncio
import time

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from chatui.ingest.service import ingest
from chatui.live import frames, replays
from chatui.models import Conversation
from tests.support.sockets import MARKER

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def conversation(db):
    owner = get_user_model().objects.create_user("owner", password="owner-pass-1")
    conversation = Conversation.objects.create(owner=owner, title="replays")
    for batch in range(30):
        events = [{"type": "user.message", "content": f"m {batch}.{n}"} for n in range(10)]
        ingest(conversation, events)
    return Conversation.objects.get(pk=conversation.pk)


@pytest.fixture
def renders(monkeypatch):
    """Every replay rendered, by the seq its page had shown (the real render, counted)."""
    seen: list[int] = []
    render = frames.render_replay

    def counted(plan):
        seen.append(plan.after)
        return render(plan)

    monkeypatch.setattr(frames, "render_replay", counted)
    return seen


def body(frame: frames.Frame) -> str:
    return frame.html[MARKER.match(frame.html).end() :]


async def test_s21_pages_far_behind_at_different_seqs_share_one_whole_transcript(
    conversation, renders
):
    """Eight pages, each far behind at its own seq, joined before any read: one render of
    the transcript serves all, each under its own seq range — the same page each would
    have read alone."""
    joined = asyncio.get_running_loop().time() - 1
    afters = [10, 20, 30, 40, 50, 60, 70, 80]
    got = await asyncio.gather(
        *(replays.shared_replay(str(conversation.pk), after, joined) for after in afters)
    )
    assert len(renders) == 1
    alone = await sync_to_async(frames.replay_frame)(conversation.pk, 10)
    for after, frame in zip(afters, got, strict=True):
        assert (frame.first_seq, frame.last_seq) == (after + 1, conversation.last_seq)
        assert MARKER.match(frame.html).groups() == (str(after + 1), str(conversation.last_seq))
        assert frame.whole and body(frame) == body(alone)


async def test_s21_a_whole_replay_read_before_a_page_joined_does_not_serve_it(
    conversation, renders
):
    """A page that joined after another's read began may lack what was committed in
    between (its frames went out before the join): it reads for itself."""
    loop = asyncio.get_running_loop()
    first = await replays.shared_replay(str(conversation.pk), 10, loop.time() - 1)
    await sync_to_async(ingest)(conversation, {"type": "user.message", "content": "later"})
    second = await replays.shared_replay(str(conversation.pk), 20, loop.time())
    assert len(renders) == 2
    assert second.last_seq == first.last_seq + 1 and "later" in second.html
    assert "later" not in first.html


async def test_s21_pages_a_few_events_behind_never_share_a_replay_from_another_seq(
    conversation, renders
):
    """A replay of the few messages changed since one seq appends the ones created
    after it: given to a page at another seq it would show some twice or miss some."""
    last = conversation.last_seq
    joined = asyncio.get_running_loop().time() - 1
    near, nearer = await asyncio.gather(
        replays.shared_replay(str(conversation.pk), last - 3, joined),
        replays.shared_replay(str(conversation.pk), last - 2, joined),
    )
    assert sorted(renders) == [last - 3, last - 2]
    assert not near.whole and not nearer.whole
    assert (near.first_seq, nearer.first_seq) == (last - 2, last - 1)
    assert "m 29.7" in near.html and "m 29.7" not in nearer.html


async def test_s21_pages_at_the_same_seq_share_one_read(conversation, renders):
    joined = asyncio.get_running_loop().time() - 1
    last = conversation.last_seq
    got = await asyncio.gather(
        *(replays.shared_replay(str(conversation.pk), last - 2, joined) for _ in range(5))
    )
    assert renders == [last - 2]
    assert len({frame.html for frame in got}) == 1


async def test_s21_a_page_already_current_gets_no_replay(conversation, renders):
    joined = asyncio.get_running_loop().time() - 1
    got = await replays.shared_replay(str(conversation.pk), conversation.last_seq, joined)
    assert got is None and renders == []


async def test_s21_the_loops_clock_is_the_one_a_replays_read_is_timed_by():
    """chatui.live.replays times a read with time.monotonic() on a handshake thread and
    compares it with a socket's join, taken from the loop's clock: asyncio's is
    time.monotonic(). Fails loudly if a loop with another clock is ever used."""
    loop = asyncio.get_running_loop()
    before = time.monotonic()
    now = loop.time()
    assert before <= now <= time.monotonic()
