"""Import a transcript file into a new conversation (`import/`, needs
chatui.add_conversation). Parsing and ingest are chatui.importers'."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from chatui.importers import IMPORT_FORMATS, TranscriptError, import_draft, parse_transcript
from chatui.ingest import conversations as services
from chatui.ingest.dialects.files import max_import_bytes
from chatui.read.reveal import reveal_text
from chatui.text import human_size

IMPORT_FORMAT_LABELS = {
    "openai": "OpenAI chat messages (JSON)",
    "anthropic": "Anthropic messages (JSON)",
    "agentspine": "AgentSpine events (JSONL)",
    "chatui": "chatui events (JSONL, as exported)",
    "agui": "AG-UI events (JSONL, or the SSE text an agent streamed)",
    "legacy": "Legacy text with <tool> blocks",
}


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


class ImportViewMixin:
    """The conversation admin's import view."""

    def has_import_permission(self, request):
        return request.user.has_perm("chatui.add_conversation")

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
