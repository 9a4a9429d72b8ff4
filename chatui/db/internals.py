"""Every reach below a library's public API outside the server, in one place.

chatui's write path and live frames are measured in instructions (docs/PERFORMANCE.md);
a few of their savings rely on how a library works inside rather than on what it
promises. Each such reliance is one name here, with a fallback where one exists, and a
test in tests/db/test_internals.py that fails naming the library and its version when
an upgrade changes what it relies on. (The daphne and Twisted internals the server
needs are fenced the same way in chatui/server/.)
"""

from __future__ import annotations

import asyncio
import json.encoder
import os
import threading
import time
from collections.abc import Iterable
from typing import Any, TypeVar

import channels.layers
from asgiref.sync import SyncToAsync
from django.db import models
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from django.template import Context
from template_partials.templatetags.partials import TemplateProxy

M = TypeVar("M", bound=models.Model)

# -- CPython --------------------------------------------------------------------------

#: `json.encoder._make_iterencode`: the pure-Python encoder loop, built once per thread
#: by `presenters.pretty_json` instead of per call. None where CPython has none: the
#: caller then uses the public `JSONEncoder.iterencode` (the same text, built per call).
MAKE_ITERENCODE = getattr(json.encoder, "_make_iterencode", None)

#: `threading._register_atexit`: what must finish before CPython joins its threads at
#: exit (concurrent.futures uses it). None where there is none: the writer threads are
#: then daemons, and a write cut short by exit rolls back unacknowledged.
REGISTER_ATEXIT = getattr(threading, "_register_atexit", None)


def run_handle(handle: asyncio.Handle) -> None:
    """Run a callback the way the event loop runs it: a failure goes to the loop's
    exception handler, it is not raised here (`asyncio.Handle._run`)."""
    handle._run()


# -- asgiref --------------------------------------------------------------------------


def mark_called_from(loop: asyncio.AbstractEventLoop | None) -> None:
    """Record on this thread, as asgiref's `sync_to_async` thread handler does, the loop
    that called it (None: forget it): `async_to_sync` here then runs its coroutine on
    that loop rather than on a new loop of its own."""
    threadlocal = SyncToAsync.threadlocal
    threadlocal.main_event_loop = loop
    if loop is not None:
        threadlocal.main_event_loop_pid = os.getpid()


def caller_loop() -> asyncio.AbstractEventLoop | None:
    """The running loop whose `sync_to_async` called this thread, as asgiref's
    `async_to_sync` finds it; None outside such a thread."""
    threadlocal = SyncToAsync.threadlocal
    if getattr(threadlocal, "main_event_loop_pid", None) != os.getpid():
        return None
    loop = getattr(threadlocal, "main_event_loop", None)
    return loop if loop is not None and loop.is_running() else None


# -- Django ---------------------------------------------------------------------------


def model_without_init(
    cls: type[M], attributes: Iterable[tuple[str, Any]] | dict[str, Any], *, db, adding: bool
) -> M | None:
    """An instance as `Model.__init__` leaves it — its columns' attributes set, a fresh
    state — without `__init__`'s per-field work (a quarter of loading a row; a batch of
    100 events makes 100 new rows). None when something listens to the model's init
    signals, which must then be sent: the caller goes Django's way."""
    if pre_init.has_listeners(cls) or post_init.has_listeners(cls):
        return None
    instance = cls.__new__(cls)
    # A foreign key's descriptor only clears a cached related object on set, and a new
    # instance has none: its attname can go straight into __dict__.
    instance.__dict__.update(attributes)
    state = instance._state = ModelState()
    state.adding, state.db = adding, db
    return instance


def loaded_values(instance: models.Model) -> dict[str, Any]:
    """The instance's loaded column values by attname, as Django keeps them (a deferred
    column is absent: reading this never loads it)."""
    return instance.__dict__


# -- django-template-partials ---------------------------------------------------------


def render_compiled(compiled: Any, bound: Context) -> str:
    """Render a compiled template (or a partial of one) in a fresh context. For a
    partial, what `TemplateProxy.render` does without its two context managers (a fresh
    context's render state needs no isolating)."""
    if isinstance(compiled, TemplateProxy):
        bound.template = bound.render_context.template = compiled
        bound.template_name = compiled.name
        return compiled.nodelist.render(bound)
    return compiled.render(bound)


# -- Channels -------------------------------------------------------------------------


class InMemoryChannelLayer(channels.layers.InMemoryChannelLayer):
    """Channels' in-memory layer, sweeping expired messages and memberships at most once
    a second instead of on every call.

    Channels' layer calls `_clean_expired` at the start of every `receive` and
    `group_send`, and it walks every channel's queue and every group's
    members each time. Every socket's consumer waits in `receive` again after each frame,
    so a frame to a group of N sockets in a process holding M costs N × M steps: with 150
    sockets a process, 6–7 % of a web process's time in the cluster's fault run
    (bench/cluster_faults.py, docs/SCALING.md#cluster-under-fire). A message expires after
    60 s and a membership after a day; sweeping them up to a second late changes nothing
    a reader sees, and the sweep itself is Channels' own."""

    SWEEP_EVERY = 1.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.next_sweep = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now < self.next_sweep:
            return
        self.next_sweep = now + self.SWEEP_EVERY
        super()._clean_expired()
