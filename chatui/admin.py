"""The Django admin as the auditing tool (SPEC §11).

Everything here reads; nothing writes a Message, a Run or an Event except
through `chatui.ingest` (the import view) and `reproject` (the re-project
action). Conversations, messages, events and runs are read-only for everyone,
superusers included; events (and the conversations that own them) can never be
deleted from the admin.

- Conversations: owner, status, counts of messages, tool calls and errors
  (annotated, one query); filters by status, errors, tool name, owner and date;
  search over titles, owners, message text and tool names. The change view shows
  the transcript with the page's own partials (chatui/_transcript.html), the tool
  calls with their args and results as pretty JSON, the runs, and links to the
  raw events. Actions: export (messages JSON, events JSONL, OTLP JSON: one file
  for one conversation, a zip of one file per conversation for several) for
  anyone who may view; re-project for users with `chatui.change_conversation`.
  An import view (`import/`) needs `chatui.add_conversation`.
- Events, messages, runs: read-only, payload and metadata pretty-printed.
- API tokens: listed without their hashes; superusers may revoke (delete) them.
  Tokens are created with `manage.py create_api_token`.

Invisible characters are shown to auditors as visible markers (`chatui.reveal`);
the stored text is never changed.

Untrusted text is escaped everywhere: whatever is marked safe here is built by
`format_html` or `reveal_invisible`, which escapes its input.
"""

from __future__ import annotations

import copy
import io
import uuid
import zipfile
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import content_disposition_header
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from . import presenters, search, selectors, services
from .admin_approvals import HasApprovalsFilter, approval_decisions
from .exporters import EXPORT_FORMATS, export_text, masked_event
from .importers import IMPORT_FORMATS, TranscriptError, import_draft, parse_transcript
from .importers.base import max_import_bytes
from .ingest import reproject
from .models import (
    ApiToken,
    Conversation,
    Event,
    Message,
    Role,
    Run,
    SecretReveal,
    ToolStatus,
)
from .reveal import pretty_json, reveal_invisible, reveal_items, reveal_text, revealed_block
from .secrets import mask_text, mask_value
from .text import clip, collapse_newlines, human_size

admin.site.site_header = "chatui audit"
admin.site.site_title = "chatui audit"
admin.site.index_title = "Transcripts and their event logs"

#: Messages of a conversation shown in its admin page (the latest ones; the
#: window never cuts a tool batch in two). Exports hold everything.
TRANSCRIPT_LIMIT = 1000
LIST_TEXT_CHARS = 120
#: Holders may reveal one tool entry's secrets; each reveal is recorded (T3).
VIEW_SECRETS = "chatui.view_secrets"


def masked_message(message: Message) -> Message:
    """An unsaved copy of a tool message with its tool text masked (T3), as the
    page's presenter masks it; other messages are returned as they are."""
    if message.role != Role.TOOL:
        return message
    masked = copy.copy(message)
    masked.metadata = mask_value(message.metadata or {})
    masked.content = mask_text(message.content)
    return masked


ERROR_Q = Q(role=Role.TOOL, tool_status=ToolStatus.ERROR) | Q(role=Role.STATUS, status_type="error")


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


class HasErrorsFilter(admin.SimpleListFilter):
    """A failed tool call or an error status line (a failed run)."""

    title = "errors"
    parameter_name = "has_errors"

    def lookups(self, request, model_admin):
        return [("yes", "With errors"), ("no", "Without errors")]

    def queryset(self, request, queryset):
        errors = Exists(Message.objects.filter(ERROR_Q, conversation=OuterRef("pk")))
        if self.value() == "yes":
            return queryset.filter(errors)
        if self.value() == "no":
            return queryset.filter(~errors)
        return queryset


class ToolNameFilter(admin.SimpleListFilter):
    """Conversations that called a tool, by name (the 200 first names, A→Z)."""

    title = "tool name"
    parameter_name = "tool"
    limit = 200

    def lookups(self, request, model_admin):
        names = (
            Message.objects.filter(role=Role.TOOL)
            .exclude(tool_name="")
            .order_by("tool_name")
            .values_list("tool_name", flat=True)
            .distinct()[: self.limit]
        )
        return [(name, reveal_invisible(clip(name, 60))) for name in names]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.filter(
            Exists(
                Message.objects.filter(
                    conversation=OuterRef("pk"), role=Role.TOOL, tool_name=self.value()
                )
            )
        )


