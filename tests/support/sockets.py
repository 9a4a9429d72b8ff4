"""Sockets against the real ASGI application, in-process (channels' WebsocketCommunicator).

For the consumer tests: a logged-in session's cookie, a connected communicator, and
what the server closed it with.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from asgiref.sync import sync_to_async
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.test import Client

from chatui.live import consumers
from config.asgi import application

ORIGIN = (b"origin", b"http://127.0.0.1")
HOST = (b"host", b"127.0.0.1")  # the origin check compares Origin with the request's own
MARKER = re.compile(r"^<!--seq (\d+) (\d+)-->")


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    """Groups and queued messages must not leak from one test into the next: each test
    gets a new layer (autouse in the modules that import it). Not `flush()`:
    channels-redis's closes the connections of every event loop from this one, the
    agents' long-lived loop included, and fails."""
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


def logged_in_browser(user) -> Client:
    """A browser with its own session for `user` (each call: a new session)."""
    browser = Client()
    browser.force_login(user)
    return browser


def cookie_of(browser: Client) -> bytes:
    return f"sessionid={browser.cookies['sessionid'].value}".encode()


def session_cookie(user) -> bytes:
    return cookie_of(logged_in_browser(user))


async def connect(conversation, user=None, *, cookie=None, after=None, origin=ORIGIN):
    """Open /ws/conversations/<id>/ as `user` (a fresh session) or with `cookie`."""
    path = f"/ws/conversations/{conversation.pk}/"
    if after is not None:
        path += f"?after={after}"
    headers = [HOST, origin] if origin else [HOST]
    if user is not None:
        cookie = await sync_to_async(session_cookie)(user)
    if cookie is not None:
        headers.append((b"cookie", cookie))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect()
    if connected:
        await _replay_sent(str(conversation.pk))
    return communicator, connected, code


async def _replay_sent(conversation_id: str) -> None:
    """Wait until the accepted socket has sent its replay (or found none to send). The
    replay is read on the handshake threads (chatui.live.handshakes), so an ingest the
    test makes right after `connect` may commit before it is read: the replay then holds
    it and its live frame is dropped as covered. Right for a page, but a test that
    expects that event as a frame of its own waits for the replay first."""
    for _ in range(500):
        if not any(
            getattr(consumer, "conversation_id", None) == conversation_id
            and consumer.watcher is None
            and not consumer.ended
            for consumer in list(consumers.running)
        ):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the socket never finished its connect")


async def closed_with(communicator) -> int:
    output = await communicator.receive_output(timeout=2)
    assert output["type"] == "websocket.close"
    return output["code"]


def seqs_of(frame: str) -> tuple[int, int]:
    first, last = MARKER.match(frame).groups()
    return int(first), int(last)
