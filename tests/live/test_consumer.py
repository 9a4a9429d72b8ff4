"""SEC4 and the resume protocol (docs/rendering.md#live-updates), through the real ASGI
application."""

from __future__ import annotations

import asyncio
import itertools
import threading
import uuid

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from chatui.ingest.service import ingest
from chatui.live import consumers
from chatui.live.broadcast import group_name
from chatui.live.fanout import live_layer
from chatui.models import Conversation
from config.asgi import application
from tests.support.sockets import (  # noqa: F401 — fresh_channel_layer is an autouse fixture
    HOST,
    MARKER,
    ORIGIN,
    closed_with,
    connect,
    fresh_channel_layer,
    session_cookie,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def people(db):
    users = get_user_model().objects
    owner = users.create_user("owner", password="owner-pass-1")
    stranger = users.create_user("stranger", password="stranger-pass-1")
    conversation = Conversation.objects.create(owner=owner, title="t")
    return owner, stranger, conversation


async def test_sec4_other_users_session_is_refused_with_4403(people):
    _, stranger, conversation = people
    communicator, connected, _ = await connect(conversation, stranger)
    assert connected
    assert await closed_with(communicator) == 4403


async def test_sec4_anonymous_is_refused_with_4403(people):
    _, _, conversation = people
    communicator, _connected, _ = await connect(conversation)
    assert await closed_with(communicator) == 4403


async def test_sec4_unknown_conversation_is_4404(people):
    owner, _, _conversation = people
    missing = Conversation(pk=uuid.uuid4(), owner=owner)
    communicator, _connected, _ = await connect(missing, owner)
    assert await closed_with(communicator) == 4404


async def test_sec4_view_permission_subscribes_a_non_owner(people):
    _, stranger, conversation = people
    permission = await sync_to_async(Permission.objects.get)(codename="view_conversation")
    await sync_to_async(stranger.user_permissions.add)(permission)
    communicator, connected, _ = await connect(conversation, stranger)
    assert connected
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()


@pytest.mark.parametrize("origin", [(b"origin", b"http://evil.example"), None])
async def test_sec4_foreign_or_missing_origin_is_refused(people, origin):
    owner, _, conversation = people
    _communicator, connected, _ = await connect(conversation, owner, origin=origin)
    assert not connected


async def test_owner_receives_live_frames(people):
    owner, _, conversation = people
    communicator, connected, _ = await connect(conversation, owner, after=0)
    assert connected
    await sync_to_async(ingest)(conversation, {"type": "user.message", "content": "hi <b>"})
    frame = await communicator.receive_from(timeout=3)
    assert MARKER.match(frame).groups() == ("1", "1")
    assert "hi &lt;b&gt;" in frame
    await communicator.disconnect()


async def test_replay_then_live_in_order_with_a_live_event_sent_mid_replay(people):
    owner, _, conversation = people
    for n in range(3):
        await sync_to_async(ingest)(conversation, {"type": "user.message", "content": f"m{n}"})
    communicator = WebsocketCommunicator(
        application,
        f"/ws/conversations/{conversation.pk}/?after=1",
        headers=[HOST, ORIGIN, (b"cookie", await sync_to_async(session_cookie)(owner))],
    )
    # The page has seq 1. Connect and, at the same moment, a live event arrives:
    # the consumer joined the group before reading the log, so whichever way the
    # race goes, seqs 2..4 arrive once each, in order.
    connecting = asyncio.ensure_future(communicator.connect())
    await asyncio.sleep(0)
    await sync_to_async(ingest)(conversation, {"type": "user.message", "content": "live"})
    connected, _ = await connecting
    assert connected
    frames = [await communicator.receive_from(timeout=3)]
    while not await communicator.receive_nothing(timeout=0.3):
        frames.append(await communicator.receive_from())
    ranges = [tuple(map(int, MARKER.match(f).groups())) for f in frames]
    assert ranges[0][0] == 2 and ranges[-1][1] == 4
    for (_, last), (first, _) in itertools.pairwise(ranges):
        assert first == last + 1  # contiguous: no gap, no overlap
    text = "".join(frames)
    for content in ("m1", "m2", "live"):
        assert text.count(f">{content}<") == 1
    assert ">m0<" not in text
    await communicator.disconnect()


async def test_frame_already_covered_by_replay_is_not_sent_twice(people):
    owner, _, conversation = people
    await sync_to_async(ingest)(conversation, {"type": "user.message", "content": "one"})
    communicator, _connected, _ = await connect(conversation, owner, after=0)
    replay = await communicator.receive_from(timeout=3)
    assert MARKER.match(replay).groups() == ("1", "1")
    # A stale group message (seq 1 again) must be dropped by the consumer.
    await live_layer().group_send(
        group_name(conversation.pk),
        {"type": "transcript.frame", "first_seq": 1, "last_seq": 1, "html": "<!--seq 1 1-->"},
    )
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


# -- the per-user socket cap ----------------------------------------------------------


async def test_sockets_over_the_per_user_cap_are_closed_with_4429(people, settings):
    settings.CHATUI_MAX_SOCKETS_PER_USER = 2
    owner, stranger, conversation = people
    first, first_ok, _ = await connect(conversation, owner)
    second, second_ok, _ = await connect(conversation, owner)
    assert first_ok and second_ok
    third, _, _ = await connect(conversation, owner)
    assert await closed_with(third) == 4429
    # Another user's sockets are counted apart.
    own = await sync_to_async(Conversation.objects.create)(owner=stranger, title="s")
    strangers, strangers_ok, _ = await connect(own, stranger)
    assert strangers_ok and await strangers.receive_nothing(timeout=0.2)
    await third.disconnect()
    await strangers.disconnect()

    # A closed socket gives its place back.
    await first.disconnect()
    fourth, fourth_ok, _ = await connect(conversation, owner)
    assert fourth_ok and await fourth.receive_nothing(timeout=0.2)
    await sync_to_async(ingest)(conversation, {"type": "user.message", "content": "x"})
    for socket in (second, fourth):
        assert MARKER.match(await socket.receive_from(timeout=3))
        await socket.disconnect()


async def test_refused_sockets_take_no_place_under_the_cap(people, settings):
    settings.CHATUI_MAX_SOCKETS_PER_USER = 1
    _owner, stranger, conversation = people
    for _ in range(3):
        refused, _, _ = await connect(conversation, stranger)
        assert await closed_with(refused) == 4403
        await refused.disconnect()
    own = await sync_to_async(Conversation.objects.create)(owner=stranger, title="s")
    mine, connected, _ = await connect(own, stranger)
    assert connected and await mine.receive_nothing(timeout=0.2)
    await mine.disconnect()


@pytest.mark.parametrize("frame", [{"text_data": "hi"}, {"bytes_data": b"\0" * 10_000}])
async def test_client_input_closes_the_socket_with_4400(people, frame):
    """The socket only pushes (docs/rendering.md#live-updates): input is refused, not queued
    (tests/web/test_flood.py)."""
    owner, _, conversation = people
    communicator, _, _ = await connect(conversation, owner, after=0)
    await communicator.send_to(**frame)
    assert await closed_with(communicator) == 4400
    await sync_to_async(ingest)(conversation, {"type": "user.message", "content": "later"})
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()


async def stream_started(conversation) -> None:
    """A run whose answer the page already shows as a streaming bubble."""
    await sync_to_async(ingest)(
        conversation,
        [
            {"type": "user.message", "content": "go", "run_id": "r"},
            {"type": "agent.message.delta", "message_id": "a", "delta": "Hel", "run_id": "r"},
        ],
    )


def delta(text: str) -> dict:
    return {"type": "agent.message.delta", "message_id": "a", "delta": text, "run_id": "r"}


@pytest.fixture
def long_tick(monkeypatch):
    """A tick long enough that a slow test machine still lands its ingests inside it."""
    monkeypatch.setattr(consumers, "STREAM_TICK_SECONDS", 1.0)


async def test_p5_streamed_text_goes_at_once_then_what_follows_in_the_tick_is_joined(
    people, long_tick
):
    owner, _, conversation = people
    await stream_started(conversation)
    communicator, connected, _ = await connect(conversation, owner, after=2)
    assert connected
    for text in ("lo", " wor", "ld"):
        await sync_to_async(ingest)(conversation, delta(text))  # a frame each
    first = await communicator.receive_from(timeout=3)
    joined = await communicator.receive_from(timeout=3)
    assert MARKER.match(first).groups() == ("3", "3") and ">lo<" in first
    assert MARKER.match(joined).groups() == ("4", "5")
    assert joined.count("data-delta-seq=") == 2
    assert joined.index("> wor<") < joined.index(">ld<")
    assert await communicator.receive_nothing(timeout=0.1)
    await communicator.disconnect()


async def test_p5_any_other_frame_sends_the_held_text_first_and_keeps_the_order(people, long_tick):
    owner, _, conversation = people
    await stream_started(conversation)
    communicator, connected, _ = await connect(conversation, owner, after=2)
    assert connected
    await sync_to_async(ingest)(conversation, delta("lo"))  # sent at once
    await sync_to_async(ingest)(conversation, delta("!"))  # held: same tick
    await sync_to_async(ingest)(
        conversation,
        {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "ls", "run_id": "r"},
    )
    sent = [await communicator.receive_from(timeout=3) for _ in range(3)]
    assert [MARKER.match(frame).groups() for frame in sent] == [("3", "3"), ("4", "4"), ("5", "5")]
    assert ">!<" in sent[1] and 'data-tool-call-id="c1"' in sent[2]
    await communicator.disconnect()


async def test_s21_a_handshake_does_not_queue_behind_channels_database_thread(people):
    """After a fault (docs/SCALING.md#cluster-under-fire) every page reconnects at once,
    and Channels runs all of a process's `database_sync_to_async` work on one thread. A
    handshake's reads (the session's user, the authorisation, the replay) run on threads
    of their own (chatui.live.handshakes): with that one thread busy, a page still
    connects and gets what it missed."""
    owner, _, conversation = people
    await sync_to_async(ingest)(conversation, {"type": "user.message", "content": "hello"})
    cookie = await sync_to_async(session_cookie)(owner)
    release = threading.Event()
    busy = asyncio.ensure_future(sync_to_async(release.wait, thread_sensitive=True)())
    try:
        communicator, connected, _ = await asyncio.wait_for(
            connect(conversation, cookie=cookie, after=0), timeout=10
        )
        assert connected
        replay = await communicator.receive_from(timeout=5)
        assert MARKER.match(replay).groups()[1] == "1" and "hello" in replay
        assert not busy.done()  # all of it while the thread was still taken
    finally:
        release.set()
        await busy
    await communicator.disconnect()
