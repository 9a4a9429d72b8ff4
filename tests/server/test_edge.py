"""The edge (chatui/server/edge.py): what a request must show before its body is read.

Against a real daphne with small limits, over raw sockets, so each test controls exactly
which bytes are sent and when. The server's memory is read from /proc.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace

import httpx
import pytest
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth import get_user_model
from django.test import RequestFactory
from twisted.internet.testing import StringTransport
from twisted.web.http import HTTPChannel
from twisted.web.http_headers import Headers

from chatui.live.consumers import TranscriptConsumer
from chatui.models import ApiToken
from chatui.server.edge import (
    SCOPE_TOKEN,
    ClientGone,
    GuardedHTTPFactory,
    ServerCodesWebSocketProtocol,
    write_headers_in_one_piece,
)
from chatui.web import api
from tests.support.live import LiveServer

API_LIMIT = 64 * 1024
EVENT_LIMIT = 4096
FORM_LIMIT = 1024
COMPOSER_LIMIT = 3 * EVENT_LIMIT + FORM_LIMIT
IMPORT_LIMIT = 20_000 + FORM_LIMIT
#: A stream declared as endless (chunked) is cut by the test client at this many bytes:
#: a server that reads it all (today's daphne) fails the test without filling the disk.
STREAM_CAP = 256 * 1024 * 1024
#: How much the server may grow while refusing a stream (interpreter noise, buffers).
RSS_SLACK = 32 * 1024 * 1024
CHUNK = b"x" * 65536
CHUNK_FRAME = b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK)


@pytest.fixture(scope="module")
def edge_server(tmp_path_factory) -> Iterator[LiveServer]:
    server = LiveServer(
        tmp_path_factory.mktemp("edge"),
        extra_env={
            "CHATUI_MAX_REQUEST_BYTES": str(API_LIMIT),
            "CHATUI_MAX_EVENT_BYTES": str(EVENT_LIMIT),
            "CHATUI_MAX_FORM_BYTES": str(FORM_LIMIT),
            "CHATUI_IMPORT_MAX_BYTES": str(IMPORT_LIMIT - FORM_LIMIT),
            "CHATUI_REQUEST_TIMEOUT": "2",
        },
    )
    with server.serving():
        yield server


# -- a raw HTTP/1.1 client ---------------------------------------------------------------


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes
    closed: bool  # the server closed the connection after answering

    def json(self):
        return json.loads(self.body)


def connect(server: LiveServer, head: str) -> socket.socket:
    """Open a connection and send a request head (request line and headers, no blank line)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall(f"{head}\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
    return sock


def answer(sock: socket.socket) -> Answer:
    sock.setblocking(True)
    sock.settimeout(30)
    response = http.client.HTTPResponse(sock)
    response.begin()
    body = response.read()
    try:
        closed = sock.recv(1) == b""
    except ConnectionResetError:
        closed = True
    return Answer(response.status, response.headers, body, closed)


def stream_until_answered(sock: socket.socket, cap: int = STREAM_CAP) -> int:
    """Send chunked body until the server answers (or `cap` bytes); return bytes sent."""
    sock.setblocking(False)
    sent, pending = 0, b""
    while sent < cap:
        readable, writable, _ = select.select([sock], [sock], [], 30)
        if readable or not writable:
            break
        pending = pending or CHUNK_FRAME
        try:
            done = sock.send(pending)
        except (BrokenPipeError, ConnectionResetError):
            break
        pending, sent = pending[done:], sent + done
    return sent


def rss(server: LiveServer) -> int:
    with open(f"/proc/{server.process.pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def chunked_post(path: str, *headers: str) -> str:
    return "\r\n".join([f"POST {path} HTTP/1.1", "Transfer-Encoding: chunked", *headers])


# -- the API: no token, no body ----------------------------------------------------------


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-token", "Basic ZTJlOmUyZQ=="])
def test_edge_unauthenticated_endless_post_is_401_before_its_body_is_read(
    edge_server, authorization
):
    before = rss(edge_server)
    headers = [f"Authorization: {authorization}"] if authorization else []
    sock = connect(edge_server, chunked_post("/api/v1/conversations", *headers))
    sent = stream_until_answered(sock)
    got = answer(sock)
    assert got.status == 401
    assert got.json() == {"error": "missing or invalid bearer token"}
    assert got.headers["WWW-Authenticate"] == 'Bearer realm="chatui"'
    assert got.closed
    assert sent < STREAM_CAP  # answered while the client was still sending
    assert rss(edge_server) - before < RSS_SLACK


def test_edge_declared_api_body_over_the_limit_is_413_before_it_is_sent(edge_server):
    sock = connect(
        edge_server,
        "\r\n".join(
            [
                "POST /api/v1/conversations HTTP/1.1",
                f"Authorization: Bearer {edge_server.token}",
                "Content-Type: application/json",
                f"Content-Length: {2 * 1024**3}",
            ]
        ),
    )
    got = answer(sock)  # not one byte of the body sent
    assert got.status == 413
    assert got.json() == {"error": f"request body is larger than {API_LIMIT} bytes"}
    assert got.closed


def test_edge_refusal_does_not_invite_the_body_with_100_continue(edge_server):
    sock = connect(
        edge_server,
        "\r\n".join(
            [
                "POST /accounts/login/ HTTP/1.1",
                "Expect: 100-continue",
                f"Content-Length: {FORM_LIMIT + 1}",
            ]
        ),
    )
    raw = b""
    while chunk := sock.recv(65536):
        raw += chunk
    assert raw.startswith(b"HTTP/1.1 413 ")
    assert b"100 Continue" not in raw


def test_edge_chunked_api_body_is_cut_at_the_limit_with_413(edge_server):
    before = rss(edge_server)
    sock = connect(
        edge_server,
        chunked_post("/api/v1/conversations", f"Authorization: Bearer {edge_server.token}"),
    )
    sent = stream_until_answered(sock)
    got = answer(sock)
    assert got.status == 413
    assert got.json() == {"error": f"request body is larger than {API_LIMIT} bytes"}
    assert got.closed
    assert API_LIMIT < sent < STREAM_CAP
    assert rss(edge_server) - before < RSS_SLACK


def test_edge_chunked_api_body_within_the_limit_reaches_the_view(edge_server):
    body = json.dumps({"title": "chunked"}).encode()
    sock = connect(
        edge_server,
        chunked_post("/api/v1/conversations", f"Authorization: Bearer {edge_server.token}"),
    )
    sock.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    got = answer(sock)
    assert got.status == 201, got.body
    assert got.json()["title"] == "chunked"


def test_edge_token_still_opens_the_api(edge_server):
    with edge_server.api() as client:
        created = client.post("/conversations", json={"title": "through the edge"})
        listed = client.get("/conversations")
    assert created.status_code == 201
    assert "through the edge" in [c["title"] for c in listed.json()["conversations"]]


# -- slow clients -----------------------------------------------------------------------


def trickle(sock: socket.socket, piece: bytes) -> None:
    """Send `piece` every fifth of a second until the server answers or closes."""
    while not select.select([sock], [], [], 0.2)[0]:
        try:
            sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            return


def test_edge_body_that_never_completes_is_408_and_closed(edge_server):
    sock = connect(edge_server, "POST /accounts/login/ HTTP/1.1\r\nContent-Length: 1000")
    trickle(sock, b"a")  # a byte at a time: never idle, never done
    got = answer(sock)
    assert got.status == 408
    assert got.closed


def test_edge_headers_that_never_complete_are_408_and_closed(edge_server):
    sock = socket.create_connection(("127.0.0.1", edge_server.port), timeout=30)
    sock.sendall(
        f"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1:{edge_server.port}\r\n".encode()
    )
    trickle(sock, b"X-Slow: 1\r\n")
    got = answer(sock)
    assert got.status == 408
    assert got.closed


def test_edge_silent_connection_is_closed(edge_server):
    sock = socket.create_connection(("127.0.0.1", edge_server.port), timeout=30)
    sock.sendall(b"GET /accounts/lo")  # and then nothing
    assert sock.recv(1) == b""


# -- browser forms and uploads: each its own limit ---------------------------------------


def composer_path() -> str:
    return f"/c/{uuid.uuid4()}/messages"


FORM_ROUTES = [
    pytest.param("/accounts/login/", FORM_LIMIT, id="login"),
    pytest.param("/accounts/logout/", FORM_LIMIT, id="other-form"),
    pytest.param(composer_path(), COMPOSER_LIMIT, id="composer"),
    pytest.param("/admin/chatui/conversation/import/", IMPORT_LIMIT, id="admin-import"),
]


@pytest.mark.parametrize(("path", "limit"), FORM_ROUTES)
def test_edge_form_body_over_its_route_limit_is_413(edge_server, path, limit):
    sock = connect(
        edge_server,
        "\r\n".join(
            [
                f"POST {path} HTTP/1.1",
                "Content-Type: application/x-www-form-urlencoded",
                f"Content-Length: {limit + 1}",
            ]
        ),
    )
    got = answer(sock)
    assert got.status == 413
    assert got.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert f"larger than {limit} bytes" in got.body.decode()
    assert got.closed


@pytest.mark.parametrize(("path", "limit"), FORM_ROUTES)
def test_edge_form_body_at_its_route_limit_reaches_django(edge_server, path, limit):
    response = httpx.post(
        edge_server.url + path,
        content=b"a=" + b"b" * (limit - 2),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    # Django answers (no CSRF token, no session): the edge let the body through.
    assert response.status_code in {302, 403}


def test_edge_chunked_form_body_is_cut_at_the_form_limit(edge_server):
    sock = connect(edge_server, chunked_post("/accounts/login/"))
    sent = stream_until_answered(sock)
    got = answer(sock)
    assert got.status == 413
    assert FORM_LIMIT < sent < STREAM_CAP


# -- the ASGI layer: the same rules for servers that stream bodies ----------------------


@pytest.fixture
def small_limits(settings):
    settings.CHATUI_MAX_REQUEST_BYTES = 1000
    settings.CHATUI_REQUEST_TIMEOUT = 0.5


def http_scope(path: str, *headers: tuple[bytes, bytes], method: str = "POST") -> dict:
    return {
        "type": "http",
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }


async def asgi_answer(communicator: ApplicationCommunicator) -> tuple[int, bytes]:
    start = await communicator.receive_output(timeout=5)
    body = await communicator.receive_output(timeout=5)
    return start["status"], body["body"]


@pytest.fixture
def raw_token(transactional_db) -> str:
    user = get_user_model().objects.create_user("edge", password="edge-pass-1")
    return ApiToken.issue(user)[1]


@pytest.mark.asyncio
async def test_edge_middleware_refuses_unauthenticated_api_without_reading(transactional_db):
    from config.asgi import application

    scope = http_scope("/api/v1/conversations", (b"transfer-encoding", b"chunked"))
    communicator = ApplicationCommunicator(application, scope)
    status, body = await asgi_answer(communicator)  # no body message was ever sent
    assert (status, json.loads(body)) == (401, {"error": "missing or invalid bearer token"})


@pytest.mark.asyncio
async def test_edge_middleware_cuts_a_streamed_body_at_the_limit(small_limits, raw_token):
    from config.asgi import application

    auth = (b"authorization", f"Bearer {raw_token}".encode())
    scope = http_scope("/api/v1/conversations", auth, (b"transfer-encoding", b"chunked"))
    communicator = ApplicationCommunicator(application, scope)
    for _ in range(3):
        await communicator.send_input(
            {"type": "http.request", "body": b"x" * 400, "more_body": True}
        )
    status, body = await asgi_answer(communicator)
    assert (status, json.loads(body)) == (413, {"error": "request body is larger than 1000 bytes"})
    await communicator.wait(timeout=5)  # the app stopped: it was told the client left


@pytest.mark.asyncio
async def test_edge_middleware_answers_408_when_a_streamed_body_stalls(small_limits, raw_token):
    from config.asgi import application

    scope = http_scope("/accounts/login/", (b"transfer-encoding", b"chunked"))
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b"a=", "more_body": True})
    status, _ = await asgi_answer(communicator)
    assert status == 408
    await communicator.wait(timeout=5)


def test_api_view_takes_the_token_the_edge_checked(raw_token):
    token = ApiToken.objects.get()
    request = RequestFactory().get("/api/v1/conversations")  # no Authorization header
    request.scope = {SCOPE_TOKEN: token}
    response = api.conversations(request)
    assert response.status_code == 200


# -- daphne's channels write an answer's headers in one piece, byte for byte -------------


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param(
            Headers(
                {
                    b"content-type": [b"application/json"],
                    b"set-cookie": [b"a=1", b"b=2"],  # a header twice: two lines
                    b"x-folded": [b"one\r\n two"],  # sanitised as Twisted does
                    b"content-length": [b"2"],
                }
            ),
            id="Headers",
        ),
        pytest.param([(b"Content-Type", b"text/plain"), (b"X-Frame-Options", b"DENY")], id="pairs"),
    ],
)
def test_edge_headers_written_in_one_piece_are_twisteds_bytes(headers):
    def written(write_headers) -> bytes:
        channel = HTTPChannel()
        channel.makeConnection(StringTransport())
        write_headers(channel, b"HTTP/1.1", b"200", b"OK", headers)
        return channel.transport.io.getvalue()

    ours = written(write_headers_in_one_piece)
    assert ours == written(HTTPChannel.writeHeaders)
    assert ours.startswith(b"HTTP/1.1 200 OK\r\n") and ours.endswith(b"\r\n\r\n")


