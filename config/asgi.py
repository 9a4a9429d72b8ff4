"""ASGI entry point: HTTP through Django, WebSockets through Channels."""

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from chatui.approval_clock import start_under_daphne  # noqa: E402
from chatui.approval_views import LongPollRouter  # noqa: E402
from chatui.edge import EdgeMiddleware, SameOriginValidator, guard_daphne  # noqa: E402
from chatui.ingest_route import IngestRoute, serve_on_daphne  # noqa: E402
from chatui.routing import (  # noqa: E402
    IngestSockets,
    ingest_websocket_urlpatterns,
    websocket_urlpatterns,
)

# Under daphne, the edge rules must run as the request arrives: daphne reads the whole
# body before it calls the application (chatui.edge); and the events POST, which
# IngestRoute would take first, is served without the ASGI plumbing (SPEC §8 P2).
guard_daphne(direct=serve_on_daphne)
# SPEC §13: tool approvals expire at their deadline while the server runs, read or not.
start_under_daphne()

application = ProtocolTypeRouter(
    {
        # SPEC §13: a waiting approval long poll holds no thread (LongPollRouter); §8 P2:
        # the events POST runs on a writer thread that keeps its connection (IngestRoute).
        "http": EdgeMiddleware(IngestRoute(LongPollRouter(django_asgi_app))),
        "websocket": IngestSockets(
            viewers=SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
            ingest=URLRouter(ingest_websocket_urlpatterns),  # SPEC §2.2: bearer tokens
        ),
    }
)

# Everything imported so far lives as long as the process: freeze it out of the
# garbage collector's scans, and collect less often. Full collections otherwise
# pause the event loop for ~80 ms under load (bench/p1, 100 viewers).
gc.collect()
gc.freeze()
gc.set_threshold(50_000, 20, 100)
