"""Conversations: owner, status, counts of messages, tool calls and errors
(annotated, one query); filters by status, errors, tool name, owner and date; search
through the full-text index. The change view is the audit page (audit.py). Actions:
export (messages JSON, events JSONL, OTLP JSON: one file for one conversation, a zip
of one file per conversation for several) for anyone who may view; re-project for
users with `chatui.change_conversation`. The import view (imports.py) needs
`chatui.add_conversation`; the reveal view (reveal.py) `chatui.view_secrets`."""

from __future__ import annotations

import io
import zipfile

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_POST

from chatui.ingest.service import reproject
from chatui.models import Conversation
from chatui.read import search
from chatui.read.exporters import EXPORT_FORMATS, export_text
from chatui.read.outcomes import row_counts
from chatui.read.reveal import reveal_invisible
from chatui.read.selectors import message_count, with_outcome_counts
from chatui.templatetags.chatui_icons import svg as icon_svg

from .approvals import HasApprovalsFilter, approval_decisions
from .audit import audit_context
from .base import VIEW_SECRETS, AuditAdmin
from .filters import HasErrorsFilter, ToolNameFilter
from .imports import ImportViewMixin
from .notes import HasNotesFilter, NoteLabelFilter, NoteViewMixin
from .reveal import RevealViewMixin
from .times import time_element


@admin.register(Conversation)
class ConversationAdmin(ImportViewMixin, RevealViewMixin, NoteViewMixin, AuditAdmin):
    list_display = (
        "title_shown",
        "owner",
        "status",
        "messages_count",
        "tool_calls_count",
        "errors_count",
        "outcomes_shown",
        "updated_shown",
    )
    list_filter = (
        "status",
        HasErrorsFilter,
        HasApprovalsFilter,
        HasNotesFilter,
        NoteLabelFilter,
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
        "created_exact",
        "updated_exact",
        "last_seq",
        "messages_count",
        "tool_calls_count",
        "errors_count",
        "outcomes_shown",
        "replay_links",
        "approval_decisions",
    )
    readonly_fields = fields
    # docs/rendering.md#approvals: who decided what, and when
    approval_decisions = approval_decisions
    actions = (
        "export_messages",
        "export_events",
        "export_otlp",
        "reproject_conversations",
    )
    list_per_page = 50

    def has_reproject_permission(self, request):
        return request.user.has_perm("chatui.change_conversation")

    # -- list ----------------------------------------------------------------------

    def get_queryset(self, request):
        # Correlated subqueries, not a join: one query for the whole page, each count
        # computed for the rows shown only (the paginator's COUNT drops them), and
        # filters or searches on messages cannot inflate them. Tool calls are the
        # conversation's own column (kept by the projection, issue 12). W4: calls and
        # failures by final outcome, as the page and the list count them.
        return with_outcome_counts(super().get_queryset(request).select_related("owner")).annotate(
            n_messages=message_count(Q())
        )

    def get_search_results(self, request, queryset, search_term):
        """Through the page's full-text index (docs/rendering.md#admin, docs/rendering.md#search):
        titles and messages with every word of the search, or owners whose username contains it. One
        row per conversation (a subquery, no join), so the counts are not inflated."""
        return search.filter_conversations(queryset, search_term), False

    @admin.display(description="title", ordering="title")
    def title_shown(self, obj):
        return reveal_invisible(str(obj))

    @admin.display(description="updated", ordering="updated_at")
    def updated_shown(self, obj):
        # A2: to the second, the ISO value on hover; short (no zone, the page's zone is
        # the site's) so the list fits 1280 px beside the filters.
        return time_element(obj.updated_at, zone=False)

    @admin.display(description="created at")
    def created_exact(self, obj):
        return time_element(obj.created_at)

    @admin.display(description="updated at")
    def updated_exact(self, obj):
        return time_element(obj.updated_at)

    @admin.display(description="owner", ordering="owner__username")
    def owner_shown(self, obj):
        # Plain text: a link to the user's admin page would only 403 for auditors.
        return reveal_invisible(obj.owner.get_username())

    @admin.display(description="messages", ordering="n_messages")
    def messages_count(self, obj):
        return obj.n_messages

    @admin.display(description="tool calls", ordering="n_tools")
    def tool_calls_count(self, obj):
        return obj.n_tools

    @admin.display(description="failed", ordering="n_failed")
    def errors_count(self, obj):
        """W4 (docs/rendering.md#w4): failed tool calls by final outcome: a failure a later
        attempt recovered is not one; denied, expired and cancelled are their own."""
        if obj.n_failed:
            return format_html('<strong class="chatui-errors">{}</strong>', obj.n_failed)
        return 0

    @admin.display(description="other outcomes")
    def outcomes_shown(self, obj):
        """W4: "1 denied · 1 expired · 1 cancelled", never folded into failed."""
        parts = [part for part in row_counts(obj).parts() if not part.endswith(" failed")]
        return " · ".join(parts) or "—"

    @admin.display(description="replay")
    def replay_links(self, obj):
        """docs/rendering.md#time-travel: the log played back, and the page as of any event
        (`?at=`)."""
        return format_html(
            '<a href="{}" data-admin-replay>{} Replay</a> · <a href="{}?at={}">As of event {}</a>',
            reverse("chatui:replay", args=[obj.pk]),
            icon_svg("play"),  # W7
            obj.get_absolute_url(),
            obj.last_seq,
            obj.last_seq,
        )

    def changelist_view(self, request, extra_context=None):
        extra = {"can_import": self.has_import_permission(request), **(extra_context or {})}
        return super().changelist_view(request, extra)

    # -- the audit page ---------------------------------------------------------------

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra = dict(extra_context or {})
        conversation = self.get_object(request, unquote(object_id))
        if conversation is not None and self.has_view_permission(request, conversation):
            extra.update(audit_context(request, conversation))
        return super().change_view(request, object_id, form_url, extra)

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
                "<path:object_id>/notes/",
                self.admin_site.admin_view(require_POST(self.note_view)),
                name="{}_{}_notes".format(*info),
            ),
            path(
                "<path:object_id>/reveal/<int:message_pk>/",
                self.admin_site.admin_view(require_POST(self.reveal_view)),
                name="{}_{}_reveal".format(*info),
            ),
            *super().get_urls(),
        ]
