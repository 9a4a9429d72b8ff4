"""A consumer on the Redis layer ends when it is cancelled (issue 28: a suite that cannot hang).

`make test-cluster` hung in tests/test_listing.py::test_list_socket_refuses_anonymous_readers:
its communicator was never disconnected, so `asyncio.run` cancelled the consumer at the
loop's teardown and waited for it forever. The task that ignored the cancellation was
the consumer's channel-layer receive: redis-py sends each command through
`asyncio.wait_for`, which on Python 3.11 returns the result instead of raising when the
task is cancelled just as the send completes; channels-redis's receive then goes on
with its next blocking BZPOPMIN, and again, for ever. A daphne cancelling a consumer
(application_close_timeout, shutdown) left the same task running.

Reproduced here without waiting for luck: the consumer is cancelled in exactly that
window, right after one of its sends to Redis completed and before it resumed. Viewers
now receive from their process's memory (chatui.live.fanout); what a consumer still
sends to Redis is its group's SUBSCRIBE when it connects, where a swallowed
cancellation left it waiting for its socket's frames for ever: cancelled again by
`ending_when_cancelled`, it ends.
"""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from chatui.live import fanout
from config.asgi import application
from tests.support.sockets import HOST, ORIGIN, fresh_channel_layer, session_cookie  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

SEND = "AbstractConnection._send_packed_command"  # redis-py's send, a task of its own


async def cancel_just_after_a_send_completes(consumer: asyncio.Future) -> None:
    """Step the loop one turn at a time; the moment a send to Redis has completed but the
    task waiting for it has not yet resumed, cancel `consumer` (as asyncio.run's
    teardown or daphne does)."""
    sends: set[asyncio.Task] = set()
    for _ in range(200_000):
        await asyncio.sleep(0)
        if any(send.done() for send in sends):
            consumer.cancel()
            return
        sends |= {
            task
            for task in asyncio.all_tasks()
            if getattr(task.get_coro(), "__qualname__", "") == SEND
        }
    raise AssertionError("the consumer never sent a command to Redis")


async def test_consumer_on_redis_ends_when_cancelled_just_after_its_subscribe_was_sent(
    django_user_model,
):
    user = await sync_to_async(django_user_model.objects.create_user)("cancelled", password="x")
    cookie = await sync_to_async(session_cookie)(user)
    # The process's relay connected first: the next send to Redis is the consumer's own.
    relay = fanout.relay_here()
    assert relay is not None, "runs in cluster mode only"
    await asyncio.wait_for(relay.connected.wait(), 10)
    headers = [HOST, ORIGIN, (b"cookie", cookie)]
    communicator = WebsocketCommunicator(application, "/ws/rows/", headers=headers)
    await communicator.send_input({"type": "websocket.connect"})
    await cancel_just_after_a_send_completes(communicator.future)
    done, _ = await asyncio.wait({communicator.future}, timeout=3)
    assert done, "the consumer is still running 3 s after it was cancelled"
