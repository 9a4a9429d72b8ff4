"""SEC4 and the resume protocol (SPEC §5), through the real ASGI application."""

from __future__ import annotations

import asyncio
import itertools
import re
import uuid

import pytest
from asgiref.sync import sync_to_async
from channels.layers import channel_layers, get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from chatui.asgi import application
from chatui.consumers import group_name
from chatui.ingest import ingest
from chatui.models import Conversation

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

ORIGIN = (b"origin", b"http://127.0.0.1")
HOST = (b"host", b"127.0.0.1")  # the origin check compares Origin with the request's own
MARKER = re.compile(r"^<!--seq (\d+) (\d+)-->")


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    """Groups and queued messages must not leak from one test into the next: each test
    gets a new layer. (Not `flush()`: channels-redis's closes the connections of every
    event loop from this one, the agents' long-lived loop included, and fails.)"""
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


def session_cookie(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def connect(conversation, user=None, *, after=None, origin=ORIGIN):
    path = f"/ws/conversations/{conversation.pk}/"
    if after is not None:
        path += f"?after={after}"
    headers = [HOST, origin] if origin else [HOST]
    if user is not None:
        headers.append((b"cookie", await sync_to_async(session_cookie)(user)))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect()
    return communicator, connected, code


@pytest.fixture
def people(db):
    users = get_user_model().objects
    owner = users.create_user("owner", password="owner-pass-1")
    stranger = users.create_user("stranger", password="stranger-pass-1")
    conversation = Conversation.objects.create(owner=owner, title="t")
    return owner, stranger, conversation


async def closed_with(communicator) -> int:
    output = await communicator.receive_output(timeout=2)
    assert output["type"] == "websocket.close"
    return output["code"]


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
    await get_channel_layer().group_send(
        group_name(conversation.pk),
        {"type": "transcript.frame", "first_seq": 1, "last_seq": 1, "html": "<!--seq 1 1-->"},
    )
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()
