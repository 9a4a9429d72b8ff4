"""chatui.live.broadcast's outbox: a writer thread hands its frames to the event loop and
goes on; the loop sends them in the order they were put (docs/rendering.md#live-updates,
docs/PERFORMANCE.md#p2)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async

from chatui.ingest.writer_threads import on_writer
from chatui.live import fanout
from chatui.live.broadcast import send_to_group
from chatui.live.fanout import live_layer

pytestmark = pytest.mark.asyncio

GROUP = "outbox.test"
IN_MEMORY = pytest.mark.sqlite_only(reason="looks into the in-memory channel layer's queues")


def queued(layer, channel: str) -> int:
    """Messages waiting in the in-memory layer for `channel`."""
    queue = layer.channels.get(channel)
    return queue.qsize() if queue is not None else 0


async def joined() -> tuple[object, str]:
    layer = live_layer()
    channel = await layer.new_channel()
    await fanout.group_add(GROUP, channel)
    return layer, channel


@IN_MEMORY
async def test_p2_a_writer_thread_goes_on_before_its_frame_is_sent():
    layer, channel = await joined()
    started, go, returned = threading.Event(), threading.Event(), threading.Event()

    def send() -> None:
        started.set()
        go.wait(timeout=5)
        send_to_group(GROUP, {"type": "transcript.frame", "n": 1})
        returned.set()

    writing = asyncio.ensure_future(on_writer(send))
    while not started.is_set():  # until the call is on the writer thread
        await asyncio.sleep(0.001)
    go.set()
    # The loop is held here: a send_to_group that waited for it could not return.
    assert returned.wait(timeout=5)
    assert queued(layer, channel) == 0
    await writing
    assert (await layer.receive(channel))["n"] == 1


async def test_p5_frames_from_writer_threads_arrive_in_the_order_they_were_put():
    layer, channel = await joined()

    def send_many() -> None:
        for n in range(60):
            send_to_group(GROUP, {"type": "transcript.frame", "n": n})

    await on_writer(send_many)
    await on_writer(send_many)
    received = [(await layer.receive(channel))["n"] for _ in range(120)]
    assert received == list(range(60)) * 2


@IN_MEMORY
async def test_elsewhere_a_frame_is_sent_before_send_to_group_returns():
    """Built-in agents, the admin, tests: no writer thread, no outbox."""
    layer, channel = await joined()

    def send_then_look() -> int:
        send_to_group(GROUP, {"type": "transcript.frame", "n": 7})
        return queued(layer, channel)

    assert await sync_to_async(send_then_look, thread_sensitive=False)() == 1
    assert (await layer.receive(channel))["n"] == 7


@IN_MEMORY
async def test_p2_a_viewer_whose_queue_is_full_misses_the_frame_and_the_others_get_it(settings):
    """docs/rendering.md#live-updates: a full queue drops the frame silently (the viewer resumes by
    seq); it must not keep the frame from the group's other members."""
    settings.CHANNEL_LAYERS = {
        **settings.CHANNEL_LAYERS,
        "live": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 2}},
    }
    layer = live_layer()
    full, free = await layer.new_channel(), await layer.new_channel()
    for channel in (full, free):  # the full one first: the group is sent to in this order
        await layer.group_add(GROUP, channel)

    def send(*numbers: int) -> None:
        for n in numbers:
            send_to_group(GROUP, {"type": "transcript.frame", "n": n})

    await on_writer(send, 1, 2)
    assert [(await layer.receive(free))["n"] for _ in range(2)] == [1, 2]
    await on_writer(send, 3)
    received = await asyncio.wait_for(layer.receive(free), 5)
    assert received["n"] == 3
    assert [(await layer.receive(full))["n"] for _ in range(2)] == [1, 2]
    assert queued(layer, full) == 0  # 3 was dropped for it
