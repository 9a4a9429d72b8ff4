"""T3: one tool entry's secrets unmasked for a holder of chatui.view_secrets, and
the reveal recorded (SecretReveal)."""

from __future__ import annotations

from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse

from chatui.models import Message, Role, SecretReveal
from chatui.read.reveal import pretty_json, reveal_invisible, revealed_block

from .base import VIEW_SECRETS


class RevealViewMixin:
    """The conversation admin's reveal view (POST only, see get_urls)."""

    def reveal_view(self, request: HttpRequest, object_id: str, message_pk: int) -> HttpResponse:
        """One tool entry's args/result/details/error unmasked, recorded as a SecretReveal.
        POST (CSRF-checked by admin_view) so that a link or a prefetch never reveals."""
        if not request.user.has_perm(VIEW_SECRETS):
            raise PermissionDenied
        conversation = self.get_object(request, unquote(object_id))
        if conversation is None or not self.has_view_permission(request, conversation):
            raise PermissionDenied
        message = get_object_or_404(
            Message, pk=message_pk, conversation=conversation, role=Role.TOOL
        )
        SecretReveal.objects.create(
            user=request.user,
            message=message,
            conversation=conversation,
            message_key=message.message_id,
        )
        meta = message.metadata or {}
        context = {
            **self.admin_site.each_context(request),
            "title": f"Revealed: {message.tool_name}",
            "conversation": conversation,
            "message": message,
            "tool_name": reveal_invisible(message.tool_name),
            "args": pretty_json(meta["args"]) if "args" in meta else None,
            "args_summary": reveal_invisible(meta.get("args_summary") or ""),
            "result": revealed_block(message.content) if message.content else None,
            "error": revealed_block(meta["tool_error"]) if meta.get("tool_error") else None,
            "details": pretty_json(meta["details"]) if "details" in meta else None,
            "back_url": reverse("admin:chatui_conversation_change", args=[conversation.pk]),
        }
        return TemplateResponse(request, "admin/chatui/secret_reveal.html", context)
