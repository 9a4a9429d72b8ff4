"""API tokens, listed without their hashes (superusers may revoke them), and the
record of who revealed which secrets."""

from __future__ import annotations

from django.contrib import admin

from chatui.models import ApiToken, SecretReveal

from .base import AuditAdmin, ReadOnlyAdmin
from .times import timed


@admin.register(ApiToken)
class ApiTokenAdmin(AuditAdmin):
    """Tokens without their hashes. Superusers may revoke (delete) them; new ones
    come from `manage.py create_api_token USERNAME`, which shows the raw key once."""

    list_display = ("prefix_shown", "user", "name", "created_shown", "last_used_shown")
    list_filter = (("user", admin.RelatedOnlyFieldListFilter),)
    search_fields = ("prefix", "name", "user__username")
    fields = ("prefix_shown", "user", "name", "created_shown", "last_used_shown")
    readonly_fields = fields
    list_select_related = ("user",)
    ordering = ("-created_at",)
    created_shown = timed("created_at", "created at")  # A2
    last_used_shown = timed("last_used_at", "last used at")

    @admin.display(description="token", ordering="prefix")
    def prefix_shown(self, obj):
        return f"{obj.prefix}…"

    def has_delete_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser


@admin.register(SecretReveal)
class SecretRevealAdmin(ReadOnlyAdmin):
    """Who revealed which entry, when: listed, never added, changed or deleted here."""

    list_display = ("at_shown", "user", "conversation", "message_key")
    list_filter = ("user",)
    ordering = ("-at",)
    fields = ("at_shown", "user", "conversation", "message_key", "message")
    at_shown = timed("at", "at")  # A2
