"""Server-rendered pages. One template serves the page and its fragments."""

from __future__ import annotations

import uuid
from typing import Literal

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from chatui import agents
from chatui.ingest import approvals, sharing
from chatui.ingest import conversations as services
from chatui.ingest.service import ingest
from chatui.ingest.values import EventError, parse_seq
from chatui.live import frames
from chatui.models import Conversation
from chatui.read import listing, pages, presenters, search, selectors

from . import note_views, replay_views

LIST_LIMIT = 100
#: Conversations in the conversation page's rail (wide screens, docs/rendering.md#list-and-rail).
RAIL_LIMIT = 30


@login_required
@require_GET
def conversation_list(request: HttpRequest) -> HttpResponse:
    """The reader's conversations, or with `?q=` the search results (docs/rendering.md#search)."""
    query = request.GET.get("q", "")
    if not query.strip():
        rows = listing.present_rows(selectors.conversation_rows(request.user, LIST_LIMIT))
        return render(request, "chatui/conversation_list.html", {"rows": rows})
    before = _optional_number(request, "before")
    if before is False:
        return HttpResponse("'before' must be a message id (ASCII digits)", status=400)
    results = search.search(request.user, query, before=before)
    context = {"query": query, "results": results}
    return render(request, "chatui/conversation_list.html", context)


@login_required
@require_POST
def new_conversation(request: HttpRequest) -> HttpResponse:
    conversation = services.create_conversation(owner=request.user)
    return redirect(conversation)


def _optional_number(request: HttpRequest, name: str) -> int | Literal[False] | None:
    """A query parameter that may be absent (None) or a number (`parse_seq`: ASCII
    digits within the database's range); False when it is present and anything else."""
    raw = request.GET.get(name, "")
    if not raw:
        return None
    value = parse_seq(raw)
    return False if value is None else value


def _viewable(request: HttpRequest, conversation_id) -> Conversation:
    return pages.viewable_or_404(request.user, conversation_id)


@login_required
@require_GET
def conversation_page(request: HttpRequest, conversation_id) -> HttpResponse:
    """The conversation; with `?m=<message id>` (a search hit) the window around it;
    with `?at=<seq>` as it stood after that event, read-only."""
    conversation = _viewable(request, conversation_id)
    if "at" in request.GET:  # a past moment (docs/rendering.md#time-travel)
        return replay_views.time_travel_page(request, conversation, request.GET["at"])
    # docs/rendering.md#approvals: deadlines pass with nobody watching
    approvals.expire_overdue(conversation)
    anchor = _optional_number(request, "m")
    if anchor is False:
        return HttpResponse("'m' must be a message id (ASCII digits)", status=400)
    anchored = selectors.message_in(conversation, anchor) if anchor is not None else None
    context = _window_context(conversation, anchored.position if anchored else None)
    context["compose_token"] = uuid.uuid4().hex
    context["can_post"] = conversation.owner_id == request.user.pk
    context["can_decide"] = approvals.can_decide(request.user, conversation)
    context["accepts_input"] = pages.composer_open(conversation)
    context["strip"] = pages.run_strip(conversation)  # W2
    context["rail_rows"] = listing.present_rows(
        selectors.conversation_rows(request.user, RAIL_LIMIT, compact=True)
    )
    # docs/sharing.md: auditors' notes (and an annotator's form), the reader's share links.
    context.update(
        note_views.note_context(
            request, conversation, reverse("chatui:add-note", args=[conversation.pk])
        )
    )
    if sharing.may_share(request.user, conversation):
        context["can_share"] = True
        context["share_links"] = list(sharing.links_of(request.user, conversation))
        context["share_default_days"] = settings.CHATUI_SHARE_DEFAULT_DAYS
        context["now"] = timezone.now()
    return render(request, "chatui/conversation.html", context)


def _window_context(conversation: Conversation, around: int | None) -> dict:
    """The transcript's context: the latest window, or the one around a position. When
    newer messages lie beyond that window, `around` is set: the page says so and links
    to the latest, and appends no live message after the gap (chatui.js)."""
    if around is None:
        return pages.transcript_context(conversation)
    messages, has_earlier = selectors.transcript_window(conversation, around=around)
    context = pages.transcript_context(conversation, messages, has_earlier=has_earlier)
    if selectors.has_later(conversation, messages):
        context["around"] = around
    return context


