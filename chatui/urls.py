from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from . import api, health

api_patterns = [
    path("conversations", api.conversations, name="conversations"),
    path("conversations/<uuid:conversation_id>", api.conversation_detail, name="conversation"),
    path(
        "conversations/<uuid:conversation_id>/events",
        api.conversation_events,
        name="conversation-events",
    ),
]

# Under /api/ every answer is JSON, Django's own 400s and 404s included.
handler400 = api.bad_request
handler404 = api.page_not_found

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("api/v1/", include((api_patterns, "api"))),
    re_path(r"^api(?:/|$)", api.not_found),  # unknown API paths answer JSON too
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", include("chatui.web_urls")),
]