def test_edge_daphnes_http_channels_write_headers_in_one_piece():
    server = SimpleNamespace(create_application=lambda protocol, scope: None)
    protocol = GuardedHTTPFactory(server).buildProtocol(("127.0.0.1", 1234))
    pieces: list[object] = []
    transport = StringTransport()
    transport.writeSequence = pieces.append  # what Twisted itself would hand over
    transport.write = pieces.append
    protocol.makeConnection(transport)
    protocol._channel.writeHeaders(b"HTTP/1.1", b"200", b"OK", Headers({b"a": [b"b"]}))
    assert pieces == [b"HTTP/1.1 200 OK\r\nA: b\r\n\r\n"]


# -- a send on a socket its client closed ------------------------------------------------


def test_s21_a_send_on_a_socket_its_client_closed_is_asgis_oserror_not_a_traceback():
    """daphne let autobahn's `Disconnected` (a RuntimeError) through, which Channels logs
    as "Exception inside application" with a traceback: 166 of them in one fault run
    (docs/SCALING.md#cluster-under-fire). ASGI's error for it is an OSError."""
    protocol = ServerCodesWebSocketProtocol()
    protocol.client_addr = ["127.0.0.1", 1]
    protocol.state = protocol.STATE_CLOSED
    with pytest.raises(ClientGone) as raised:
        protocol.serverSend("<div>frame</div>")
    assert isinstance(raised.value, OSError)


@pytest.mark.asyncio
async def test_s21_a_frame_for_a_socket_its_client_closed_ends_quietly():
    """The consumer takes that OSError as the client's leaving: no exception escapes to
    Channels (which would log it), and the disconnect the server queued ends it."""

    async def closed_send(message):
        raise ClientGone("Attempt to send on a closed protocol")

    consumer = TranscriptConsumer()
    consumer.base_send = closed_send
    consumer.last_sent_seq = 3
    await consumer._send_frame(7, "<div>frame</div>")
    assert consumer.last_sent_seq == 7
