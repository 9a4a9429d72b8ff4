"""Server-rendered pages."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from . import selectors


@login_required
def conversation_list(request: HttpRequest) -> HttpResponse:
    conversations = selectors.conversations_for(request.user)
    return render(request, "chatui/conversation_list.html", {"conversations": conversations})


@login_required
def conversation_page(request: HttpRequest, conversation_id) -> HttpResponse:
    conversation = selectors.conversation_for_viewer(request.user, conversation_id)
    if conversation is None:
        raise Http404("conversation not found")
    messages = selectors.messages_of(conversation)
    return render(
        request,
        "chatui/conversation.html",
        {"conversation": conversation, "messages": messages},
    )
