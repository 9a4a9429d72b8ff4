"""The edge: what a request must show before chatui reads its body, and who may open a socket.

HTTP (SEC5, SEC6): an API request needs a valid bearer token, and every request body has
a limit that depends on where it goes (`route_for`) and a deadline
(`CHATUI_REQUEST_TIMEOUT`). A request that breaks a rule is answered at once — 401, 413
or 408, JSON for the API — and its connection closed; the body is never buffered past
the limit, and an unauthenticated API body is not read at all.

The rules are applied twice, for a reason: daphne (Twisted) reads a request's whole body
before it calls the ASGI application, so an ASGI middleware alone would answer only
after the damage. `guard_daphne()` gives daphne a request class that applies the rules
as the bytes arrive; `EdgeMiddleware` applies them to ASGI servers that stream the body,
and is where the token, looked up once, enters the scope (`SCOPE_TOKEN`) for the API
views. Requests without a body that are not for the API cost one look at the headers.

WebSockets (SEC4): `SameOriginValidator` lets a handshake through only from this site's
own origin — scheme, host and port — or a configured trusted one.

Why it is long: the same rules in their two places, daphne's request class (with its
factory, which also writes an answer's headers in one piece) and the ASGI middleware,
kept side by side so that they cannot drift apart.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sys
import time
import types
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

from autobahn.exception import Disconnected
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol
from django.conf import settings
from django.urls import Resolver404, resolve
from twisted.internet.defer import Deferred
from twisted.web.http import HTTPChannel
from twisted.web.http_headers import Headers

from chatui.ingest.dialects.otlp import JSON as OTLP_JSON
from chatui.ingest.dialects.otlp import PROTOBUF as OTLP_PROTOBUF
from chatui.ingest.dialects.otlp import status_body
from chatui.models import ApiToken
from chatui.web.credentials import SCOPE_TOKEN, bearer_credential, header, origin_allowed
from chatui.web.middleware import CONTENT_SECURITY_POLICY
from chatui.web.tokens import cached_token, token_for_async

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

API_PREFIX = "/api/"
#: API paths served without a token: the public key that verifies checkpoints
#: (docs/auditing.md#the-signing-key).
PUBLIC_API_PATHS = frozenset({"/api/v1/keys"})
#: The OTLP receiver (docs/events.md#otlp): its refusals are a google.rpc.Status.
OTLP_PREFIX = "/api/v1/otlp/"
#: Where the edge leaves the request's `ApiToken` for `chatui.web.api.api_view`.
#: Set by `GuardedRequest`: the rules were applied as the request arrived.
SCOPE_CHECKED = "chatui.edge_checked"
#: After a refusal, how long a client still sending may go on (its bytes dropped unread)
#: before the connection is cut: closing on unread data resets the connection, and the
#: client would lose the answer before reading it.
LINGER_SECONDS = 2.0


# -- the rules -------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """What a request path may carry: a body of at most `limit` bytes; `api` needs a token."""

    limit: int
    api: bool = False


def needs_token(path: str) -> bool:
    return path.startswith(API_PREFIX) and path not in PUBLIC_API_PATHS


def route_for(path: str) -> Route:
    """The rule for a percent-decoded request path (as daphne hands it to Django)."""
    if needs_token(path):
        return Route(settings.CHATUI_MAX_REQUEST_BYTES, api=True)
    try:
        view = resolve(path).view_name
    except Resolver404:
        view = ""
    if view == "chatui:send-message":
        return Route(settings.CHATUI_MAX_COMPOSER_BYTES)
    if view == "admin:chatui_conversation_import":
        # The file plus the form's other fields and multipart framing.
        return Route(settings.CHATUI_IMPORT_MAX_BYTES + settings.CHATUI_MAX_FORM_BYTES)
    return Route(settings.CHATUI_MAX_FORM_BYTES)


@dataclass(frozen=True)
class Refusal:
    """An answer the edge gives instead of the application; it closes the connection."""

    status: int
    message: str
    api: bool
    #: For the OTLP receiver: the encoding to answer in (a google.rpc.Status), else "".
    otlp: str = ""

    def for_request(self, path: str, content_type: bytes | None) -> Refusal:
        """This refusal as the request's path answers it: OTLP-shaped on the receiver's."""
        if not path.startswith(OTLP_PREFIX):
            return self
        given = (content_type or b"").split(b";")[0].strip().lower()
        return replace(self, otlp=OTLP_PROTOBUF if given == OTLP_PROTOBUF.encode() else OTLP_JSON)

    @classmethod
    def unauthorized(cls) -> Refusal:
        return cls(401, "missing or invalid bearer token", api=True)

    @classmethod
    def too_large(cls, route: Route) -> Refusal:
        return cls(413, f"request body is larger than {route.limit} bytes", route.api)

    @classmethod
    def too_slow(cls, route: Route | None) -> Refusal:
        message = f"request not received within {settings.CHATUI_REQUEST_TIMEOUT:g} seconds"
        return cls(408, message, api=bool(route and route.api))

    def body(self) -> bytes:
        if self.otlp:
            return status_body(self.status, self.message, self.otlp)
        if self.api:
            return json.dumps({"error": self.message}).encode()
        return f"{HTTPStatus(self.status).phrase}: {self.message}.\n".encode()

    def headers(self) -> list[tuple[bytes, bytes]]:
        content_type = b"application/json" if self.api else b"text/plain; charset=utf-8"
        if self.otlp:
            content_type = self.otlp.encode()
        headers = [
            (b"Content-Type", content_type),
            (b"Content-Length", str(len(self.body())).encode()),
            (b"Connection", b"close"),
            (b"X-Content-Type-Options", b"nosniff"),
            (b"Content-Security-Policy", CONTENT_SECURITY_POLICY.encode()),
        ]
        if self.status == 401:
            headers.append((b"WWW-Authenticate", b'Bearer realm="chatui"'))
        return headers

    def as_http(self) -> bytes:
        """The whole HTTP/1.1 response, for writing straight to a socket."""
        status_line = f"HTTP/1.1 {self.status} {HTTPStatus(self.status).phrase}".encode()
        lines = [status_line, *(name + b": " + value for name, value in self.headers())]
        return b"\r\n".join(lines) + b"\r\n\r\n" + self.body()

    async def send(self, send: Send) -> None:
        start = {"type": "http.response.start", "status": self.status, "headers": self.headers()}
        await send(start)
        await send({"type": "http.response.body", "body": self.body()})


# -- ASGI: any server -------------------------------------------------------------------


class EdgeMiddleware:
    """The edge rules on an ASGI HTTP scope and its body messages.

    Under daphne `GuardedRequest` has already applied them as the bytes arrived (and put
    the token in the scope), and the whole body is in hand: nothing is left to do.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get(SCOPE_CHECKED):
            return await self.app(scope, receive, send)
        headers = scope["headers"]
        if needs_token(scope["path"]):
            authorization = header(headers, b"authorization") or b""
            credential = bearer_credential(authorization.decode("latin-1"))
            token = await token_for_async(credential) if credential else None
            if token is None:
                return await self._refuse(Refusal.unauthorized(), scope, send)
            scope = {**scope, SCOPE_TOKEN: token}
        length = header(headers, b"content-length")
        if length is None and header(headers, b"transfer-encoding") is None:
            return await self.app(scope, receive, send)  # no body
        route = route_for(scope["path"])
        if length is not None and length.isdigit() and int(length) > route.limit:
            return await self._refuse(Refusal.too_large(route), scope, send)
        limited = LimitedBody(receive, send, route)
        limited.shape = functools.partial(_shaped_for, scope)
        await self.app(scope, limited.receive, send)

    @staticmethod
    async def _refuse(refusal: Refusal, scope: Scope, send: Send) -> None:
        await _shaped_for(scope, refusal).send(send)