# -- shared pieces ----------------------------------------------------------------------


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewable with the view permission; never added, changed or deleted here."""

    actions = None
    list_per_page = 100
    show_full_result_count = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_readonly_fields(self, request, obj=None):
        return self.fields or ()


def _conversation_link(conversation: Conversation) -> SafeString:
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
        return _conversation_link(obj.conversation)


# -- conversations -------------------------------------------------------------------------

IMPORT_FORMAT_LABELS = {
    "openai": "OpenAI chat messages (JSON)",
    "anthropic": "Anthropic messages (JSON)",
    "agentspine": "AgentSpine events (JSONL)",
    "chatui": "chatui events (JSONL, as exported)",
    "legacy": "Legacy text with <tool> blocks",
}


def _message_count(condition: Q) -> Coalesce:
    """The number of a conversation's messages matching `condition`, as a subquery."""
    matching = (
        Message.objects.filter(condition, conversation=OuterRef("pk"))
        .order_by()
        .values("conversation")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(matching, output_field=IntegerField()), 0)


class ImportTranscriptForm(forms.Form):
    file = forms.FileField(help_text="The transcript file (UTF-8).")
    format = forms.ChoiceField(
        choices=[(name, IMPORT_FORMAT_LABELS.get(name, name)) for name in IMPORT_FORMATS]
    )
    owner = forms.ModelChoiceField(queryset=None, help_text="Who the conversation belongs to.")
    title = forms.CharField(
        max_length=200,
        required=False,
        help_text="Leave empty to take the title from the first user message.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        user_model = get_user_model()
        self.fields["owner"].queryset = user_model.objects.order_by(user_model.USERNAME_FIELD)

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > max_import_bytes():
            raise forms.ValidationError(
                f"The file is larger than {human_size(max_import_bytes())}."
            )
        return upload


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = (
        "title_shown",
        "owner",
        "status",
        "messages_count",
        "tool_calls_count",
        "errors_count",
        "updated_at",
    )
    list_filter = (
        "status",
        HasErrorsFilter,
        HasApprovalsFilter,
        ToolNameFilter,
        ("owner", admin.RelatedOnlyFieldListFilter),
    )
    date_hierarchy = "created_at"
    search_fields = ("title", "owner__username", "messages__content", "messages__tool_name")
    search_help_text = "Searches titles, owners, message text and tool names."
    fields = (
        "title_shown",
        "owner_shown",
        "status",
        "id",
        "created_at",
        "updated_at",
        "last_seq",
        "messages_count",
        "tool_calls_count",
        "errors_count",
        "approval_decisions",
    )
    readonly_fields = fields
    approval_decisions = approval_decisions  # SPEC §13: who decided what, and when
    actions = (
        "export_messages",
        "export_events",
        "export_otlp",
        "reproject_conversations",
    )
    list_per_page = 50

    class Media:
        css = {"all": ("chatui/admin.css",)}

    # -- permissions: read-only for everyone; the event log is the truth ----------

    def has_add_permission(self, request):
        return False  # conversations come from the API, the page or the import view

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # deleting one would delete its event log

    def has_reproject_permission(self, request):
        return request.user.has_perm("chatui.change_conversation")

    def has_import_permission(self, request):
        return request.user.has_perm("chatui.add_conversation")

    # -- list ----------------------------------------------------------------------

    def get_queryset(self, request):
        # Correlated subqueries, not a join: one query for the whole page, each count
        # computed for the rows shown only (the paginator's COUNT drops them), and
        # filters or searches on messages cannot inflate them.
        return (
            super()
            .get_queryset(request)
            .select_related("owner")
            .annotate(
                n_messages=_message_count(Q()),
                n_tool_calls=_message_count(Q(role=Role.TOOL)),
                n_errors=_message_count(ERROR_Q),
            )
        )

    def get_search_results(self, request, queryset, search_term):
        """Through the page's full-text index (SPEC §11, §15): titles and messages with
        every word of the search, or owners whose username contains it. One row per
        conversation (a subquery, no join), so the counts are not inflated."""
        return search.filter_conversations(queryset, search_term), False

    @admin.display(description="title", ordering="title")
    def title_shown(self, obj):
        return reveal_invisible(str(obj))

    @admin.display(description="owner", ordering="owner__username")
    def owner_shown(self, obj):
        # Plain text: a link to the user's admin page would only 403 for auditors.
        return reveal_invisible(obj.owner.get_username())

    @admin.display(description="messages", ordering="n_messages")
    def messages_count(self, obj):
        return obj.n_messages

    @admin.display(description="tool calls", ordering="n_tool_calls")
    def tool_calls_count(self, obj):
        return obj.n_tool_calls

    @admin.display(description="errors", ordering="n_errors")
    def errors_count(self, obj):
        if obj.n_errors:
            return format_html('<strong class="chatui-errors">{}</strong>', obj.n_errors)
        return 0

    def changelist_view(self, request, extra_context=None):
        extra = {"can_import": self.has_import_permission(request), **(extra_context or {})}
        return super().changelist_view(request, extra)

    # -- the audit page ---------------------------------------------------------------

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra = dict(extra_context or {})
        conversation = self.get_object(request, unquote(object_id))
        if conversation is not None and self.has_view_permission(request, conversation):
            extra.update(self.audit_context(request, conversation))
        return super().change_view(request, object_id, form_url, extra)

    def audit_context(self, request: HttpRequest, conversation: Conversation) -> dict[str, Any]:
        window, has_earlier = selectors.transcript_window(conversation, limit=TRANSCRIPT_LIMIT)
        items = reveal_items(presenters.present_transcript(window))
        runs = list(Run.objects.filter(conversation=conversation).order_by("started_seq"))
        scope = f"?{ConversationFilter.parameter_name}={conversation.pk}"
        user = request.user
        return {
            "subtitle": reveal_text(str(conversation)),
            "audit_title": reveal_invisible(str(conversation)),
            "audit_items": items,
            "audit_has_earlier": has_earlier,
            "audit_shown": len(window),
            "audit_total": getattr(conversation, "n_messages", len(window)),
            "audit_tool_calls": [
                self._tool_call_row(message, user) for message in window if message.role == "tool"
            ],
            "audit_runs": [
                {
                    "run_id": reveal_invisible(run.run_id),
                    "status": run.status,
                    "started_at": run.started_at,
                    "ended_at": run.ended_at,
                    "error_message": reveal_invisible(run.error_message),
                    "started_seq": run.started_seq,
                }
                for run in runs
            ],
            "audit_events_url": (
                reverse("admin:chatui_event_changelist") + scope
                if user.has_perm("chatui.view_event")
                else None
            ),
            "audit_messages_url": (
                reverse("admin:chatui_message_changelist") + scope
                if user.has_perm("chatui.view_message")
                else None
            ),
            "audit_runs_url": (
                reverse("admin:chatui_run_changelist") + scope
                if user.has_perm("chatui.view_run")
                else None
            ),
        }

    @staticmethod
    def _tool_call_row(message: Message, user) -> dict[str, Any]:
        """The audit row of one tool call, its tool text masked (T3); holders of
        chatui.view_secrets get the form that reveals it (and records that they did)."""
        reveal_url = (
            reverse("admin:chatui_conversation_reveal", args=[message.conversation_id, message.pk])
            if user.has_perm(VIEW_SECRETS)
            else None
        )
        message = masked_message(message)
        meta = message.metadata or {}
        return {
            "pk": message.pk,
            "reveal_url": reveal_url,
            "url": (
                reverse("admin:chatui_message_change", args=[message.pk])
                if user.has_perm("chatui.view_message")
                else None
            ),
            "tool_name": reveal_invisible(message.tool_name),
            "tool_call_id": reveal_invisible(message.tool_call_id),
            "parent_tool_call_id": reveal_invisible(message.parent_tool_call_id),
            "status": message.tool_status,
            "duration": presenters.duration_text(meta.get("tool_duration_ms")),
            "args_summary": (
                reveal_invisible(meta["args_summary"]) if meta.get("args_summary") else None
            ),
            "args": pretty_json(meta["args"]) if "args" in meta else None,
            "result": pretty_json(meta["tool_result"]) if "tool_result" in meta else None,
            "error": revealed_block(meta["tool_error"]) if meta.get("tool_error") else None,
            "details": pretty_json(meta["details"]) if "details" in meta else None,
        }

    # -- actions -----------------------------------------------------------------------

    def export_response(
        self, request: HttpRequest, queryset: QuerySet[Conversation], format: str
    ) -> HttpResponse:
        """One conversation: its file. Several: a zip holding one file per conversation,
        named `conversation-<id>-<suffix>`, oldest conversation first. Secrets are
        masked unless the exporting user holds chatui.view_secrets (T3)."""
        content_type, suffix = EXPORT_FORMATS[format]
        reveal = request.user.has_perm(VIEW_SECRETS)
        conversations = list(queryset.order_by("created_at"))
        if len(conversations) == 1:
            conversation = conversations[0]
            response = HttpResponse(
                export_text(conversation, format, reveal=reveal),
                content_type=f"{content_type}; charset=utf-8",
            )
            filename = f"conversation-{conversation.pk}-{suffix}"
        else:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for conversation in conversations:
                    archive.writestr(
                        f"conversation-{conversation.pk}-{suffix}",
                        export_text(conversation, format, reveal=reveal),
                    )
            response = HttpResponse(buffer.getvalue(), content_type="application/zip")
            filename = f"chatui-{len(conversations)}-conversations-{suffix}.zip"
        response["Content-Disposition"] = content_disposition_header(True, filename)
        return response

    @admin.action(description="Export selected: canonical messages (JSON)")
    def export_messages(self, request, queryset):
        return self.export_response(request, queryset, "messages")

    @admin.action(description="Export selected: raw events (JSONL)")
    def export_events(self, request, queryset):
        return self.export_response(request, queryset, "events")

    @admin.action(description="Export selected: OpenTelemetry spans (OTLP JSON)")
    def export_otlp(self, request, queryset):
        return self.export_response(request, queryset, "otlp")

    @admin.action(
        description="Re-project messages and runs from the event log", permissions=["reproject"]
    )
    def reproject_conversations(self, request, queryset):
        if not self.has_reproject_permission(request):
            raise PermissionDenied
        done = 0
        for conversation in queryset:
            reproject(conversation)
            self.log_change(
                request, conversation, "Re-projected messages and runs from the event log."
            )
            done += 1
        self.message_user(
            request,
            f"Re-projected {done} conversation{'' if done == 1 else 's'} from their event logs.",
            messages.SUCCESS,
        )

    # -- import ---------------------------------------------------------------------

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="{}_{}_import".format(*info),
            ),
            path(
                "<path:object_id>/reveal/<int:message_pk>/",
                self.admin_site.admin_view(require_POST(self.reveal_view)),
                name="{}_{}_reveal".format(*info),
            ),
            *super().get_urls(),
        ]

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

    def import_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_import_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            form = ImportTranscriptForm(request.POST, request.FILES)
            if form.is_valid():
                data = form.cleaned_data
                try:
                    # Parsed first, with no transaction open: a big file never
                    # holds the write lock. Then one transaction, so a file that
                    # fails leaves no empty conversation.
                    draft = parse_transcript(data["file"], data["format"])
                    with transaction.atomic():
                        conversation = services.create_conversation(
                            owner=data["owner"], title=data["title"]
                        )
                        result = import_draft(draft, data["format"], conversation)
                except TranscriptError as error:
                    form.add_error("file", str(error))
                else:
                    self.log_addition(
                        request, conversation, f"Imported a transcript ({data['format']})."
                    )
                    self.message_user(
                        request,
                        f"“{reveal_text(str(conversation))}”: {result.summary()}",
                        messages.SUCCESS,
                    )
                    return HttpResponseRedirect(
                        reverse("admin:chatui_conversation_change", args=[conversation.pk])
                    )
        else:
            form = ImportTranscriptForm(initial={"owner": request.user.pk})
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Import a transcript",
            "form": form,
            "has_view_permission": self.has_view_permission(request),
            "max_size": human_size(max_import_bytes()),
        }
        return TemplateResponse(request, "admin/chatui/conversation/import_form.html", context)


