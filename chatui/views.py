"""Server-rendered pages. One template serves the page and its fragments."""

from __future__ import annotations

import uuid

from asgiref.sync import async_to_sync
from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from . import frames, selectors, services
from .events import EventError
from .ingest import ingest
from .models import Conversation

SEARCH_LIMIT = 100


@login_required
@require_GET
def conversation_list(request: HttpRequest) -> HttpResponse:
    conversations = selectors.conversations_for(request.user)
    query = request.GET.get("q", "").strip()
    if query:
        conversations = conversations.filter(
            Q(title__icontains=query)
            | Q(messages__content__icontains=query)
            | Q(messages__tool_name__icontains=query)
        ).distinct()
    return render(
        request,
        "chatui/conversation_list.html",
        {"conversations": conversations[:SEARCH_LIMIT], "query": query},
    )


@login_required
@require_POST
def new_conversation(request: HttpRequest) -> HttpResponse:
    conversation = services.create_conversation(owner=request.user)
    return redirect(conversation)


def _viewable(request: HttpRequest, conversation_id) -> Conversation:
    conversation = selectors.conversation_for_viewer(request.user, conversation_id)
    if conversation is None:
        raise Http404("conversation not found")
    return conversation


@login_required
@require_GET
def conversation_page(request: HttpRequest, conversation_id) -> HttpResponse:
    conversation = _viewable(request, conversation_id)
    context = frames.transcript_context(conversation)
    context["compose_token"] = uuid.uuid4().hex
    context["can_post"] = conversation.owner_id == request.user.pk
    return render(request, "chatui/conversation.html", context)


@login_required
@require_GET
def transcript_fragment(request: HttpRequest, conversation_id) -> HttpResponse:
    """The #transcript element alone: what a page fetches after it detected a gap."""
    conversation = _viewable(request, conversation_id)
    return render(
        request, "chatui/_transcript.html#transcript", frames.transcript_context(conversation)
    )


@login_required
@require_GET
def earlier_messages(request: HttpRequest, conversation_id) -> HttpResponse:
    """ "Load earlier": the window before `before`, prepended to the transcript."""
    conversation = _viewable(request, conversation_id)
    before = request.GET.get("before", "")
    if not before.isdigit():
        return HttpResponse("'before' must be a message position", status=400)
    messages, has_earlier = selectors.transcript_window(conversation, before_position=int(before))
    context = frames.transcript_context(conversation, messages)
    context["has_earlier"] = has_earlier
    return render(request, "chatui/_transcript.html#earlier", context)


@login_required
@require_POST
def send_message(request: HttpRequest, conversation_id) -> HttpResponse:
    """The composer: a plain form POST that htmx enhances (SPEC §5, L4)."""
    conversation = selectors.conversation_for_writer(request.user, conversation_id)
    if conversation is None:
        raise Http404("conversation not found")
    content = request.POST.get("content", "")
    token = request.POST.get("client_token", "")[:64] or uuid.uuid4().hex
    event = {
        "type": "user.message",
        "content": content,
        "event_id": f"compose-{token}",
        "message_id": f"user-{token}",
    }
    try:
        result = ingest(conversation, event)
    except EventError as problem:
        if request.htmx:
            return HttpResponse(problem.message, status=problem.status)
        flash.error(request, problem.message)
        return redirect(conversation)
    if not request.htmx:
        return redirect(conversation)
    frame = (
        frames.change_frame(conversation, result.last_seq, result.last_seq, result.changes)
        if result.accepted
        else None
    )
    return HttpResponse(frame.html if frame else "", status=200 if frame else 204)


@login_required
@require_POST
def stop_run(request: HttpRequest, conversation_id) -> HttpResponse:
    """The Stop button: the run ends as failed, "stopped by user" (SPEC §10)."""
    from .agents import runner

    conversation = selectors.conversation_for_writer(request.user, conversation_id)
    if conversation is None:
        raise Http404("conversation not found")
    async_to_sync(runner.stop_run)(conversation.pk)
    if request.htmx:
        return HttpResponse(status=204)
    return redirect(conversation)
