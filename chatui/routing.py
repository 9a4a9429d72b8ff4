from django.urls import path, re_path

from .consumers import CLOSE_NOT_FOUND, ConversationListConsumer, TranscriptConsumer


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