# -- the event log, messages and runs: read-only ---------------------------------------------


@admin.register(Event)
class EventAdmin(ConversationScopedAdmin):
    list_display = (
        "seq",
        "type",
        "conversation_shown",
        "tool_call_id_shown",
        "run_id_shown",
        "event_id_shown",
        "timestamp",
        "received_at",
    )
    list_display_links = ("seq", "type")
    list_filter = (ConversationFilter, "type")
    search_fields = ("=event_id", "=run_id", "=tool_call_id", "type")
    search_help_text = "Exact event id, run id or tool call id; or part of the type."
    ordering = ("-received_at", "-seq")
    scoped_ordering = ("seq",)
    fields = (
        "conversation_shown",
        "seq",
        "type",
        "event_id_shown",
        "run_id_shown",
        "tool_call_id_shown",
        "timestamp",
        "received_at",
        "body_hash",
        "payload_shown",
    )

    class Media:
        css = {"all": ("chatui/admin.css",)}

    @admin.display(description="tool call id")
    def tool_call_id_shown(self, obj):
        return reveal_invisible(obj.tool_call_id)

    @admin.display(description="run id")
    def run_id_shown(self, obj):
        return reveal_invisible(obj.run_id)

    @admin.display(description="event id")
    def event_id_shown(self, obj):
        return reveal_invisible(obj.event_id or "")

    @admin.display(description="payload")
    def payload_shown(self, obj):
        return pretty_json(masked_event(obj.payload))


