"""Auditors' notes from the conversation page (docs/sharing.md#notes) and the API's
`POST /api/v1/conversations/{id}/notes`. Both call chatui.ingest.notes.add_note, which
writes the `audit.note` event through ingest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from chatui.ingest import notes
from chatui.ingest.values import EventError
from chatui.models import Conversation, Note
from chatui.read import pages, selectors
from chatui.read.exporters import note_to_dict
from chatui.read.notes import LABEL_NAMES, present_notes

from .api import api_view, error, read_json


def note_context(
    request: HttpRequest,
    conversation: Conversation,
    form_url: str,
    shown: Callable[[str], str] = str,
) -> dict:
    """What chatui/_notes.html needs: the notes (if the reader may see them) and, for
    an annotator, the form's choices (their labels through `shown`)."""
    context: dict[str, Any] = {"notes_shown": notes.notes_shown_to(request.user, conversation)}
    if context["notes_shown"]:
        context["notes"] = present_notes(conversation)
    if notes.can_annotate(request.user, conversation):
        context["note_form_url"] = form_url
        context["note_targets"] = notes.note_targets(conversation, shown=shown)
        context["note_labels"] = list(LABEL_NAMES.items())
    return context


def form_note(request: HttpRequest) -> dict[str, Any]:
    """A note form's fields as `add_note` takes them (EventError naming a bad one)."""
    body: dict[str, Any] = {
        "target": notes.target_from_form(request.POST.get("target", "")),
        "text": request.POST.get("text", ""),
        "label": request.POST.get("label") or None,
    }
    refers_to = request.POST.get("refers_to", "").strip()
    if refers_to:
        if not (refers_to.isascii() and refers_to.isdigit()):
            raise EventError("'refers_to' must be a note's seq (digits)", field="refers_to")
        body["refers_to"] = int(refers_to)
    return body


@login_required
@require_POST
def add_note_from_page(request: HttpRequest, conversation_id) -> HttpResponse:
    conversation = pages.viewable_or_404(request.user, conversation_id)
    try:
        notes.add_note(conversation, request.user, form_note(request))
    except EventError as problem:
        if problem.status == 404:
            raise Http404("conversation not found") from None
        if problem.status == 403:
            return HttpResponse(problem.message, status=403, content_type="text/plain")
        flash.error(request, f"The note was not added: {problem.message}")
    return redirect(conversation.get_absolute_url() + "#notes")


@api_view("GET", "POST")
def notes_endpoint(request: HttpRequest, conversation_id) -> JsonResponse:
    conversation = selectors.conversation_for_viewer(request.user, conversation_id)
    if conversation is None:
        return error("conversation not found", 404)
    if request.method == "GET":
        if not notes.notes_shown_to(request.user, conversation):
            return JsonResponse({"notes": []})
        rows = Note.objects.filter(conversation=conversation).order_by("seq")
        return JsonResponse({"notes": [note_to_dict(note) for note in rows]})
    if not request.user.has_perm(notes.ANNOTATE):  # before reading the body
        return error("adding a note needs the chatui.annotate permission", 403)
    note = notes.add_note(conversation, request.user, read_json(request))
    return JsonResponse(note_to_dict(note), status=201)