def _shaped_for(scope: Scope, refusal: Refusal) -> Refusal:
    return refusal.for_request(scope["path"], header(scope["headers"], b"content-type"))


class LimitedBody:
    """An ASGI `receive` that stops a body at its limit or deadline and answers for the app."""

    def __init__(self, receive: Receive, send: Send, route: Route):
        self._receive = receive
        self._send = send
        self.route = route
        self.deadline = time.monotonic() + settings.CHATUI_REQUEST_TIMEOUT
        self.received = 0
        self.done = False
        #: How the request's path answers a refusal (`Refusal.for_request`).
        self.shape: Callable[[Refusal], Refusal] = lambda refusal: refusal

    async def receive(self) -> Message:
        if self.done:
            return await self._receive()
        try:
            message = await asyncio.wait_for(self._receive(), self.deadline - time.monotonic())
        except TimeoutError:
            return await self.refuse(Refusal.too_slow(self.route))
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.route.limit:
                return await self.refuse(Refusal.too_large(self.route))
            self.done = not message.get("more_body", False)
        return message

    async def refuse(self, refusal: Refusal) -> Message:
        """Answer, then tell the app the client left, so it stops reading and sends nothing."""
        self.done = True
        await self.shape(refusal).send(self._send)
        return {"type": "http.disconnect"}


