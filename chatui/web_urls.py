from django.urls import path

from . import views

app_name = "chatui"

urlpatterns = [
    path("", views.conversation_list, name="conversation-list"),
    path("c/<uuid:conversation_id>/", views.conversation_page, name="conversation"),
]
