"""Each reach below a library's public API (chatui.db.internals) still finds what it
relies on. An upgrade that changes one fails here, naming the library and its version,
before it fails somewhere far from the cause."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import threading

import pytest
from asgiref.sync import SyncToAsync, async_to_sync
from django.template import Context, engines

from chatui.db import internals
from chatui.models import Conversation


def version(distribution: str) -> str:
    return f"{distribution} {importlib.metadata.version(distribution)}"


def test_cpython_json_encoder_loop_prints_as_json_dumps_indent_2():
    import sys

    assert internals.MAKE_ITERENCODE is not None, (
        f"CPython {sys.version.split()[0]} has no json.encoder._make_iterencode"
    )
    markers: dict = {}
    iterencode = internals.MAKE_ITERENCODE(
        markers,
        str,
        json.encoder.encode_basestring,
        2,
        float.__repr__,
        ": ",
        ",",
        False,
        False,
        True,
    )
    value = {"a": [1, 2.5, None, True], "b": {"c": "é\n"}}
    assert "".join(iterencode(value, 0)) == json.dumps(value, indent=2, ensure_ascii=False)


def test_cpython_register_atexit_is_callable():
    import sys

    assert callable(internals.REGISTER_ATEXIT), (
        f"CPython {sys.version.split()[0]} has no threading._register_atexit"
    )
    assert internals.REGISTER_ATEXIT is getattr(threading, "_register_atexit", None)


def test_asyncio_handle_runs_like_the_loop_runs_it():
    seen = []
    loop = asyncio.new_event_loop()
    try:
        handle = asyncio.Handle(seen.append, ("ran",), loop)
        internals.run_handle(handle)
    finally:
        loop.close()
    assert seen == ["ran"]


def test_asgiref_async_to_sync_runs_on_the_loop_marked_as_the_caller():
    """What the writer threads rely on: with the caller's loop recorded on the thread,
    `async_to_sync` runs its coroutine on that loop, not a new one of its own."""
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    found = []

    async def where() -> None:
        found.append(asyncio.get_running_loop())

    def on_a_thread() -> None:
        internals.mark_called_from(loop)
        try:
            assert internals.caller_loop() is loop
            async_to_sync(where)()
        finally:
            internals.mark_called_from(None)
        found.append(internals.caller_loop())

    worker = threading.Thread(target=on_a_thread)
    worker.start()
    worker.join(10)
    loop.call_soon_threadsafe(loop.stop)
    runner.join(10)
    loop.close()
    assert found == [loop, None], f"{version('asgiref')}: SyncToAsync.threadlocal changed"
    assert hasattr(SyncToAsync, "threadlocal"), version("asgiref")


@pytest.mark.django_db
def test_django_model_without_init_equals_one_loaded_from_the_database(user):
    conversation = Conversation.objects.create(owner=user, title="t")
    loaded = Conversation.objects.get(pk=conversation.pk)
    columns = {f.attname: getattr(loaded, f.attname) for f in Conversation._meta.concrete_fields}
    bare = internals.model_without_init(Conversation, columns, db="default", adding=False)
    assert bare is not None
    assert bare._state.db == "default" and bare._state.adding is False, version("Django")
    assert {f: getattr(bare, f) for f in columns} == columns, version("Django")
    assert bare.get_deferred_fields() == set(), version("Django")
    assert internals.loaded_values(loaded)["title"] == "t", version("Django")
    deferred = Conversation.objects.only("id").get(pk=conversation.pk)
    assert "title" not in internals.loaded_values(deferred), version("Django")


def test_template_partials_partial_renders_as_its_own_render():
    backend = engines["django"]
    template = backend.from_string(
        "{% partialdef item %}<b>{{ x }}</b>{% endpartialdef %}"
    ).template
    proxy = template.extra_data["partials"]["item"]
    ours = internals.render_compiled(proxy, Context({"x": "<i>"}, autoescape=True))
    theirs = proxy.render(Context({"x": "<i>"}, autoescape=True))
    assert ours == theirs == "<b>&lt;i&gt;</b>", version("django-template-partials")


def test_channels_in_memory_layer_sweeps_expired_messages_through_clean_expired():
    """The in-memory layer's sweep is the private `_clean_expired`, called by each of its
    operations: chatui's layer runs it at most once a second (the N × M walk per frame,
    docs/SCALING.md#cluster-under-fire)."""
    import inspect

    import channels.layers

    base = channels.layers.InMemoryChannelLayer
    for operation in ("receive", "group_send"):
        assert "self._clean_expired()" in inspect.getsource(getattr(base, operation)), (
            f"{version('channels')}: InMemoryChannelLayer.{operation} no longer sweeps "
            "through _clean_expired"
        )


def test_chatui_in_memory_layer_sweeps_once_a_second_and_still_expires_messages():
    layer = internals.InMemoryChannelLayer(expiry=60)
    sweeps = []
    original = type(layer).__mro__[1]._clean_expired

    def counted(self):
        sweeps.append(1)
        original(self)

    async def scenario():
        channel = await layer.new_channel()
        other = await layer.new_channel()
        await layer.group_add("g", channel)
        for number in range(50):
            await layer.group_send("g", {"type": "frame", "n": number})
            await layer.receive(channel)
        first = len(sweeps)
        # An expired message (its stamp in the past) is swept once the second is up.
        await layer.send(other, {"type": "old"})
        queue = layer.channels[other]
        _stamp, message = queue.get_nowait()
        queue.put_nowait((0.0, message))
        layer.next_sweep = 0.0
        await layer.group_send("g", {"type": "frame"})
        return first, other in layer.channels

    type(layer).__mro__[1]._clean_expired = counted
    try:
        first, still_there = async_to_sync(scenario)()
    finally:
        type(layer).__mro__[1]._clean_expired = original
    assert first == 1, f"{first} sweeps for 100 operations within a second"
    assert not still_there, "the expired message was not swept"