# -- daphne: the rules as the bytes arrive ----------------------------------------------


def _drop(data: bytes) -> None:
    """Reads after a refusal: counted by nobody, kept by nobody."""


class GuardedRequest(WebRequest):
    """daphne's request, refusing at the headers what chatui would refuse after the body.

    Twisted calls `gotLength` when the headers are complete, `handleContentChunk` for
    each piece of the body and `requestReceived` when it is complete; daphne's
    `process` (which calls the application) runs only then. Twisted keeps the request
    target on its channel (`_path`) until `requestReceived`, so that is where the path
    is read at header time.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # Twisted would parse every POST's Content-Type with the email package (~60 µs,
        # a twentieth of the events POST's main-thread time) to fill `request.args` with
        # the form fields, which daphne never reads: Django parses the body itself.
        self._parsePOSTFormSubmission = False
        # Made when the request line is complete: the deadline covers headers and body.
        self.begun = time.monotonic()
        self.route: Route | None = None
        self.received = 0
        self.refused = False
        self.complete = False
        self.authenticating: Deferred | None = None
        self.held: tuple[bytes, bytes, bytes] | None = None
        #: Added to the ASGI scope by `create_with_edge_scope`.
        self.edge_scope: Scope = {SCOPE_CHECKED: True}

    def gotLength(self, length: int | None) -> None:
        super().gotLength(length)
        path = unquote(self.channel._path.split(b"?", 1)[0].decode("latin-1"))
        api = needs_token(path)
        if length == 0 and not api:
            return  # no body: nothing to limit
        self.route = route_for(path)
        if length is not None and length > self.route.limit:
            self.refuse(Refusal.too_large(self.route))
        elif api:
            authorization = self.requestHeaders.getRawHeaders(b"authorization", [b""])[0]
            credential = bearer_credential(authorization.decode("latin-1"))
            if credential is None:
                self.refuse(Refusal.unauthorized())
            else:
                self.authenticate(credential)

    def authenticate(self, credential: str) -> None:
        token = cached_token(credential)
        if token is not None:  # trusted a moment ago: no lookup, no pause
            self.edge_scope[SCOPE_TOKEN] = token
            return
        # Read nothing more from this client until we know who it is.
        self.channel.transport.pauseProducing()
        lookup = asyncio.ensure_future(token_for_async(credential))
        self.authenticating = Deferred.fromFuture(lookup)
        self.authenticating.addCallbacks(self.authenticated, self.lookup_failed)

    def authenticated(self, token: ApiToken | None) -> None:
        self.authenticating = None
        if self.channel is None:
            return  # the client left while we looked
        if token is None:
            return self.refuse(Refusal.unauthorized())
        self.edge_scope[SCOPE_TOKEN] = token
        self.channel.transport.resumeProducing()
        if self.held is not None:
            super().requestReceived(*self.held)

    def lookup_failed(self, failure: Any) -> None:
        self.authenticating = None
        logger.error("API token lookup failed: %s", failure.getTraceback())
        if self.channel is not None:
            self.refuse(Refusal(503, "the token could not be checked; try again", api=True))

    def handleContentChunk(self, data: bytes) -> None:
        if self.refused:
            return
        self.received += len(data)
        if self.received > self.route.limit:
            return self.refuse(Refusal.too_large(self.route))
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        self.complete = True
        if self.refused:
            return
        if self.authenticating is not None:
            self.held = (command, path, version)  # handed on once the token is known
            return
        super().requestReceived(command, path, version)

    def check_timeouts(self) -> None:
        """daphne calls this every two seconds for every open request."""
        waiting = not (self.complete or self.refused) and self.channel is not None
        if waiting and time.monotonic() - self.begun > settings.CHATUI_REQUEST_TIMEOUT:
            self.refuse(Refusal.too_slow(self.route))
        super().check_timeouts()

    def refuse(self, refusal: Refusal) -> None:
        """Answer now, drop whatever the client still sends, and close."""
        self.refused = True
        channel = self.channel
        target = self.held[1] if self.held else channel._path
        path = unquote(target.split(b"?", 1)[0].decode("latin-1"))
        content_type = self.requestHeaders.getRawHeaders(b"content-type", [None])[0]
        refusal = refusal.for_request(path, content_type)
        # Twisted answers "Expect: 100-continue" right after `gotLength`: not after a refusal.
        self.requestHeaders.removeHeader(b"expect")
        transport = channel.transport
        response = refusal.as_http()
        transport.write(response)
        self.log_refusal(refusal, len(response))
        transport.loseWriteConnection()
        # Twisted's HTTPChannel silences a connection the same way once it is done with it.
        channel.dataReceived = _drop
        transport.resumeProducing()
        channel.callLater(LINGER_SECONDS, transport.abortConnection)

    def log_refusal(self, refusal: Refusal, size: int) -> None:
        """A line in daphne's access log, as for any answered request."""
        # The channel holds the request line until the body is complete; then `held` does.
        method, path = self.held[:2] if self.held else (self.channel._command, self.channel._path)
        peer = self.client
        details = {
            "path": path.decode("latin-1"),
            "status": refusal.status,
            "method": method.decode("latin-1"),
            "client": f"{peer.host}:{peer.port}" if hasattr(peer, "port") else None,
            "time_taken": time.monotonic() - self.begun,
            "size": size,
        }
        self.server.log_action("http", "complete", details)


