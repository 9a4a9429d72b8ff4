"""What every chatui admin page shares: the audit stylesheet and read-only
permissions (AuditAdmin), the conversation scope of the event, message and run
lists, and the masking of tool text (T3)."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.db.models import Q
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from chatui.models import Conversation, Message, Role
from chatui.read.reveal import reveal_invisible
from chatui.secrets import MASKED_ROLES, masked_fields

LIST_TEXT_CHARS = 120
#: Holders may reveal one tool entry's secrets; each reveal is recorded (T3).
VIEW_SECRETS = "chatui.view_secrets"


def masked_message(message: Message) -> Message:
    """An unsaved copy of a tool message or status line with its text masked (T3), as
    the page's presenter masks it; other messages are returned as they are."""
    if message.role not in MASKED_ROLES:
        return message
    masked = copy.copy(message)
    masked.content, masked.metadata = masked_fields(message.role, message.content, message.metadata)
    return masked


#: A run that failed by itself (S2). Failed tool calls are counted by their final
#: outcome (W4), from the conversation's `failed_tool_count`.
ERROR_STATUS_Q = Q(role=Role.STATUS, status_type="error")


def _uuid_or_none(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


class ConversationFilter(admin.SimpleListFilter):
    """`?conversation=<id>`: one conversation's events, messages or runs (the
    conversation page links here). Shown only while it is in use."""

    title = "conversation"
    parameter_name = "conversation"

    def lookups(self, request, model_admin):
        value = self.value()
        if not value:
            return []
        key = _uuid_or_none(value)
        conversation = Conversation.objects.filter(pk=key).first() if key else None
        label = reveal_invisible(str(conversation)) if conversation else "unknown conversation"
        return [(value, label)]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        key = _uuid_or_none(value)
        if key is None:
            raise IncorrectLookupParameters(f"not a conversation id: {value!r}")
        return queryset.filter(conversation_id=key)


class AuditAdmin(admin.ModelAdmin):
    """Every chatui admin page: the audit stylesheet, and read-only for everyone,
    superusers included (the event log is the truth; only ingest writes)."""

    class Media:
        css = {"all": ("chatui/admin.css",)}

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(AuditAdmin):
    """Viewable with the view permission; never added, changed or deleted here."""

    actions = None
    list_per_page = 100
    show_full_result_count = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields or ()


def revealed(attribute: str, description: str, **options: Any) -> Callable[..., SafeString]:
    """An admin column or field showing `obj.<attribute>` with its invisible characters
    made visible (docs/rendering.md#admin): `run_id_shown = revealed("run_id", "run id")`."""

    @admin.display(description=description, **options)
    def shown(model_admin: admin.ModelAdmin, obj: Any) -> SafeString:
        return reveal_invisible(getattr(obj, attribute))

    return shown


def conversation_link(conversation: Conversation) -> SafeString:
    url = reverse("admin:chatui_conversation_change", args=[conversation.pk])
    return format_html('<a href="{}">{}</a>', url, reveal_invisible(str(conversation)))


class ConversationScopedAdmin(ReadOnlyAdmin):
    """Events, messages and runs: one conversation at a time, in its own order."""

    list_select_related = ("conversation",)
    scoped_ordering: tuple[str, ...] = ()

    def get_ordering(self, request):
        if request.GET.get(ConversationFilter.parameter_name):
            return self.scoped_ordering
        return super().get_ordering(request)

    @admin.display(description="conversation", ordering="conversation")
    def conversation_shown(self, obj):
        return conversation_link(obj.conversation)
