"""ASGI: `POST /api/v1/conversations/{id}/events` straight to the API view, on the
writer thread (docs/PERFORMANCE.md#p2: the single-event request is the product's hot path).

Django drives a sync view from a thread of its own per request: a new thread, a new
database connection opened and closed (CONN_MAX_AGE=0 on SQLite, the pool's checkout
on PostgreSQL), and the whole middleware chain, for a request whose answer is JSON and
whose bearer token the edge (chatui.server.edge) has already checked and put in the scope.
Routed here instead, the *same* view (`api.conversation_events`: validation, `ingest`,
the JSON answer) runs on the writer threads (chatui.ingest.writer_threads), which keep
their connections, and the answer gets the headers the middleware would have given
it (`finish`). The view knows nothing of the route: through Django (the test client, another server
without this router) it answers the same.

Under daphne the route does not even wait for the ASGI application: `serve_on_daphne`
takes the request from daphne as daphne is about to create the application for it
(chatui.server.edge.guard_daphne), and hands the answer straight back to daphne's request.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import functools
import io
from collections.abc import Awaitable, Callable
from functools import cache, cached_property, lru_cache
from typing import Any

from django.conf import settings
from django.core.handlers.asgi import ASGIHandler, ASGIRequest
from django.core.handlers.exception import response_for_exception
from django.core.signals import setting_changed
from django.db import connection
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import Resolver404, ResolverMatch, resolve
from django.utils.http import parse_header_parameters
from django.utils.log import log_response

from chatui.ingest.writer_threads import hand_to_writer, on_writer
from chatui.web.middleware import ContentSecurityPolicyMiddleware

from .edge import SCOPE_CHECKED

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


def insecure_redirect(request: HttpRequest) -> HttpResponse | None:
    """What the chain's SecurityMiddleware answers before any view: plain http redirected
    to https when SECURE_SSL_REDIRECT is on (CHATUI_HTTPS=1), else None. The routes
    served beside the chain ask it too, so the rule holds on every path (a request to
    them over http used to be served, and its events stored). A Host it refuses is
    answered as Django answers it (400)."""
    try:
        return _header_middleware()[0].process_request(request)
    except Exception as problem:
        return response_for_exception(request, problem)


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
    request = _request_for(scope, body)
    response = insecure_redirect(request) or _run_view(match.func, request, match.kwargs)
    return finish(request, response)


def _request_for(scope: dict, body: bytes) -> ASGIRequest:
    if settings.FORCE_SCRIPT_NAME or scope.get("root_path"):
        return ASGIRequest(scope, io.BytesIO(body))  # a script prefix: Django's own rules
    return RoutedRequest(scope, body)


class RoutedRequest(ASGIRequest):
    """Django's ASGI request, with what the view reads made at once — method, path,
    content type, the body, the scope (the edge's token) and the declared length
    (`declared_length`, for `api.read_json`) — and `META` (every header decoded, a
    third of the request's making) only when something asks for it: an error's log, a
    500 page. Only without a script prefix (`_request_for`), so that path and
    `path_info` are the scope's path, as there."""

    def __init__(self, scope: dict, body: bytes) -> None:  # not ASGIRequest's: no META
        self.scope = scope
        self._post_parse_error = False
        self._read_started = False
        self.resolver_match = None
        self.path = self.path_info = scope["path"]
        self.script_name = ""
        self.method = scope["method"].upper()
        self._body = body  # what `body` returns (Django reads the stream into it)
        self._stream = io.BytesIO(body)
        self.declared_length = _header(scope, b"content-length")
        # `_set_content_type_params`, but setting the encoding beneath its property, whose
        # setter would make GET (and with it META) only to drop it again.
        content_type = _header(scope, b"content-type") or ""
        self.content_type, self.content_params = parse_header_parameters(content_type)
        charset = self.content_params.get("charset")
        if charset is not None:
            with contextlib.suppress(LookupError):
                codecs.lookup(charset)
                self._encoding = charset

    @cached_property
    def META(self) -> dict[str, Any]:
        return ASGIRequest(self.scope, self._stream).META

    @property
    def scheme(self) -> str:
        """Django's, with the proxy's header (SECURE_PROXY_SSL_HEADER) read from the scope
        as META would hold it: behind an HTTPS proxy HSTS asks `is_secure` of every
        answer (`_finished_wire_headers`), which would otherwise make META each time."""
        proxy = settings.SECURE_PROXY_SSL_HEADER
        if not proxy or "META" in self.__dict__ or not _is_header_key(proxy):
            return super().scheme  # and its complaint about a malformed setting
        key, secure_value = proxy
        wire_name = key.removeprefix("HTTP_").replace("_", "-").lower().encode("latin1")
        value = _header(self.scope, wire_name)
        if value is None:
            return self._get_scheme()
        return "https" if value.split(",", 1)[0].strip() == secure_value else "http"


def _is_header_key(proxy: Any) -> bool:
    """A (META key of a header, value) pair: ASGIRequest makes such keys of headers."""
    return isinstance(proxy, tuple | list) and len(proxy) == 2 and proxy[0].startswith("HTTP_")


def _header(scope: dict, name: bytes) -> str | None:
    """A header as ASGIRequest puts it in META: repeated ones joined by commas."""
    values = [value.decode("latin1") for key, value in scope["headers"] if key == name]
    return ",".join(values) if values else None


# -- under daphne: the same route, without the ASGI plumbing around it -------------------


def serve_on_daphne(server: Any, protocol: Any, scope: dict) -> Any | None:
    """daphne's `create_application` for the events POST (chatui.server.edge hands every
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
        return None  # only behind the edge's checks (chatui.server.edge.GuardedRequest)
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
    request = _request_for(scope, body)
    response = insecure_redirect(request) or _run_view(match.func, request, match.kwargs)
    return on_the_wire(request, response)


def on_the_wire(
    request: HttpRequest, response: HttpResponseBase
) -> tuple[dict, dict] | HttpResponseBase:
    """`finish(request, response)` as `send_response`'s two messages (a streaming one
    finished, as it is). A plain answer's headers come from `_finished_wire_headers`:
    the same as the long way, without running the middleware each time."""
    # Not a plain JSON answer (a redirect's Location differs per path): the long way.
    if response.streaming or response.cookies or response.has_header("Location"):
        response = finish(request, response)
        return response if response.streaming else _wire_answer(response, _wire_headers(response))
    headers = _finished_wire_headers(request, response)
    if headers is None:
        return _wire_answer(response, _wire_headers(finish(request, response)))
    content = response.content
    headers = [*headers, (b"Content-Length", str(len(content)).encode("latin1"))]  # as `finish`
    start = {"type": "http.response.start", "status": response.status_code, "headers": headers}
    return start, {"type": "http.response.body", "body": content}


def _wire_answer(response: HttpResponse, headers: list[tuple[bytes, bytes]]) -> tuple[dict, dict]:
    start = {"type": "http.response.start", "status": response.status_code, "headers": headers}
    return start, {"type": "http.response.body", "body": response.content}


#: What the header middleware read of an answer and its request, with the answer's wire
#: headers once they (and `finish`) had done their part: see `_finished_wire_headers`.
_finished: dict[tuple, list[tuple[bytes, bytes]]] = {}
_FINISHED_KEPT = 256  # a bound, not a size: an API answers with a handful of header sets


def _finished_wire_headers(request: HttpRequest, response: HttpResponse) -> list | None:
    """`_wire_headers(finish(request, response))` without its Content-Length, worked out
    once per kind of answer instead of per answer: the three middleware and `finish`
    add the same headers to the same headers (a JSON answer's Content-Type, maybe Allow
    or WWW-Authenticate), whatever the body or status. What they read besides is in the
    key: the exemption from X-Frame-Options, and whether the request is secure when
    HSTS is on. Settings they read are forgotten when one changes (`_settings_changed`).
    None (work it out the long way) for an answer that already has a Content-Length."""
    if "Content-Length" in response:
        return None
    security = _header_middleware()[0]
    key = (
        tuple(response.items()),
        getattr(response, "xframe_options_exempt", False),
        bool(security.sts_seconds) and request.is_secure(),
    )
    headers = _finished.get(key)
    if headers is None:
        copy = HttpResponse()
        del copy["Content-Type"]  # the answer's headers, in the answer's order
        for name, value in response.items():
            copy[name] = value
        if key[1]:
            copy.xframe_options_exempt = True
        headers = _wire_headers(finish(request, copy))[:-1]  # its Content-Length: "0"
        if len(_finished) >= _FINISHED_KEPT:
            _finished.clear()
        _finished[key] = headers
    return headers


@receiver(setting_changed, dispatch_uid="chatui.server.ingest_route.settings")
def _settings_changed(**kwargs: Any) -> None:
    """The middleware read settings (X_FRAME_OPTIONS, SECURE_*): made and asked again."""
    _header_middleware.cache_clear()
    _finished.clear()


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