#: `serve(server, protocol, scope)`: a request daphne would hand to the application, served
#: in its place (returning the input queue daphne puts the body in) or None to leave it.
Direct = Callable[[Any, Any, Scope], Any]


def create_with_edge_scope(
    server: Any, create: Callable[..., Any], direct: Direct | None, protocol: Any, scope: Scope
) -> Any:
    """daphne builds the scope inside its request; this is where the edge's findings join
    it, and where a route served beside the application (`guard_daphne(direct=…)`) takes
    its requests."""
    scope.update(getattr(protocol, "edge_scope", {}))
    if direct is not None:
        queue = direct(server, protocol, scope)
        if queue is not None:
            return queue
    return create(protocol, scope)


class GuardedHTTPFactory(HTTPFactory):
    #: Set by `guard_daphne`.
    direct: Direct | None = None

    def __init__(self, server: Any):
        super().__init__(server)
        # Twisted's idle timeout: a connection that sends nothing is closed after as long
        # as a request may take (GuardedRequest's deadline starts at the request line).
        self.timeOut = settings.CHATUI_REQUEST_TIMEOUT
        server.create_application = functools.partial(
            create_with_edge_scope, server, server.create_application, self.direct
        )

    def buildProtocol(self, addr: Any) -> Any:
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = GuardedRequest
        channel = getattr(protocol, "_channel", None)  # Twisted's HTTPChannel inside
        if isinstance(channel, HTTPChannel):
            channel.writeHeaders = types.MethodType(write_headers_in_one_piece, channel)
        return protocol

    def log(self, request: Any) -> None:
        """Twisted's own access-log line, besides daphne's (`Server.log_action`, which
        stays). At daphne's default verbosity Twisted's log goes to an observer that
        drops it: not formatted for nothing, per request, on the event loop."""
        if self.server.verbosity > 1 or self.logPath:
            super().log(request)


