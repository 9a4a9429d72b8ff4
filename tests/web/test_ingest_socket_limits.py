"""The ingest channel (`/ws/ingest/{id}/`) holds a bounded number of bytes per socket, and
one token holds a bounded number of sockets.

Found by the security probe (issue 28, finding 9): what a socket held while its writes
waited on the database was bounded by a count of events (5,000), not by their size, so
three sockets sending a hundred 1 MB events each took daphne from 538 to 1,202 MB of
memory (never returned); and one token could open any number of sockets. Now a socket
refuses a message with 429 once CHATUI_INGEST_MAX_PENDING_BYTES would be held unwritten
(the runtime re-sends it after the acks), and a token's sockets past
CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN in a process are closed with 4429.

In-process against the real application and database; the database is made slower than
the runtime by holding the conversation's row in a write transaction (on SQLite the
write lock itself), so what the socket holds can be seen: what it acknowledges once the
write goes on, and what it refused meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection, transaction

from chatui.models import ApiToken, Conversation, Event
from config.asgi import application
from tests.support.sockets import fresh_channel_layer
from tests.support.writer import close_writer_connections

__all__ = ["fresh_channel_layer"]

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

MIB = 1024 * 1024
#: Each message: one user message of about 0.9 MB (under the 1 MiB event limit).
MESSAGE_CHARS = 900_000


def message(n: int) -> str:
    return json.dumps(
        {"type": "user.message", "event_id": f"u{n}", "content": f"{n} " + "x" * MESSAGE_CHARS}
    )


@contextmanager
def database_held(conversation_id) -> Iterator[None]:
    """The conversation's row locked in a write transaction on another connection until
    the block ends: ingest waits (on SQLite, for the database's write lock)."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                Conversation.objects.select_for_update().filter(pk=conversation_id).update(
                    title="held"
                )
                held.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    try:
        yield
    finally:
        release.set()
        holder.join(10)


async def open_socket(conversation, raw_token: str) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        application,
        f"/ws/ingest/{conversation.pk}/",
        headers=[(b"authorization", f"Bearer {raw_token}".encode())],
    )
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    return communicator


@pytest_asyncio.fixture
async def token(user) -> str:
    _, raw = await sync_to_async(ApiToken.issue)(user)
    yield raw
    await close_writer_connections()  # the writer threads outlive the test database


async def test_an_ingest_socket_holds_at_most_its_pending_bytes(settings, conversation, token):
    settings.CHATUI_INGEST_MAX_PENDING_BYTES = 4 * MIB
    socket = await open_socket(conversation, token)
    sent, refused = 12, []
    with database_held(conversation.pk):
        for n in range(sent):
            await socket.send_to(text_data=message(n))
        # Refusals come at once, while the writes wait for the database.
        await asyncio.sleep(0.5)
        while not await socket.receive_nothing(timeout=0.2):
            answer = await socket.receive_json_from()
            assert answer.get("status") == 429, answer
            assert "CHATUI_INGEST_MAX_PENDING_BYTES" in answer["error"]
            refused.append(answer)
    acked: list[str] = []
    while len(acked) + len(refused) < sent:
        answer = await socket.receive_json_from(timeout=30)
        assert "ack" in answer, answer
        acked.extend(answer["ack"])
    await socket.disconnect()

    # Written or waiting, the socket held what fits in 4 MiB — four of these — at once,
    # and refused the rest.
    assert len(acked) * len(message(0)) <= 4 * MIB < (len(acked) + 1) * len(message(0))
    assert (len(acked), len(refused)) == (4, sent - 4)
    stored = await sync_to_async(
        lambda: list(Event.objects.filter(conversation=conversation).values_list("event_id"))
    )()
    assert sorted(event_id for (event_id,) in stored) == sorted(acked)


async def test_one_token_holds_at_most_its_ingest_sockets(settings, conversation, token):
    settings.CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN = 2
    first = await open_socket(conversation, token)
    second = await open_socket(conversation, token)
    third = await open_socket(conversation, token)
    closed = await third.receive_output(10)
    assert closed["type"] == "websocket.close" and closed["code"] == 4429
    assert "CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN" in closed.get("reason", "")
    # The two admitted still write.
    await second.send_to(text_data=json.dumps({"type": "user.message", "content": "hi"}))
    assert (await second.receive_json_from(10))["accepted"] == 1
    # A place given back is free again.
    await first.disconnect()
    await asyncio.sleep(0.1)
    fourth = await open_socket(conversation, token)
    await fourth.send_to(text_data=json.dumps({"type": "user.message", "content": "again"}))
    assert (await fourth.receive_json_from(10))["accepted"] == 1
    await second.disconnect()
    await fourth.disconnect()
