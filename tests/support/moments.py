"""Holding the process's one slot for projecting moments (time travel), so that the
next moment asked meets the bound and its 503."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from chatui.read import replay


@contextmanager
def moment_slot_held(settings) -> Iterator[None]:
    """One slot (CHATUI_MOMENT_WORKERS = 1), taken by another thread for the block; a
    moment asked meanwhile waits 0.05 s and is refused."""
    settings.CHATUI_MOMENT_WORKERS = 1
    settings.CHATUI_MOMENT_WAIT_SECONDS = 0.05
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with replay.moment_slot():
            held.set()
            done.wait(timeout=30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(timeout=30)
        yield
    finally:
        done.set()
        holder.join(timeout=30)
