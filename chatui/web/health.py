"""`/healthz`: can this process reach its database and its channel layer?

For load balancers and `make run-cluster`: 200 when both answer, 503 otherwise,
with a JSON body naming each part (`sqlite` + `in-memory` in the embedded default,
`postgresql` + `redis` in cluster mode). Both checks are real round trips, each
bounded by a timeout, so a stuck database or Redis shows as 503, not a hang.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

logger = logging.getLogger(__name__)

CHECK_TIMEOUT = 3.0
PING = {"type": "health.ping"}


@never_cache
@require_GET
async def healthz(request: HttpRequest) -> JsonResponse:
    database, channel_layer = await asyncio.gather(_database(), _channel_layer())
    healthy = database["ok"] and channel_layer["ok"]
    return JsonResponse(
        {
            "status": "ok" if healthy else "unavailable",
            "database": database,
            "channel_layer": channel_layer,
            # Which process answered: several share the port in cluster mode.
            "pid": os.getpid(),
        },
        status=200 if healthy else 503,
    )


async def _database() -> dict[str, Any]:
    # In a thread of its own, not the request's: a database that hangs must not
    # block the thread every sync view of this process shares.
    check = sync_to_async(_select_one, thread_sensitive=False)
    return await _bounded(check(), vendor=connection.vendor)


def _select_one() -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    finally:
        connection.close()  # this thread's connection; back to the pool, if any


async def _channel_layer() -> dict[str, Any]:
    layer = get_channel_layer()
    if layer is None:
        return {"ok": False, "backend": "none", "error": "no channel layer configured"}
    return await _bounded(_send_to_self(layer), backend=_backend_name(layer))


async def _send_to_self(layer) -> None:
    """A message to a fresh channel of this process and back: what a live frame does."""
    channel = await layer.new_channel()
    await layer.send(channel, PING)
    if await layer.receive(channel) != PING:
        raise RuntimeError("the channel layer returned another message")


def _backend_name(layer) -> str:
    name = type(layer).__name__
    if name.startswith("Redis"):
        return "redis"
    if name.startswith("InMemory"):
        return "in-memory"
    return name


async def _bounded(check, **facts: str) -> dict[str, Any]:
    try:
        await asyncio.wait_for(check, CHECK_TIMEOUT)
    except Exception as problem:  # any failure is "unavailable", named in the answer
        logger.warning("health check failed (%s): %r", facts, problem)
        reason = "timed out" if isinstance(problem, TimeoutError) else type(problem).__name__
        return {"ok": False, **facts, "error": reason}
    return {"ok": True, **facts}