@admin.register(Message)
class MessageAdmin(ConversationScopedAdmin):
    list_display = (
        "position",
        "role",
        "conversation_shown",
        "tool_name_shown",
        "tool_status",
        "status_type",
        "content_excerpt",
        "timestamp",
    )
    list_display_links = ("position", "role")
    list_filter = (ConversationFilter, "role", "tool_status", "status_type")
    search_fields = ("content", "tool_name", "=message_id", "=tool_call_id")
    search_help_text = "Message text or tool name; exact message or tool call id."
    ordering = ("-timestamp", "-position")
    scoped_ordering = ("position",)
    fields = (
        "conversation_shown",
        "message_id_shown",
        "role",
        "position",
        "run_id",
        "tool_call_id_shown",
        "tool_name_shown",
        "tool_status",
        "parent_tool_call_id",
        "status_type",
        "is_final",
        "updated_seq",
        "timestamp",
        "content_shown",
        "metadata_shown",
    )

    class Media:
        css = {"all": ("chatui/admin.css",)}

    @admin.display(description="message id")
    def message_id_shown(self, obj):
        return reveal_invisible(obj.message_id)

    @admin.display(description="tool call id")
    def tool_call_id_shown(self, obj):
        return reveal_invisible(obj.tool_call_id)

    @admin.display(description="tool name", ordering="tool_name")
    def tool_name_shown(self, obj):
        return reveal_invisible(obj.tool_name)

    @admin.display(description="content")
    def content_excerpt(self, obj):
        content = masked_message(obj).content
        return reveal_invisible(clip(collapse_newlines(content), LIST_TEXT_CHARS))

    @admin.display(description="content")
    def content_shown(self, obj):
        return revealed_block(masked_message(obj).content)

    @admin.display(description="metadata")
    def metadata_shown(self, obj):
        return pretty_json(masked_message(obj).metadata)


