"""SEC4: a socket opens only for a page of this site — same scheme, host and port.

The live tests do the WebSocket handshake by hand against a real daphne, with the
session cookie of the conversation's owner, so the only thing that differs between an
accepted and a refused handshake is the `Origin` header.
"""

from __future__ import annotations

import base64
import os
import re
import socket

import httpx
import pytest

from chatui.web.credentials import origin_allowed
from tests.support.live import PASSWORD, USERNAME, LiveServer


@pytest.fixture(scope="module")
def session_cookie(chatui_server: LiveServer) -> str:
    """Log in through the real login form."""
    with httpx.Client(base_url=chatui_server.url) as client:
        page = client.get("/accounts/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        done = client.post(
            "/accounts/login/",
            data={"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": csrf},
        )
        assert done.status_code == 302
        return client.cookies["sessionid"]


@pytest.fixture(scope="module")
def socket_path(chatui_server: LiveServer) -> str:
    return f"/ws/conversations/{chatui_server.new_conversation('origins')}/"


def handshake(server: LiveServer, path: str, cookie: str, origin: str | None, host: str) -> int:
    """The HTTP status daphne answers a WebSocket handshake with (101 = opened)."""
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: {host}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}",
        "Sec-WebSocket-Version: 13",
        f"Cookie: sessionid={cookie}",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status_line = sock.recv(4096).split(b"\r\n", 1)[0]
    return int(status_line.split()[1])


def test_sec4_same_origin_socket_opens(chatui_server, session_cookie, socket_path):
    own = f"127.0.0.1:{chatui_server.port}"
    assert handshake(chatui_server, socket_path, session_cookie, f"http://{own}", own) == 101


@pytest.mark.parametrize(
    "origin",
    [
        pytest.param("http://127.0.0.1:1", id="other-port"),
        pytest.param("http://127.0.0.1", id="default-port"),
        pytest.param("https://127.0.0.1", id="other-scheme-default-port"),
        pytest.param("https://127.0.0.1:{port}", id="other-scheme-same-port"),
        pytest.param("http://localhost:{port}", id="other-allowed-host"),
        pytest.param("null", id="opaque"),
        pytest.param(None, id="missing"),
    ],
)
def test_sec4_socket_from_another_origin_is_refused(
    chatui_server, session_cookie, socket_path, origin
):
    own = f"127.0.0.1:{chatui_server.port}"
    origin = origin and origin.format(port=chatui_server.port)
    assert handshake(chatui_server, socket_path, session_cookie, origin, own) == 403


def test_sec4_host_that_is_not_allowed_is_refused_even_when_origin_matches(
    chatui_server, session_cookie, socket_path
):
    """DNS rebinding: evil.example resolves to the server; Origin and Host agree."""
    host = f"evil.example:{chatui_server.port}"
    assert handshake(chatui_server, socket_path, session_cookie, f"http://{host}", host) == 403


# -- the rule on scopes: trusted origins and TLS proxies -----------------------------------


def ws_scope(origin: str, host: str = "chat.example.com", scheme: str = "ws", *extra) -> dict:
    headers = [(b"host", host.encode()), (b"origin", origin.encode()), *extra]
    return {"type": "websocket", "scheme": scheme, "headers": headers}


@pytest.fixture
def deployed(settings):
    settings.ALLOWED_HOSTS = ["chat.example.com"]
    settings.CHATUI_PUBLIC_URL = "https://chat.example.com/"
    settings.CSRF_TRUSTED_ORIGINS = ["https://admin.example.org", "https://*.example.net"]


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("https://chat.example.com", True),  # CHATUI_PUBLIC_URL
        ("https://admin.example.org", True),  # CSRF_TRUSTED_ORIGINS
        ("https://team.example.net", True),  # a wildcard there
        ("http://team.example.net", False),  # the wildcard's scheme is https
        ("https://admin.example.org:8443", False),
        ("https://chat.example.com.evil.example", False),
    ],
)
def test_sec4_trusted_origins_are_those_configured(deployed, origin, allowed):
    assert origin_allowed(ws_scope(origin, scheme="wss")) is allowed


def test_sec4_behind_a_tls_proxy_the_forwarded_scheme_counts(deployed, settings):
    settings.CHATUI_PUBLIC_URL = "http://127.0.0.1:8000"
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    forwarded = (b"x-forwarded-proto", b"https")
    assert origin_allowed(ws_scope("https://chat.example.com", "chat.example.com", "ws", forwarded))
    assert not origin_allowed(ws_scope("https://chat.example.com", "chat.example.com", "ws"))
    assert origin_allowed(ws_scope("http://chat.example.com", "chat.example.com", "ws"))
