"""A WebSocket flood from one logged-in user, against a real daphne (SEC4,
docs/rendering.md#live-updates).

The flooder sends many small text frames, large binary and text frames, frames over
daphne's 1 MiB limit, and opens more sockets than the per-user cap. Other viewers
keep being served, and the server's memory stays bounded: the socket only pushes,
so a client that sends anything is closed (4400) instead of having its frames queued
(daphne queues incoming messages for the consumer without limit).
"""

from __future__ import annotations

import asyncio
import contextlib
import os

import pytest

from tests.support.live import LiveServer
from tests.support.websocket import (
    BINARY,
    TEXT,
    RawWebSocket,
    WebSocketClosed,
    client_frame,
    frame_header,
)

CAP = 8  # CHATUI_MAX_SOCKETS_PER_USER for this server
FLOOD_SOCKETS = 3 * CAP
TINY_FRAMES = 100_000  # per socket, 10 bytes each
BINARY_FRAMES = 4  # per socket, 512 KiB each
LARGE_TEXT_FRAMES = 2  # per socket, 900 KiB each (under daphne's 1 MiB limit)
OVER_LIMIT = 2 * 1024 * 1024  # daphne's --websocket-max-message-size is 1 MiB
# Peak growth of daphne's resident memory over the whole flood. After the server closes
# a socket, autobahn still parses what arrives until the close handshake times out (1 s),
# so the growth is about one second of parsing, whatever the volume sent: measured
# 32–48 MiB on 2 busy cores. Ignoring input instead of closing, daphne queued every
# frame: the other user's post timed out (30 s) and memory grew by hundreds of MiB.
MEMORY_BOUND_KB = 96 * 1024
VIEWER, VIEWER_PASSWORD = "viewer", "viewer-password-1"
FLOODER, FLOODER_PASSWORD = "flooder", "flooder-password-1"
DISCONNECTED = (WebSocketClosed, asyncio.IncompleteReadError, ConnectionError)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    live = LiveServer(
        tmp_path_factory.mktemp("flood"), extra_env={"CHATUI_MAX_SOCKETS_PER_USER": str(CAP)}
    )
    live.prepare()
    live.viewer_token = live.add_user(VIEWER, VIEWER_PASSWORD)
    # Its own user: its sockets give their places back only once daphne has drained
    # what they queued, and the other tests need the e2e user's places.
    live.flooder_token = live.add_user(FLOODER, FLOODER_PASSWORD)
    live.start()
    yield live
    live.stop()


async def open_socket(server: LiveServer, conversation_id: str, cookie: str) -> RawWebSocket:
    return await RawWebSocket.connect(
        server.port, f"/ws/conversations/{conversation_id}/", cookie=cookie, origin=server.url
    )


async def post(server: LiveServer, conversation_id: str, content: str, token=None) -> None:
    def send() -> None:
        with server.api(token) as api:
            response = api.post(
                f"/conversations/{conversation_id}/events",
                json={"type": "user.message", "content": content},
            )
            response.raise_for_status()

    await asyncio.to_thread(send)


async def first_message(ws: RawWebSocket) -> str | int:
    """The first frame's text, or the close code (1006 when the connection was dropped)."""
    try:
        return await asyncio.wait_for(ws.recv(), 30)
    except WebSocketClosed as closed:
        return closed.code
    except (asyncio.IncompleteReadError, ConnectionError):
        return 1006


async def flood(ws: RawWebSocket, tiny: bytes, started: asyncio.Event) -> None:
    """Everything a hostile client can send on one socket, until the server drops it."""
    with contextlib.suppress(*DISCONNECTED):
        try:
            await ws.send_raw(tiny)
        finally:
            started.set()  # sent, or already dropped by the server
        for _ in range(BINARY_FRAMES):
            await ws.send_binary(os.urandom(512 * 1024))
        for _ in range(LARGE_TEXT_FRAMES):
            await ws.send_text("y" * 900 * 1024)
        await ws.send_raw(frame_header(TEXT, OVER_LIMIT) + os.urandom(4) + b"z" * OVER_LIMIT)
    ws.abort()


def new_conversation(server: LiveServer, token: str) -> str:
    with server.api(token) as api:
        return api.post("/conversations", json={"title": "t"}).json()["id"]


