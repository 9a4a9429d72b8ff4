"""The database work of opening a live socket, on threads of its own
(docs/SCALING.md#cluster-under-fire).

Channels runs every `database_sync_to_async` call of a process on one thread. After a
fault every page reconnects at once — the 150 viewers of a killed web process arrive at
the other one together — and each handshake's reads (who the session belongs to, may
they see the conversation, what did the page miss) queued on that thread behind each
other and behind the API's own sync work, past daphne's 5 s handshake limit
(docs/SCALING.md#cluster-under-fire). These reads only read, each in its own short
autocommit query, so they need no thread of their own: they run on a small pool
(CHATUI_HANDSHAKE_THREADS, default 4), side by side, beside that thread instead of in
its queue. An open socket's reads that come in herds too run here: the re-check of its
access and its catch-up, which every socket of a process does at once after a Redis
outage (docs/SCALING.md#whole-replays).

`DatabaseSyncToAsync` closes a connection that is broken or past its age before and
after each call, as Channels does for its own thread; with PostgreSQL's pool the
connection goes back to the pool after every call, so the pool's threads never keep one.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from channels.db import DatabaseSyncToAsync
from channels.middleware import BaseMiddleware
from channels.sessions import CookieMiddleware, SessionMiddleware
from django.conf import settings
from django.contrib.auth.models import AnonymousUser

from .revocation import session_user

P = ParamSpec("P")
R = TypeVar("R")


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(
        max_workers=settings.CHATUI_HANDSHAKE_THREADS, thread_name_prefix="chatui-handshake"
    )


def on_handshake_thread(func: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """`func` made awaitable, run on the handshake pool (not Channels' one thread); like
    `database_sync_to_async`, it decorates methods too."""
    return DatabaseSyncToAsync(func, thread_sensitive=False, executor=_pool())


def scope_user(scope: dict):
    """The signed-in user of a socket's session, or AnonymousUser. The same reading as
    the sockets' re-checks (`session_user`): it never writes, so a handshake never
    flushes or cycles a session the browser is still using."""
    session = scope.get("session")
    user = session_user(session.session_key if session is not None else None)
    return user if user is not None else AnonymousUser()


class HandshakeAuthMiddleware(BaseMiddleware):
    """Channels' AuthMiddleware, with the session's user read on the handshake pool."""

    async def __call__(self, scope, receive, send):
        if "session" not in scope:
            raise ValueError("HandshakeAuthMiddleware needs SessionMiddleware above it")
        scope = dict(scope, user=await on_handshake_thread(scope_user)(scope))
        return await super().__call__(scope, receive, send)


def HandshakeAuthMiddlewareStack(inner):  # named like Channels' own stack
    return CookieMiddleware(SessionMiddleware(HandshakeAuthMiddleware(inner)))