@admin.register(Run)
class RunAdmin(ConversationScopedAdmin):
    list_display = (
        "run_id_shown",
        "conversation_shown",
        "status",
        "started_at",
        "ended_at",
        "error_excerpt",
    )
    list_filter = (ConversationFilter, "status")
    search_fields = ("=run_id", "error_message")
    ordering = ("-started_at",)
    scoped_ordering = ("started_seq",)
    fields = (
        "conversation_shown",
        "run_id_shown",
        "status",
        "started_at",
        "ended_at",
        "started_seq",
        "error_shown",
    )

    class Media:
        css = {"all": ("chatui/admin.css",)}

    @admin.display(description="run id", ordering="run_id")
    def run_id_shown(self, obj):
        return reveal_invisible(obj.run_id)

    @admin.display(description="error")
    def error_excerpt(self, obj):
        return reveal_invisible(clip(obj.error_message, LIST_TEXT_CHARS))

    @admin.display(description="error message")
    def error_shown(self, obj):
        return revealed_block(obj.error_message)


# -- API tokens -------------------------------------------------------------------------------


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens without their hashes. Superusers may revoke (delete) them; new ones
    come from `manage.py create_api_token USERNAME`, which shows the raw key once."""

    list_display = ("prefix_shown", "user", "name", "created_at", "last_used_at")
    list_filter = (("user", admin.RelatedOnlyFieldListFilter),)
    search_fields = ("prefix", "name", "user__username")
    fields = ("prefix_shown", "user", "name", "created_at", "last_used_at")
    readonly_fields = fields
    list_select_related = ("user",)
    ordering = ("-created_at",)

    @admin.display(description="token", ordering="prefix")
    def prefix_shown(self, obj):
        return f"{obj.prefix}…"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser


@admin.register(SecretReveal)
class SecretRevealAdmin(ReadOnlyAdmin):
    """Who revealed which entry, when: listed, never added, changed or deleted here."""

    list_display = ("at", "user", "conversation", "message_key")
    list_filter = ("user",)
    ordering = ("-at",)
    fields = ("at", "user", "conversation", "message_key", "message")
