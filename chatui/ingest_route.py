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

Under daphne the route does not even wait for the ASGI application: `serve_on_daphne`
takes the request from daphne as daphne is about to create the application for it
(chatui.edge.guard_daphne), and hands the answer straight back to daphne's request.
"""

from __future__ import annotations

import asyncio
import functools
import io
from collections.abc import Awaitable, Callable
from functools import cache, lru_cache
from typing import Any

from django.conf import settings
from django.core.handlers.asgi import ASGIHandler, ASGIRequest
from django.core.handlers.exception import response_for_exception
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import Resolver404, ResolverMatch, resolve
from django.utils.log import log_response

from .edge import SCOPE_CHECKED
from .middleware import ContentSecurityPolicyMiddleware
from .writer import hand_to_writer, on_writer

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
        response = await on_writer(_respond, scope, body, match)
        await self.responder.send_response(response, send)


def _respond(scope: dict, body: bytes, match: ResolverMatch) -> HttpResponse:
    """On a writer thread: the view's answer with the middleware's headers. The request
    is made here too, off the event loop (none of it is needed before the view runs)."""
    request = ASGIRequest(scope, io.BytesIO(body))
    return finish(request, _run_view(match.func, request, match.kwargs))


# -- under daphne: the same route, without the ASGI plumbing around it -------------------


def serve_on_daphne(server: Any, protocol: Any, scope: dict) -> Any | None:
    """daphne's `create_application` for the events POST (chatui.edge hands every
    request's scope here first): serves it as `IngestRoute` does and returns the input
    queue daphne puts the body in; None for any other request, left to the application.

    For a single-event request the ASGI plumbing cost as much of the event loop as the
    request's own work (py-spy over bench/p2: a queue, the application task through
    every middleware, each answer message through daphne's `Server.handle_reply`
    coroutine). Here the body is taken as daphne hands it over and the answer given to
    daphne's request directly; daphne still builds and checks the scope, writes the
    answer, logs it, and tracks a future as its application instance (a failure is
    logged and answered 500 by daphne; shutdown cancels it, and a write not yet
    started then never runs)."""
    if not scope.get(SCOPE_CHECKED):
        return None  # only behind the edge's checks (chatui.edge.GuardedRequest)
    match = _events_post(scope)
    if match is None or protocol not in server.connections:
        return None
    scope.setdefault("asgi", {"version": "3.0"})
    # The application instance daphne tracks: done once the answer is handed over.
    # No task, no coroutine: the body goes to a writer thread as it completes, and the
    # writer's outcome comes back to `_hand_over` (each await of a task costs the loop).
    answering = asyncio.get_running_loop().create_future()
    body = BodyQueue(functools.partial(_body_received, protocol, scope, match, answering))
    server.connections[protocol]["application_instance"] = answering
    return body


class BodyQueue:
    """Stands in for the input queue daphne fills with a request's body messages: keeps
    the body (cut as `_read_body` cuts it) and hands it, or None when the client left
    before it was complete, to `received`."""

    def __init__(self, received: Callable[[bytes | None], None] | None = None) -> None:
        self.chunks: list[bytes] = []
        self.room = settings.CHATUI_MAX_REQUEST_BYTES + 1
        self.body: bytes | None = None
        self.gone = False
        self._received = received
        self._waiter: asyncio.Future | None = None

    def put_nowait(self, message: dict) -> None:
        if self.body is not None or self.gone:
            return  # after the body only a disconnect comes: nobody waits for it
        if message["type"] == "http.disconnect":
            self.gone = True
        else:
            chunk = message.get("body", b"")[: self.room]
            self.chunks.append(chunk)
            self.room -= len(chunk)
            if message.get("more_body", False):
                return
            self.body = b"".join(self.chunks)
        if self._received is not None:
            self._received(self.body)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def read(self) -> bytes | None:
        """The whole body, or None when the client left before sending it."""
        if self.body is None and not self.gone:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return self.body


def _body_received(
    protocol: Any, scope: dict, match: ResolverMatch, answering: asyncio.Future, body: bytes | None
) -> None:
    if answering.done():
        return  # cancelled: daphne is done with the request (shutdown)
    if body is None:
        answering.set_result(None)  # the client left before its body arrived: no answer
        return
    on_writer_then = functools.partial(_hand_over, protocol)
    try:
        hand_to_writer(answering, on_writer_then, _respond_on_the_wire, scope, body, match)
    except Exception as failure:  # e.g. the writers are shut down: daphne answers 500
        answering.set_exception(failure)


def _hand_over(
    protocol: Any, answering: asyncio.Future, answer: Any, problem: BaseException | None
) -> None:
    """On the loop: the writer's answer to daphne's request (which ignores an answer to
    a client that has left); a failure to daphne, which logs it and answers 500."""
    if answering.done():
        return  # cancelled meanwhile: daphne is done with the request
    if problem is None and not isinstance(answer, tuple):  # streamed: Django sends it
        sending = asyncio.ensure_future(_responder().send_response(answer, _answer_to(protocol)))
        sending.add_done_callback(functools.partial(_copy_outcome, answering))
        return
    if problem is None:
        start, whole_body = answer
        try:
            protocol.handle_reply(start)
            protocol.handle_reply(whole_body)
        except Exception as failure:  # as a failing application task would be reported
            problem = failure
    if problem is None:
        answering.set_result(None)
    else:
        answering.set_exception(problem)


def _copy_outcome(answering: asyncio.Future, sending: asyncio.Future) -> None:
    if answering.done():
        return
    if sending.cancelled():
        answering.cancel()
    elif sending.exception() is not None:
        answering.set_exception(sending.exception())
    else:
        answering.set_result(None)


def _respond_on_the_wire(
    scope: dict, body: bytes, match: ResolverMatch
) -> tuple[dict, dict] | HttpResponseBase:
    """On a writer thread: the answer as the two ASGI messages Django's
    `ASGIHandler.send_response` would make of it, for daphne's `handle_reply`; the
    event loop then only hands them over (no header conversion, no coroutine per
    message). A streaming response is returned as it is, for `send_response`."""
    response = _respond(scope, body, match)
    if response.streaming:
        return response
    start = {"type": "http.response.start", "status": response.status_code}
    start["headers"] = _wire_headers(response)
    return start, {"type": "http.response.body", "body": response.content}


def _wire_headers(response: HttpResponse) -> list[tuple[bytes, bytes]]:
    """`ASGIHandler.send_response`'s headers: the response's, in their case, then its
    cookies."""
    headers = [
        (
            name.encode("ascii") if isinstance(name, str) else bytes(name),
            value.encode("latin1") if isinstance(value, str) else bytes(value),
        )
        for name, value in response.items()
    ]
    for cookie in response.cookies.values():
        headers.append((b"Set-Cookie", cookie.output(header="").encode("ascii").strip()))
    return headers


def _answer_to(protocol: Any) -> Callable[[dict], Awaitable[None]]:
    async def send(message: dict) -> None:
        protocol.handle_reply(message)

    return send


@cache
def _responder() -> ASGIHandler:
    return ASGIHandler()


def _events_post(scope: dict) -> Any:
    if scope["type"] != "http" or scope.get("method") != "POST":
        return None
    path = scope["path"]
    if not path.endswith("/events"):
        return None  # every other request pays one suffix test, not a resolve
    return _routed_match(path, settings.ROOT_URLCONF)


@lru_cache(maxsize=1024)
def _routed_match(path: str, urlconf: str) -> ResolverMatch | None:
    """The view's match for an events path, or None. Kept per path: a runtime posts to
    the same few conversations over and over, and `resolve` walks every URL pattern
    (~35 µs, on the event loop, per request). The match is only read (`func`,
    `kwargs`). Keyed by the urlconf too, so a test's `ROOT_URLCONF` is honoured; no
    request here has a urlconf of its own (that is a middleware's doing)."""
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