def test_ws_flood_from_one_user_leaves_other_viewers_served_and_memory_bounded(server):
    flooder_conversation = new_conversation(server, server.flooder_token)
    viewer_conversation = new_conversation(server, server.viewer_token)
    flooder_cookie = server.session_cookie(FLOODER, FLOODER_PASSWORD)
    viewer_cookie = server.session_cookie(VIEWER, VIEWER_PASSWORD)

    async def scenario() -> tuple[int, int]:
        viewer = await open_socket(server, viewer_conversation, viewer_cookie)
        await post(server, viewer_conversation, "warm-up", server.viewer_token)
        assert "warm-up" in await first_message(viewer)
        before = server.memory_kb()["VmRSS"]

        sockets = [
            await open_socket(server, flooder_conversation, flooder_cookie)
            for _ in range(FLOOD_SOCKETS)
        ]
        tiny = b"".join(client_frame(TEXT, b"x" * 10) for _ in range(TINY_FRAMES))
        started = [asyncio.Event() for _ in sockets]
        floods = [
            asyncio.create_task(flood(ws, tiny, go))
            for ws, go in zip(sockets, started, strict=True)
        ]
        await asyncio.gather(*(go.wait() for go in started))
        # Mid-flood, another user's frame still reaches their socket.
        await post(server, viewer_conversation, "served", server.viewer_token)
        assert "served" in await first_message(viewer)
        await asyncio.gather(*floods)
        await viewer.close()
        return before, server.memory_kb()["VmHWM"]

    before, peak = asyncio.run(scenario())
    print(f"daphne RSS before {before} KiB, peak {peak} KiB, growth {peak - before} KiB")
    assert peak - before < MEMORY_BOUND_KB


def test_ws_client_input_closes_the_socket_with_4400(server):
    conversation = server.new_conversation("input")
    cookie = server.session_cookie()

    async def scenario() -> object:
        ws = await open_socket(server, conversation, cookie)
        await ws.send_text("hello")
        return await first_message(ws)

    assert asyncio.run(scenario()) == 4400


def test_ws_frame_over_the_size_limit_is_refused_before_its_payload_arrives(server):
    conversation = server.new_conversation("oversized")
    cookie = server.session_cookie()

    async def scenario() -> object:
        ws = await open_socket(server, conversation, cookie)
        # Only the header, announcing 1 GiB: daphne (autobahn) must refuse it from the
        # header alone, without waiting for or buffering the payload.
        await ws.send_raw(frame_header(BINARY, 1024**3) + os.urandom(4))
        return await first_message(ws)

    # autobahn fails an oversized frame by dropping the connection (1006 to the client).
    assert asyncio.run(scenario()) in (1006, 1009)


def test_ws_socket_cap_is_per_user_and_closed_sockets_give_their_place_back(server):
    conversation = server.new_conversation("cap")
    viewer_conversation = new_conversation(server, server.viewer_token)
    cookie = server.session_cookie()
    viewer_cookie = server.session_cookie(VIEWER, VIEWER_PASSWORD)

    firsts: dict[RawWebSocket, asyncio.Task] = {}

    async def opened(count: int, conversation_id: str, cookie: str) -> list[RawWebSocket]:
        """Sockets opened one after another, each read from the start: a socket over
        the cap is closed at once, and one whose close is not answered within 1 s
        (autobahn's close handshake timeout) is reset, taking its unread code along."""
        sockets = []
        for _ in range(count):
            ws = await open_socket(server, conversation_id, cookie)
            firsts[ws] = asyncio.create_task(first_message(ws))
            sockets.append(ws)
        return sockets

    async def outcomes(sockets: list[RawWebSocket], conversation_id: str, token=None) -> list:
        await post(server, conversation_id, "ping", token)
        return [
            "frame" if isinstance(first, str) else first
            for first in [await firsts[ws] for ws in sockets]
        ]

    async def scenario() -> None:
        held = await opened(CAP + 3, conversation, cookie)
        assert await outcomes(held, conversation) == ["frame"] * CAP + [4429] * 3
        # The cap is per user: another user's sockets are counted apart.
        viewer = (await opened(1, viewer_conversation, viewer_cookie))[0]
        assert await outcomes([viewer], viewer_conversation, server.viewer_token) == ["frame"]
        # Sockets closed cleanly, dropped without a handshake, or ended by the server
        # all give their place back.
        for ws in held[:2]:
            await ws.close()
        for ws in held[2:4]:
            ws.abort()
        await held[4].send_text("input closes the socket")
        with contextlib.suppress(*DISCONNECTED):
            await held[4].recv()
        held[4].abort()
        for ws in held[CAP:]:
            ws.abort()
        again = await opened(6, conversation, cookie)
        assert await outcomes(again, conversation) == ["frame"] * 5 + [4429]
        for ws in [*held[5:CAP], *again, viewer]:
            await ws.close()

    asyncio.run(scenario())
