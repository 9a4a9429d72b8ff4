"""A bounded, thread-safe least-recently-used map: the per-process memos of the live
path (presented tool entries, kept tool batches and tails, rendered HTML) share it,
since writer threads and built-in agents' threads read and fill them at the same time."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sized
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedLRU(Generic[K, V]):
    """At most `size` entries; the least recently read or written goes first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._store(key, value)

    def discard(self, key: K) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _store(self, key: K, value: V) -> None:
        """Under the lock."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)


class NewestKept(BoundedLRU[K, V]):
    """Keeps what live frames carry from one to the next (chatui.live.batch_cache,
    chatui.live.tail_cache): a value replaces the one kept only when it is at least as new
    (`newness`: frames of one conversation may be rendered out of order by several
    threads), and a value holding more than `max_text` characters (`text_of`) is not
    kept at all, nor an older one left: a runtime posting huge results costs no memory."""

    def __init__(self, size: int, max_text: int) -> None:
        super().__init__(size)
        self.max_text = max_text

    def newness(self, value: V) -> tuple:
        raise NotImplementedError

    def texts(self, value: V) -> list[Sized]:
        raise NotImplementedError

    def put(self, key: K, value: V) -> None:
        if sum(map(len, self.texts(value))) > self.max_text:
            self.discard(key)  # too big to keep: read each time
            return
        with self._lock:
            found = self._entries.get(key)
            if found is None or self.newness(found) <= self.newness(value):
                self._store(key, value)
