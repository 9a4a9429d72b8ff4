"""Bearer tokens recently found valid, kept for a few seconds (SPEC §8 P2).

A runtime sends its token with every request — one per event, when it posts
single events — and looking it up is a database query on a thread of its own:
a tenth of a single-event request's server CPU (py-spy over bench/p2). A token
found valid is kept here for `CHATUI_TOKEN_CACHE_SECONDS` (0 turns this off).

Only valid tokens are kept: a wrong one is looked up every time, so guessing
costs what it did. Taking access away is seen at once by the process that made
the change — deleting or saving a token, saving, deactivating or deleting its
user, or changing a user's groups or permissions clears this process's cache —
and by every other process (cluster mode, SPEC §12.1) within the cache's
lifetime, as an open ingest socket sees it within `ingest_socket.RECHECK_SECONDS`.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.dispatch import receiver

from .models import ApiToken

# A bound, not an expected size: tokens of one deployment number in the dozens.
MAX_ENTRIES = 10_000


class TokenCache:
    """Token hash → (the token with its user, when it stops being trusted)."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[ApiToken, float]] = {}
        self._lock = threading.Lock()

    def get(self, key_hash: str) -> ApiToken | None:
        entry = self._entries.get(key_hash)
        if entry is None:
            return None
        token, expires = entry
        if time.monotonic() >= expires:
            with self._lock:
                if self._entries.get(key_hash) is entry:
                    del self._entries[key_hash]
            return None
        return token

    def put(self, key_hash: str, token: ApiToken) -> None:
        lifetime = float(settings.CHATUI_TOKEN_CACHE_SECONDS)
        if lifetime <= 0:
            return
        with self._lock:
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[key_hash] = (token, time.monotonic() + lifetime)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


tokens = TokenCache()


def forget_tokens(**kwargs) -> None:
    """Access may have been taken away: look every token up again. Now, and again on
    commit — a request between the two could put back what the transaction is about
    to change."""
    tokens.clear()
    transaction.on_commit(tokens.clear, robust=True)


_User = get_user_model()

for _model in (ApiToken, _User):
    _label = _model._meta.label
    post_save.connect(forget_tokens, sender=_model, dispatch_uid=f"chatui.tokens.save.{_label}")
    post_delete.connect(forget_tokens, sender=_model, dispatch_uid=f"chatui.tokens.del.{_label}")


@receiver(m2m_changed, dispatch_uid="chatui.tokens.m2m")
def _relations_changed(sender, **kwargs) -> None:
    """A user's groups or permissions, or a group's permissions (`chatui.ingest_any`)."""
    if sender in (_User.groups.through, _User.user_permissions.through, Group.permissions.through):
        forget_tokens()
