from django.urls import path

from . import views

app_name = "chatui"

urlpatterns = [
    path("", views.conversation_list, name="conversation-list"),
    path("new/", views.new_conversation, name="new-conversation"),
    path("showcase", views.showcase, name="showcase"),
    path("c/<uuid:conversation_id>/", views.conversation_page, name="conversation"),
    path("c/<uuid:conversation_id>/messages", views.send_message, name="send-message"),
    path("c/<uuid:conversation_id>/transcript", views.transcript_fragment, name="transcript"),
    path("c/<uuid:conversation_id>/earlier", views.earlier_messages, name="earlier"),
    path("c/<uuid:conversation_id>/stop", views.stop_run, name="stop-run"),
]
