from django.urls import path, re_path

from chatui.live.consumers import CLOSE_NOT_FOUND, ConversationListConsumer, TranscriptConsumer
from chatui.web.ingest_socket import IngestConsumer

INGEST_PREFIX = "/ws/ingest/"


async def unknown_path(scope, receive, send) -> None:
    """Any other socket path (a conversation id that is not a UUID, a typo): accepted,
    then closed with 4404 like an unknown conversation, instead of the router's
    "No route found" error. Accept first: browsers only see codes after the handshake."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.close", "code": CLOSE_NOT_FOUND})


websocket_urlpatterns = [
    path("ws/rows/", ConversationListConsumer.as_asgi()),
    path("ws/conversations/<uuid:conversation_id>/", TranscriptConsumer.as_asgi()),
    re_path(r"", unknown_path),
]

# docs/events.md#streaming-channel: the runtimes' channel. Bearer token, no session, so not behind
# the viewer sockets' Origin check and session middleware (see `IngestSockets`).
ingest_websocket_urlpatterns = [
    path("ws/ingest/<uuid:conversation_id>/", IngestConsumer.as_asgi()),
    re_path(r"", unknown_path),
]


class IngestSockets:
    """Send sockets under /ws/ingest/ to the ingest channel, all others to `viewers`.

    The viewer sockets ride on the session cookie, hence their same-origin check; the
    ingest channel authenticates by the bearer token in a header, which a page of
    another site cannot send, and checks an Origin only when one is sent."""

    def __init__(self, viewers, ingest) -> None:
        self.viewers = viewers
        self.ingest = ingest

    async def __call__(self, scope, receive, send) -> None:
        app = self.ingest if scope["path"].startswith(INGEST_PREFIX) else self.viewers
        return await app(scope, receive, send)