@login_required
@require_GET
def transcript_fragment(request: HttpRequest, conversation_id) -> HttpResponse:
    """The #transcript element alone: what a page fetches after it detected a gap
    (`?around=<position>` for a page showing the window around a search hit)."""
    conversation = _viewable(request, conversation_id)
    around = _optional_number(request, "around")
    if around is False:
        return HttpResponse("'around' must be a message position (ASCII digits)", status=400)
    approvals.expire_overdue(conversation)  # as the page does: shown as of now
    context = _window_context(conversation, around)
    return render(request, "chatui/_transcript.html#transcript", context)


@login_required
@require_GET
def earlier_calls(request: HttpRequest, conversation_id, batch_start: int) -> HttpResponse:
    """ "Show N earlier calls" of a windowed tool batch (docs/rendering.md#long-transcripts): the
    entries before
    `before`, themselves windowed. htmx inserts them in place of the control; without
    JavaScript the link opens them as a page."""
    conversation = _viewable(request, conversation_id)
    before = parse_seq(request.GET.get("before", ""))
    if before is None:
        return HttpResponse("'before' must be a message position (ASCII digits)", status=400)
    batch = presenters.present_batch(selectors.batch_before(conversation, batch_start, before))
    if batch is None:
        raise Http404("no such tool batch")
    context = {"conversation": conversation, "item": batch}
    if request.htmx:
        return render(request, "chatui/_batch_window.html#earlier-entries", context)
    return render(request, "chatui/earlier_calls.html", context)


@login_required
@require_GET
def earlier_messages(request: HttpRequest, conversation_id) -> HttpResponse:
    """ "Load earlier": the window before `before`, prepended to the transcript."""
    conversation = _viewable(request, conversation_id)
    before = parse_seq(request.GET.get("before", ""))
    if before is None:
        return HttpResponse("'before' must be a message position (ASCII digits)", status=400)
    messages, has_earlier = selectors.transcript_window(conversation, before_position=before)
    context = pages.transcript_context(conversation, messages, has_earlier=has_earlier)
    return render(request, "chatui/_transcript.html#earlier", context)


@login_required
@require_POST
def send_message(request: HttpRequest, conversation_id) -> HttpResponse:
    """The composer: a plain form POST that htmx enhances (docs/rendering.md#live-updates, L4,
    docs/rendering.md#composer).

    The user's message is ingested, then a run of the configured agent starts off
    the request. With htmx the answer is a live frame holding the new message, so
    it shows at once even before the socket's copy (the page drops whichever comes
    second by its seq); without JavaScript it is a redirect back to the page.
    """
    conversation = selectors.conversation_for_writer(request.user, conversation_id)
    if conversation is None:
        raise Http404("conversation not found")
    if not agents.accepts_input(conversation.pk):
        return _refuse(request, conversation, BUSY, status=409)
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
        message = "Write a message first." if problem.field == "content" else problem.message
        return _refuse(request, conversation, message, status=problem.status)
    if result.accepted:
        try:
            agents.start_run(conversation, content)
        except agents.RunInProgress as refused:
            return _refuse(request, conversation, str(refused), status=409)
    if not request.htmx:
        return redirect(conversation)
    if not result.accepted:
        return HttpResponse(status=204)  # a double submit: the first one is showing
    frame = frames.change_frame(conversation, result.last_seq, result.last_seq, result.changes)
    return HttpResponse(frame.html)


BUSY = "The agent is still working on your previous message. Wait for it, or press Stop."


def _refuse(
    request: HttpRequest, conversation: Conversation, message: str, *, status: int
) -> HttpResponse:
    if request.htmx:
        return HttpResponse(message, status=status, content_type="text/plain")
    flash.error(request, message)
    return redirect(conversation)


@login_required
@require_POST
def stop_run(request: HttpRequest, conversation_id) -> HttpResponse:
    """The Stop button: the run ends `cancelled` (W5, docs/rendering.md#composer)."""
    conversation = selectors.conversation_for_writer(request.user, conversation_id)
    if conversation is None:
        raise Http404("conversation not found")
    async_to_sync(agents.stop_run)(conversation.pk)
    if request.htmx:
        return HttpResponse(status=204)
    return redirect(conversation)


@login_required
@require_http_methods(["GET", "POST"])
def showcase(request: HttpRequest) -> HttpResponse:
    """A page with one button; pressing it plays the demo script that shows every rule."""
    if request.method != "POST":
        return render(request, "chatui/showcase.html")
    conversation = services.create_conversation(owner=request.user, title="Showcase")
    agents.start_showcase(conversation)
    return redirect(conversation)
