"""How many sockets one key (a user, an API token) holds open in this process, each key
up to a limit: a place is taken when a socket is accepted and given back, once, however
the socket ends (a refusal, a disconnect, a cancellation without one)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable


class SocketPlaces:
    """One per kind of socket. Event-loop only: no lock."""

    def __init__(self) -> None:
        self.open: Counter[Hashable] = Counter()

    def take(self, key: Hashable, limit: int) -> Place | None:
        """A place for `key`'s next socket, or None: it already holds `limit`."""
        if self.open[key] >= limit:
            return None
        self.open[key] += 1
        return Place(self, key)

    def give_back(self, key: Hashable) -> None:
        """Through `Place.release`, which gives a place back once."""
        self.open[key] -= 1
        if self.open[key] <= 0:
            del self.open[key]


class Place:
    """One socket's place; `release` gives it back the first time only."""

    __slots__ = ("_places", "key")

    def __init__(self, places: SocketPlaces, key: Hashable) -> None:
        self._places: SocketPlaces | None = places
        self.key = key

    def release(self) -> None:
        if self._places is not None:
            self._places.give_back(self.key)
            self._places = None
