"""What a request or a socket shows of who sends it: its bearer token and its origin.

The edge (chatui.server.edge) checks both before a body is read and puts the token it
accepted in the scope; the API views and the ingest socket read them here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

from chatui.models import ApiToken

#: The scope key under which the edge leaves the API token it accepted.
SCOPE_TOKEN = "chatui.api_token"

Scope = dict[str, Any]


def bearer_credential(authorization: str) -> str | None:
    """The token in an `Authorization: Bearer …` header, or None."""
    scheme, _, raw = authorization.partition(" ")
    raw = raw.strip()
    return raw if scheme.lower() == "bearer" and raw else None


def edge_token(request: HttpRequest) -> ApiToken | None:
    """The token the edge accepted for this request (None if it did not come through it)."""
    return getattr(request, "scope", {}).get(SCOPE_TOKEN)


def header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    for key, value in headers:
        if key == name:
            return value
    return None


def origin_allowed(scope: Scope) -> bool:
    sent = header(scope["headers"], b"origin")
    if sent is None:
        return False
    origin = sent.decode("latin-1").strip().lower()
    return origin == own_origin(scope) or is_trusted_origin(origin)


def own_origin(scope: Scope) -> str | None:
    """`scheme://host[:port]` of the request itself, or None when its host is not allowed."""
    host = (header(scope["headers"], b"host") or b"").decode("latin-1").lower()
    domain, _port = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    return f"{'https' if is_secure(scope) else 'http'}://{host}"


def is_secure(scope: Scope) -> bool:
    """As `HttpRequest.is_secure`: the proxy's header when configured and sent, else the scheme."""
    if settings.SECURE_PROXY_SSL_HEADER:
        name, secure_value = settings.SECURE_PROXY_SSL_HEADER
        wire_name = name.removeprefix("HTTP_").replace("_", "-").lower().encode()
        value = header(scope["headers"], wire_name)
        if value is not None:
            return value.decode("latin-1").split(",", 1)[0].strip() == secure_value
    return scope.get("scheme") in ("https", "wss")


def is_trusted_origin(origin: str) -> bool:
    public = urlsplit(settings.CHATUI_PUBLIC_URL)
    if origin == f"{public.scheme}://{public.netloc}".lower():
        return True
    parsed = urlsplit(origin)
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        trusted = trusted.lower()
        if "*" not in trusted:
            if origin == trusted:
                return True
        elif trusted.startswith(f"{parsed.scheme}://"):
            pattern = urlsplit(trusted).netloc.lstrip("*")
            if is_same_domain(parsed.netloc, pattern):
                return True
    return False
