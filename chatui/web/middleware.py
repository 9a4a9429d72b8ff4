"""Content-Security-Policy on every response (SEC3)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

# No inline or eval script anywhere: htmx is configured from a <meta> tag and our
# own behaviour lives in static files. Styles are ours too.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """A `process_response` (sync and async capable), so the routes that answer beside
    the chain (chatui.server.ingest_route.finish) apply it too."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response
