"""Pages for docs/rendering.md#time-travel: a past moment (`/c/{id}/?at=N`), one moment's transcript
for the player (`/c/{id}/at/N`), and the player (`/c/{id}/replay`). Read-only: no composer,
no live socket. Owners and auditors, like the conversation page."""

from __future__ import annotations

import hashlib
import pickle
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.signals import setting_changed
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone, translation
from django.utils.autoreload import file_changed
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET

from chatui.db.lru import BoundedLRU
from chatui.ingest.values import parse_seq
from chatui.live.frames import render_partial
from chatui.models import Conversation
from chatui.read import pages, presenters, replay


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


# -- a moment's transcript, its items rendered once --------------------------------------

#: The HTML of an item of a moment's transcript (the live page's `item` partial), by its
#: view's exact content: a step of the player shows the window of the step before but
#: for the few items the events between changed, and rendering the ~200 messages of a
#: window again was half of a step's CPU (docs/PERFORMANCE.md, time travel). The key is
#: a digest of the pickled view, not the view: views compare by value, and equal values
#: may render differently (a progress of 1 and of 1.0; a text and the same text marked
#: safe), which their pickles tell apart. Shared by every reader: an item's HTML holds
#: nothing of the reader (no CSRF token, no permission: the approval buttons point at
#: a form outside the transcript), and the views are already masked.
_ITEM_HTML: BoundedLRU[tuple, str] = BoundedLRU(1024)
#: An item's HTML longer than this is rendered each time, not kept (at most 1024 × 64 KiB).
KEPT_ITEM_CHARS = 64 * 1024
ITEM_PARTIAL = "chatui/_transcript.html#item"


def _forget_item_html(**_kwargs) -> None:
    # A setting a render reads may have changed (tests), or a template file.
    _ITEM_HTML.clear()


setting_changed.connect(_forget_item_html)
file_changed.connect(_forget_item_html)


def items_html(items: list[presenters.Item], at: replay.Moment) -> list[SafeString]:
    """Each item's HTML as `_transcript.html#transcript` renders it for the moment `at`.
    Of the context, an item reads only itself and the moment's seq (the `?at=N` of the
    links to texts kept on the server, `text-query`): HTML without that link holds
    nothing of the seq and serves every moment; HTML with it, only its own."""
    where = (timezone.get_current_timezone_name(), translation.get_language())
    link = f"?at={at.seq}"
    found: list[SafeString] = []
    for item in items:
        pickled = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        key = (hashlib.blake2b(pickled, digest_size=16).digest(), *where)
        html = _ITEM_HTML.get(key) or _ITEM_HTML.get((*key, at.seq))
        if html is None:
            html = render_partial(ITEM_PARTIAL, {"item": item, "moment": at})
            if len(html) <= KEPT_ITEM_CHARS:
                _ITEM_HTML.put((*key, at.seq) if link in html else key, html)
        found.append(mark_safe(html))  # the autoescaping partial's output
    return found


def moment_context(conversation: Conversation, at: replay.Moment) -> dict[str, Any]:
    """What `_moment.html#transcript` needs: `replay.transcript_context`, and its items'
    HTML (`items_html`); and the moments either side (W10)."""
    context = replay.transcript_context(conversation, at)
    context["items_html"] = items_html(context["items"], at)
    context["steps"] = replay.steps(conversation, at)
    return context


def time_travel_page(request: HttpRequest, conversation: Conversation, raw: str) -> HttpResponse:
    """`/c/{id}/?at=N`: the conversation page as it stood after event N (the caller,
    the conversation page, has checked access)."""
    at = moment_or_answer(conversation, raw)
    if isinstance(at, HttpResponse):
        return at
    return render(request, "chatui/time_travel.html", moment_context(conversation, at))


@login_required
@require_GET
def moment_fragment(request: HttpRequest, conversation_id, at: str) -> HttpResponse:
    """The #transcript element as of event `at`, and its label (out of band)."""
    conversation = _viewable(request, conversation_id)
    moment = moment_or_answer(conversation, at)
    if isinstance(moment, HttpResponse):
        return moment
    return render(request, "chatui/_moment.html#fragment", moment_context(conversation, moment))


@login_required
@require_GET
def replay_page(request: HttpRequest, conversation_id) -> HttpResponse:
    """The player, paused before the first event (or at `?at=N`)."""
    conversation = _viewable(request, conversation_id)
    at = moment_or_answer(conversation, request.GET.get("at", "0"))
    if isinstance(at, HttpResponse):
        return at
    context = moment_context(conversation, at)
    context["timeline"] = replay.timeline(conversation)
    return render(request, "chatui/replay.html", context)
