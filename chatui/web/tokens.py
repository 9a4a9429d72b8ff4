"""Bearer tokens: looked up by their hash, and kept for a few seconds once found
valid (docs/events.md#sec5, docs/PERFORMANCE.md#p2).

A runtime sends its token with every request — one per event, when it posts
single events — and looking it up is a database query on a thread of its own:
a tenth of a single-event request's server CPU (py-spy over bench/p2). A token
found valid is kept here for `CHATUI_TOKEN_CACHE_SECONDS` (0 turns this off).

Only valid tokens are kept: a wrong one is looked up every time, so guessing
costs what it did. Taking access away is seen at once by the process that made
the change — deleting or saving a token, saving, deactivating or deleting its
user, or changing a user's groups or permissions clears this process's cache —
and by every other process (cluster mode, docs/SCALING.md) within the cache's
lifetime, as an open ingest socket sees it within `ingest_socket.RECHECK_SECONDS`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from chatui.models import ApiToken, hash_token

#: `ApiToken.last_used_at` is written at most this often per token.
LAST_USED_RESOLUTION = timedelta(minutes=1)
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


def token_for(credential: str) -> ApiToken | None:
    """The active user's token with this value: one indexed lookup (tokens are stored
    hashed), or none while it is in the cache of recently valid ones."""
    key_hash = hash_token(credential)
    token = tokens.get(key_hash)
    if token is not None:
        return token
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=key_hash, user__is_active=True)
        .first()
    )
    if token is not None:
        tokens.put(key_hash, token)
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


# Off the event loop, on one thread of its own that keeps its database connection: not
# queued behind other sync work, and not paying a new connection per request (with
# CONN_MAX_AGE=0, as on SQLite, a pool thread opened and closed one for every lookup:
# bench/p2, a third of a single-event request's database time). A lookup is one indexed
# read, so one thread serves thousands a second.
_token_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chatui-token")


def _token_for_on_its_thread(credential: str) -> ApiToken | None:
    try:
        return token_for(credential)
    except Exception:
        connection.close()  # a broken connection is not kept: the next lookup reconnects
        raise


def cached_token(credential: str) -> ApiToken | None:
    """The token with this value if it was found valid a moment ago; else None (which
    says nothing: look it up)."""
    return tokens.get(hash_token(credential))


async def token_for_async(credential: str) -> ApiToken | None:
    cached = cached_token(credential)
    if cached is not None:  # no hop to the lookup thread and back
        return cached
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_token_thread, _token_for_on_its_thread, credential)


def forget_tokens(**kwargs) -> None:
    """Access may have been taken away: look every token up again. Now, and again on
    commit — a request between the two could put back what the transaction is about
    to change."""
    tokens.clear()
    transaction.on_commit(tokens.clear, robust=True)


_User = get_user_model()

for _model in (ApiToken, _User):
    _label = _model._meta.label
    post_save.connect(forget_tokens, sender=_model, dispatch_uid=f"chatui.web.tokens.save.{_label}")
    post_delete.connect(
        forget_tokens, sender=_model, dispatch_uid=f"chatui.web.tokens.del.{_label}"
    )


@receiver(m2m_changed, dispatch_uid="chatui.web.tokens.m2m")
def _relations_changed(sender, **kwargs) -> None:
    """A user's groups or permissions, or a group's permissions (`chatui.ingest_any`)."""
    if sender in (_User.groups.through, _User.user_permissions.through, Group.permissions.through):
        forget_tokens()
