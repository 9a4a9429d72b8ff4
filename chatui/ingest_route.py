"""ASGI: `POST /api/v1/conversations/{id}/events` straight to the API view, on the
writer thread (SPEC §8 P2: the single-event request is the product's hot path).

Django drives a sync view from a thread of its own per request: a new thread, a new
database connection opened and closed (CONN_MAX_AGE=0 on SQLite, the pool's checkout
on PostgreSQL), and the whole middleware chain, for a request whose answer is JSON and
whose bearer token the edge (chatui.edge) has already checked and put in the scope.
Routed here instead, the *same* view (`api.conversation_events`: validation, `ingest`,
the JSON answer) runs on the writer threads (chatui.writer), which keep their connections,
and the answer gets the headers the middleware would have given it (`finish`). The
view knows nothing of the route: through Django (the test client, another server
without this router) it answers the same.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

from django.conf import settings
from django.core.handlers.asgi import ASGIHandler, ASGIRequest
from django.core.handlers.exception import response_for_exception
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import Resolver404, ResolverMatch, get_urlconf, resolve
from django.utils.log import log_response

from .middleware import ContentSecurityPolicyMiddleware
from .writer import on_writer

ROUTED_VIEW = "api:conversation-events"


# -- the headers an API answer gets from the middleware --------------------------------

_HEADER_MIDDLEWARE = (SecurityMiddleware, ContentSecurityPolicyMiddleware, XFrameOptionsMiddleware)


@cache
def _header_middleware() -> tuple[Any, ...]:
    return tuple(middleware(lambda request: None) for middleware in _HEADER_MIDDLEWARE)


def finish(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """The response as config/settings.py's middleware chain would have returned it:
    the security headers (nosniff, referrer and opener policies, CSP, X-Frame-Options)
    of those very middleware classes, applied in the chain's order (inner first)."""
    for middleware in reversed(_header_middleware()):
        response = middleware.process_response(request, response)
    response.setdefault("Cache-Control", "no-store")
    if not response.streaming and not response.has_header("Content-Length"):
        response["Content-Length"] = str(len(response.content))  # as CommonMiddleware does
    return response


# -- the route ------------------------------------------------------------------------


class IngestRoute:
    """Sends the events POST to the view on a writer thread; everything else on."""

    def __init__(self, app: Any):
        self.app = app
        self.responder = app if isinstance(app, ASGIHandler) else ASGIHandler()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        match = _events_post(scope)
        if match is None:
            return await self.app(scope, receive, send)
        body = await _read_body(receive)
        if body is None:
            return  # the client left before its body arrived: nobody to answer
        request = ASGIRequest(scope, io.BytesIO(body))
        response = await on_writer(_run_view, match.func, request, match.kwargs)
        await self.responder.send_response(finish(request, response), send)


def _events_post(scope: dict) -> Any:
    if scope["type"] != "http" or scope.get("method") != "POST":
        return None
    path = scope["path"]
    if not path.endswith("/events"):
        return None  # every other request pays one suffix test, not a resolve
    return _routed_match(path, get_urlconf() or settings.ROOT_URLCONF)


@lru_cache(maxsize=4096)
def _routed_match(path: str, urlconf: str) -> ResolverMatch | None:
    """The view's match for an events path, or None. Kept per path: a runtime posts to
    the same few conversations over and over, and `resolve` walks every URL pattern
    (~35 µs, on the event loop, per request). The match is only read (`func`,
    `kwargs`); keyed by the urlconf too, so a test's `ROOT_URLCONF` is honoured."""
    try:
        match = resolve(path, urlconf)
    except Resolver404:
        return None
    return match if match.view_name == ROUTED_VIEW else None


async def _read_body(receive: Callable) -> bytes | None:
    """The body, or its first CHATUI_MAX_REQUEST_BYTES + 1 bytes when it is larger: the
    view answers 413 to that, holding no more than one byte over the limit (under
    daphne the edge has bounded it already). None when the client disconnected first."""
    chunks: list[bytes] = []
    room = settings.CHATUI_MAX_REQUEST_BYTES + 1
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")[:room]
        chunks.append(chunk)
        room -= len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _run_view(view: Callable, request: ASGIRequest, kwargs: dict) -> HttpResponse:
    """On a writer thread. A failure answers as Django's handler would (500 logged),
    and leaves no broken connection behind for the next request."""
    try:
        response = view(request, **kwargs)
    except Exception as problem:
        connection.close()  # possibly broken: the next write reconnects
        return response_for_exception(request, problem)  # logs it, as Django does
    if response.status_code >= 400:  # logged as Django's handler logs a refusal
        log_response(
            "%s: %s", response.reason_phrase, request.path, response=response, request=request
        )
    return response
