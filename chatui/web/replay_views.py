"""Pages for docs/rendering.md#time-travel: a past moment (`/c/{id}/?at=N`), one moment's transcript
for the player (`/c/{id}/at/N`), and the player (`/c/{id}/replay`). Read-only: no composer,
no live socket. Owners and auditors, like the conversation page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from chatui.ingest.values import parse_seq
from chatui.models import Conversation
from chatui.read import pages, replay


def _viewable(request: HttpRequest, conversation_id) -> Conversation:
    return pages.viewable_or_404(request.user, conversation_id)


def seq_or_error(conversation: Conversation, raw: str) -> int | JsonResponse:
    """`at` is an event's seq: 0 (before the first event) up to the last one."""
    seq = parse_seq(raw)
    if seq is None:
        return JsonResponse(
            {"error": "'at' must be an event seq (ASCII digits)", "field": "at"}, status=400
        )
    if seq > conversation.last_seq:
        message = f"'at' is beyond the last event ({conversation.last_seq})"
        return JsonResponse({"error": message, "field": "at"}, status=400)
    return seq


def busy_answer(busy: replay.Busy) -> HttpResponse:
    """Every slot for projecting moments is taken (chatui.read.replay.moment_slot): a clear
    503 that says when to come back, not a request queued behind the others."""
    response = JsonResponse(
        {
            "error": "time travel is busy projecting other moments; try again shortly",
            "retry_after": busy.retry_after,
        },
        status=503,
    )
    response["Retry-After"] = str(busy.retry_after)
    return response


def moment_or_answer(conversation: Conversation, raw: str) -> replay.Moment | HttpResponse:
    """The moment after event `raw`, or the answer instead: a 400 naming what is wrong
    with `at`, or the 503 when every slot for projecting moments is taken."""
    seq = seq_or_error(conversation, raw)
    if isinstance(seq, JsonResponse):
        return seq
    try:
        return replay.moment(conversation, seq)
    except replay.Busy as busy:
        return busy_answer(busy)


def time_travel_page(request: HttpRequest, conversation: Conversation, raw: str) -> HttpResponse:
    """`/c/{id}/?at=N`: the conversation page as it stood after event N (the caller,
    the conversation page, has checked access)."""
    at = moment_or_answer(conversation, raw)
    if isinstance(at, HttpResponse):
        return at
    return render(request, "chatui/time_travel.html", replay.transcript_context(conversation, at))


@login_required
@require_GET
def moment_fragment(request: HttpRequest, conversation_id, at: str) -> HttpResponse:
    """The #transcript element as of event `at`, and its label (out of band)."""
    conversation = _viewable(request, conversation_id)
    moment = moment_or_answer(conversation, at)
    if isinstance(moment, HttpResponse):
        return moment
    context = replay.transcript_context(conversation, moment)
    return render(request, "chatui/_moment.html#fragment", context)


@login_required
@require_GET
def replay_page(request: HttpRequest, conversation_id) -> HttpResponse:
    """The player, paused before the first event (or at `?at=N`)."""
    conversation = _viewable(request, conversation_id)
    at = moment_or_answer(conversation, request.GET.get("at", "0"))
    if isinstance(at, HttpResponse):
        return at
    context = replay.transcript_context(conversation, at)
    context["timeline"] = replay.timeline(conversation)
    return render(request, "chatui/replay.html", context)
