"""chatui.live.fanout.put_in_memory: the in-memory layer's group send, made cheap for the
frames a writer hands the event loop (docs/PERFORMANCE.md#p2), and giving each member what the
layer's own `group_send` gives it."""

from __future__ import annotations

import pytest

from chatui.live.fanout import live_layer, put_in_memory

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.sqlite_only(reason="looks into the in-memory channel layer's queues"),
]

GROUP = "outbox.in-memory"


async def members(count: int) -> tuple[object, list[str]]:
    layer = live_layer()
    channels = [await layer.new_channel() for _ in range(count)]
    for channel in channels:
        await layer.group_add(GROUP, channel)
    return layer, channels


@pytest.mark.parametrize(
    "message",
    [
        {"type": "transcript.frame", "first_seq": 1, "last_seq": 2, "html": "<p>a</p>"},
        {"type": "list.row", "html": "<li>", "nested": {"list": [1, 2]}},
    ],
)
async def test_p2_each_member_receives_what_the_layers_group_send_gives_it(message):
    layer, channels = await members(2)
    put_in_memory(layer, GROUP, message)
    await layer.group_send(GROUP, message)
    for channel in channels:
        ours, layers = await layer.receive(channel), await layer.receive(channel)
        assert ours == layers == message


async def test_p2_a_member_changing_its_message_changes_no_one_elses():
    layer, (one, other) = await members(2)
    message = {"type": "list.row", "html": "<li>", "nested": {"list": [1]}}
    put_in_memory(layer, GROUP, message)
    first = await layer.receive(one)
    first["html"] = "changed"
    first["nested"]["list"].append(2)
    assert await layer.receive(other) == {
        "type": "list.row",
        "html": "<li>",
        "nested": {"list": [1]},
    }
    assert message == {"type": "list.row", "html": "<li>", "nested": {"list": [1]}}


async def test_p2_a_group_nobody_is_in_gets_nothing_and_fails_nothing():
    layer = live_layer()
    put_in_memory(layer, "outbox.nobody", {"type": "transcript.frame"})
    assert not layer.groups.get("outbox.nobody")
