from django.urls import path

from .consumers import TranscriptConsumer

websocket_urlpatterns = [
    path("ws/conversations/<uuid:conversation_id>/", TranscriptConsumer.as_asgi()),
]
