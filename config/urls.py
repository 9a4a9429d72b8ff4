"""The project's URLs: login/logout, the admin, and the chatui app at the root."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from chatui.web import api

# Under /api/ every answer is JSON, Django's own 400s and 404s included.
handler400 = api.bad_request
handler404 = api.page_not_found

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", include("chatui.urls")),
]
