"""The one import a project's `asgi.py` needs to serve chatui.

    from django.core.asgi import get_asgi_application
    django_asgi_app = get_asgi_application()  # first: it sets Django up
    from chatui.asgi import build_application
    application = build_application(django_asgi_app)

HTTP goes through the edge limits (bearer tokens and body limits checked as the request
arrives), the events POST's own route and the approval long polls' router, then Django;
WebSockets split between the viewers' sockets (session-authenticated, same origin only)
and the runtimes' ingest sockets (bearer tokens). See docs/embedding.md for what each
part buys and how to leave one out.
"""

from __future__ import annotations

import sys
from typing import Any

from channels.routing import ProtocolTypeRouter, URLRouter

from chatui.live.approval_clock import CLOCK
from chatui.live.handshakes import HandshakeAuthMiddlewareStack
from chatui.server.edge import EdgeMiddleware, SameOriginValidator, guard_daphne
from chatui.server.ingest_route import IngestRoute, serve_on_daphne
from chatui.server.long_poll import LongPollRouter
from chatui.server.routing import IngestSockets, ingest_websocket_urlpatterns, websocket_urlpatterns

__all__ = ["build_application", "websocket_urlpatterns"]


def build_application(django_asgi_app: Any, *, direct_events_post: bool = True) -> Any:
    """chatui's ASGI application around `django_asgi_app`.

    Under daphne, the edge rules are applied as the bytes arrive (daphne reads a whole
    body before it calls the application), and with `direct_events_post` the events POST
    is served as daphne hands it over, without the ASGI stack around it: the project's
    own ASGI middleware then never sees runtimes' event posts. Tool approvals then expire
    at their deadline while daphne serves, whether anyone reads or not (`CLOCK`); under
    another ASGI server, call `chatui.live.approval_clock.CLOCK.start()` from its event
    loop at startup (readers, run workers and `manage.py expire_approvals` still record
    expiries without it, later)."""
    guard_daphne(direct=serve_on_daphne if direct_events_post else None)
    _start_clock_under_daphne()
    return ProtocolTypeRouter(
        {
            # A waiting approval long poll holds no thread (LongPollRouter); the events
            # POST runs on a writer thread that keeps its connection (IngestRoute).
            "http": EdgeMiddleware(IngestRoute(LongPollRouter(django_asgi_app))),
            "websocket": IngestSockets(
                viewers=SameOriginValidator(
                    HandshakeAuthMiddlewareStack(URLRouter(websocket_urlpatterns))
                ),
                ingest=URLRouter(ingest_websocket_urlpatterns),  # bearer tokens
            ),
        }
    )


def _start_clock_under_daphne() -> None:
    """Start the approval clock once daphne serves (the daphne command and `runserver`
    load its server module before the application): daphne has no startup hook, so the
    start is handed to its reactor, which runs it on its event loop once it runs — never
    in a process that only imported the application (tests, `manage.py` commands)."""
    if "daphne.server" not in sys.modules:
        return
    from twisted.internet import reactor

    def start_if_serving() -> None:
        if reactor.running:
            CLOCK.start()

    reactor.callLater(0, start_if_serving)
