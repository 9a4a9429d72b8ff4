"""Auditors' notes and share links in the admin (docs/sharing.md).

Notes: the conversation list filters "has notes" and by label; the audit page shows the
conversation's notes with the page's own partial and, for holders of chatui.annotate,
the form that adds one (an `audit.note` event through ingest: chatui.ingest.notes).
Share links: every link, who created it, when it expires and how often it was opened;
never its token (only the hash is stored); revoking is an action."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from chatui.ingest import notes, sharing
from chatui.ingest.values import EventError
from chatui.models import Note, ShareLink
from chatui.read.notes import LABEL_NAMES
from chatui.web.note_views import form_note

from .base import AuditAdmin, ReadOnlyAdmin
from .filters import ExistsFilter
from .times import timed


class HasNotesFilter(ExistsFilter):
    title = "auditors' notes"
    parameter_name = "has_notes"
    labels = ("With notes", "Without notes")

    def exists(self) -> Exists:
        return Exists(Note.objects.filter(conversation=OuterRef("pk")))


class NoteLabelFilter(admin.SimpleListFilter):
    """Conversations with a note of this label."""

    title = "note label"
    parameter_name = "note_label"

    def lookups(self, request, model_admin):
        return list(LABEL_NAMES.items())

    def queryset(self, request, queryset):
        if self.value() not in LABEL_NAMES:
            return queryset
        return queryset.filter(
            Exists(Note.objects.filter(conversation=OuterRef("pk"), label=self.value()))
        )


class NoteViewMixin:
    """The audit page's note form posts here (`<id>/notes/`)."""

    def note_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        conversation = self.get_object(request, unquote(object_id))
        if conversation is None or not self.has_view_permission(request, conversation):
            raise Http404("conversation not found")
        page = reverse("admin:chatui_conversation_change", args=[conversation.pk])
        try:
            notes.add_note(conversation, request.user, form_note(request))
        except EventError as problem:
            if problem.status == 404:
                raise Http404("conversation not found") from None
            if problem.status == 403:
                return HttpResponse(problem.message, status=403, content_type="text/plain")
            self.message_user(request, f"The note was not added: {problem.message}", messages.ERROR)
            return redirect(page + "#notes")
        self.message_user(request, "Note added.", messages.SUCCESS)
        return redirect(page + "#notes")


@admin.register(Note)
class NoteAdmin(ReadOnlyAdmin):
    """Every note, as projected from its `audit.note` event (the event is the record)."""

    list_display = (
        "at_shown",
        "author",
        "label",
        "target_kind",
        "target_id",
        "conversation",
        "seq",
    )
    list_filter = ("label", "author")
    search_fields = ("text", "author", "target_id")
    ordering = ("-at",)
    fields = (
        "at_shown",
        "author",
        "conversation",
        "seq",
        "target_kind",
        "target_id",
        "label",
        "refers_to",
        "text",
    )
    list_select_related = ("conversation",)
    at_shown = timed("at", "at")  # A2


@admin.register(ShareLink)
class ShareLinkAdmin(AuditAdmin):
    list_display = (
        "conversation",
        "created_by",
        "created_shown",
        "expires_shown",
        "revoked_shown",
        "hide_tool_io",
        "open_count",
        "last_opened_shown",
    )
    list_filter = ("hide_tool_io", ("created_by", admin.RelatedOnlyFieldListFilter))
    fields = list_display
    readonly_fields = fields
    list_select_related = ("conversation", "created_by")
    ordering = ("-created_at",)
    actions = ("revoke_links",)
    # A2 (docs/rendering.md#a2): to the second, the ISO value on hover.
    created_shown = timed("created_at", "created at")
    expires_shown = timed("expires_at", "expires at")
    revoked_shown = timed("revoked_at", "revoked at")
    last_opened_shown = timed("last_opened_at", "last opened at")

    def has_revoke_permission(self, request):
        return request.user.has_perm("chatui.change_sharelink")

    @admin.action(description="Revoke selected share links", permissions=["revoke"])
    def revoke_links(self, request, queryset):
        for link in queryset:
            sharing.revoke(link)
        self.message_user(request, "Revoked.", messages.SUCCESS)
