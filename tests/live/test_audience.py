"""docs/rendering.md#live-updates, docs/PERFORMANCE.md#p2: live HTML is rendered for a group only
when someone may be in it (chatui.live.broadcast.may_have_members). A runtime posting while nobody
watches pays for no frame and no list row; a viewer who opens the page later still gets every event.

The in-memory layer knows its groups; on Redis (cluster mode) chatui cannot know
without a round trip, so it always renders: both are asserted, by layer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import InMemoryChannelLayer
from django.db import connection
from django.test.signals import template_rendered
from django.test.utils import CaptureQueriesContext

from chatui.ingest.service import ingest
from chatui.ingest.writer_threads import on_writer
from chatui.live import broadcast, fanout
from chatui.live.broadcast import group_name, rows_group
from chatui.live.fanout import live_layer
from chatui.models import Conversation
from tests.support.sockets import connect, fresh_channel_layer  # noqa: F401
from tests.support.writer import close_writer_connections

pytestmark = pytest.mark.django_db(transaction=True)

ROW = "chatui/_conversation_row.html"


def tool_step(call_id: str) -> list[dict]:
    call = {"tool_call_id": call_id, "run_id": "r1"}
    return [
        {"type": "agent.tool.started", "tool_name": "read_file", **call},
        {"type": "agent.tool.completed", "result": "ok", **call},
    ]


@contextmanager
def rendered() -> Iterator[list[str]]:
    """The templates rendered meanwhile (partials by their template's name)."""
    names: list[str] = []

    def seen(sender, template, **kwargs) -> None:
        names.append(template.origin.template_name if template.origin else template.name)

    template_rendered.connect(seen)
    try:
        yield names
    finally:
        template_rendered.disconnect(seen)


def renders_only_for_members() -> bool:
    return fanout.relay_url() is None and isinstance(live_layer(), InMemoryChannelLayer)


def join(group: str) -> None:
    layer = live_layer()
    async_to_sync(fanout.group_add)(group, async_to_sync(layer.new_channel)())


def queries_of(conversation, events: list[dict]) -> int:
    with CaptureQueriesContext(connection) as queries:
        for event in events:
            ingest(conversation, event)
    return len(queries)


def test_p2_an_unwatched_conversation_reads_and_renders_nothing_for_viewers(user, monkeypatch):
    frames_of: list = []  # the conversations whose frames were rendered

    def change_frame(conversation, *args, **kwargs):
        frames_of.append(conversation.pk)
        return rendering(conversation, *args, **kwargs)

    rendering = broadcast.change_frame
    monkeypatch.setattr(broadcast, "change_frame", change_frame)
    watched, unwatched = (Conversation.objects.create(owner=user) for _ in range(2))
    join(group_name(watched.pk))
    for conversation in (watched, unwatched):
        ingest(conversation, {"type": "user.message", "content": "go", "run_id": "r1"})
    steps = [event for step in range(3) for event in tool_step(f"c{step}")]
    frames_of.clear()
    with rendered() as names:
        cost_unwatched = queries_of(unwatched, steps)
    cost_watched = queries_of(watched, steps)
    if renders_only_for_members():
        assert frames_of == [watched.pk] * len(steps)
        assert names == []  # nor its list row
        # A watched tool step's frame mostly reads nothing now (its kept tail, the rows
        # its ingest wrote: tests/live/test_frame_written_rows.py), so no fewer queries.
        assert cost_unwatched <= cost_watched
    else:  # Redis: membership unknown, every frame and row rendered
        assert sorted(frames_of) == sorted([unwatched.pk, watched.pk] * len(steps))
        assert cost_unwatched == cost_watched
        assert ROW in names


def test_p2_a_watched_list_gets_its_row(conversation):
    join(group_name(conversation.pk))
    with rendered() as names:
        ingest(conversation, tool_step("c1")[0])
    assert (ROW not in names) is renders_only_for_members()  # nobody's list is open
    join(rows_group(conversation.owner_id))
    with rendered() as names:
        ingest(conversation, tool_step("c2")[0])
    assert ROW in names


@pytest.mark.asyncio
async def test_s5_a_page_opened_after_unwatched_events_gets_all_of_them(conversation):
    await sync_to_async(ingest)(conversation, {"type": "user.message", "content": "first"})
    for event in tool_step("c1"):  # nobody watches: no frame was rendered for these
        await sync_to_async(ingest)(conversation, event)
    owner = await sync_to_async(lambda: conversation.owner)()
    communicator, connected, _ = await connect(conversation, owner, after=1)
    assert connected
    frame = await communicator.receive_from(timeout=5)
    assert frame.startswith("<!--seq 2 3-->")
    assert 'data-tool-call-id="c1"' in frame and 'data-status="success"' in frame
    await communicator.disconnect()


def started(call_id: str) -> dict:
    return tool_step(call_id)[0]


async def rows_channel(conversation) -> tuple[object, str]:
    layer = live_layer()
    channel = await layer.new_channel()
    await fanout.group_add(rows_group(conversation.owner_id), channel)
    return layer, channel


async def rows_received(layer, channel: str, within: float) -> list[str]:
    rows = []
    with contextlib.suppress(asyncio.TimeoutError):
        while True:
            rows.append((await asyncio.wait_for(layer.receive(channel), within))["html"])
    return rows


@pytest.mark.asyncio
async def test_10_a_busy_conversation_row_goes_out_once_an_interval_and_ends_current(
    conversation, monkeypatch
):
    """Writes from the event loop (the API, the ingest channel): the first change's row
    at once, the next ones as one row at the interval's end, showing all of them."""
    monkeypatch.setattr(broadcast.ROWS, "interval", 2.0)  # far longer than five writes
    layer, channel = await rows_channel(conversation)
    try:
        for n in range(5):
            await on_writer(ingest, conversation, started(f"c{n}"))
        first = await rows_received(layer, channel, within=0.5)
        assert len(first) == 1 and "1 tool" in first[0]
        trailing = await rows_received(layer, channel, within=4.0)
        assert len(trailing) == 1 and "5 tools" in trailing[0]
    finally:
        await close_writer_connections()  # the writer thread outlives the test database


@pytest.mark.asyncio
async def test_10_a_row_written_outside_an_event_loop_goes_out_at_once(conversation):
    # The socket's side on this test's loop (in cluster mode its process's relay lives
    # there); the writes from a thread of no event loop, as built-in agents and the admin.
    layer = live_layer()
    channel = await layer.new_channel()
    await fanout.group_add(rows_group(conversation.owner_id), channel)

    def write() -> None:
        try:
            for n in range(3):
                ingest(conversation, started(f"c{n}"))
        finally:
            connection.close()  # this thread's: the test database is dropped after

    await sync_to_async(write, thread_sensitive=False)()
    rows = await rows_received(layer, channel, 0.2)
    assert ["1 tool" in rows[0], "2 tools" in rows[1], "3 tools" in rows[2]] == [True] * 3