def write_headers_in_one_piece(
    channel: HTTPChannel, version: bytes, code: bytes, reason: bytes, headers: Any
) -> None:
    """`HTTPChannel.writeHeaders`, byte for byte, handing the transport one piece
    instead of a sequence of ~45 (a status line, four pieces a header): its
    `writeSequence` checks and counts each piece in Python, on the event loop, for
    every answer (~a quarter of daphne's own answer-writing time, by cProfile)."""
    if not isinstance(headers, Headers):  # as Twisted: quoted and sanitised first
        sanitized = Headers()
        for name, value in headers:
            sanitized.addRawHeader(name, value)
        headers = sanitized
    pieces = [version, b" ", code, b" ", reason, b"\r\n"]
    for name, values in headers.getAllRawHeaders():
        for value in values:
            pieces.extend((name, b": ", value, b"\r\n"))
    pieces.append(b"\r\n")
    channel.transport.write(b"".join(pieces))


def guard_daphne(direct: Direct | None = None) -> None:
    """Make a daphne server in this process build `GuardedRequest`s, and hand the scope
    of each request that passed them to `direct` before the application
    (`chatui.server.ingest_route.serve_on_daphne`).

    daphne has no setting for its request class; its `Server.run` builds the factory by
    this module-level name, so replacing the name is the hook. Only when daphne's server
    is already loaded (the daphne command and `runserver` load it before the app):
    importing it installs Twisted's reactor, which other servers do not want.
    """
    server_module = sys.modules.get("daphne.server")
    if server_module is not None:
        GuardedHTTPFactory.direct = staticmethod(direct) if direct is not None else None
        server_module.HTTPFactory = GuardedHTTPFactory
        server_module.WebSocketFactory = ServerCodesWebSocketFactory


#: Close codes RFC 6455 gives a server for "come back": internal error, service restart,
#: try again later. The htmx ws extension reconnects on these (and on 1006).
SERVER_CLOSE_CODES = frozenset({1011, 1012, 1013})


class ClientGone(ConnectionResetError):
    """A send on a socket its client has already closed.

    ASGI asks a server to raise an `OSError` subclass for a send on a closed connection,
    so an application can tell "the client left" from a bug; daphne lets autobahn's
    `Disconnected` (a RuntimeError) through instead, and Channels then logs it as
    "Exception inside application" with a traceback — hundreds for one reconnect herd
    (docs/SCALING.md#cluster-under-fire)."""


class ServerCodesWebSocketProtocol(WebSocketProtocol):
    """daphne's WebSocket protocol, letting the application close with 1011–1013, and
    answering a send on a closed socket as ASGI says (`ClientGone`).

    Autobahn's `sendClose` accepts only 1000 and 3000–4999 from an application, so a
    consumer could not say "try again later" (1013) when the channel layer is down:
    the page would get a code it does not reconnect on (chatui.live.consumers)."""

    def serverSend(self, content: str | bytes, binary: bool = False) -> None:
        try:
            super().serverSend(content, binary)
        except Disconnected as gone:
            raise ClientGone(str(gone)) from gone

    def serverClose(self, code: int | None = None) -> None:
        if code in SERVER_CLOSE_CODES:
            self.sendCloseFrame(code=code)
        else:
            super().serverClose(code=code)


class ServerCodesWebSocketFactory(WebSocketFactory):
    protocol = ServerCodesWebSocketProtocol


# -- WebSockets: same origin only --------------------------------------------------------


class SameOriginValidator:
    """Open a socket only for a page of this site (SEC4).

    The browser's `Origin` must equal the request's own origin — the scheme (honouring
    `SECURE_PROXY_SSL_HEADER`), the `Host` header (an allowed host) and its port, as
    Django's CSRF check compares them — or a trusted origin: `CSRF_TRUSTED_ORIGINS`
    (wildcards as there) and `CHATUI_PUBLIC_URL`. A handshake without `Origin` is refused,
    as Channels' own validator does: browsers always send it, and a client that is not a
    browser has no session cookie to ride on. Refused handshakes get HTTP 403.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if origin_allowed(scope):
            return await self.app(scope, receive, send)
        return await refuse_handshake(scope, receive, send)


async def refuse_handshake(scope: Scope, receive: Receive, send: Send) -> None:
    """HTTP 403 for the handshake, as Channels' WebsocketDenier answers, without what
    that consumer also starts: a channel-layer receive, on Redis a blocking read per
    refused socket (and one that could swallow its cancellation:
    chatui.live.consumers.ending_when_cancelled)."""
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.close"})
