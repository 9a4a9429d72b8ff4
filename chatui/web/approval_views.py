"""Tool approval over HTTP (docs/events.md#approvals): the Approve / Deny form, the API's decision,
and the runtime's long poll. Thin: the rules live in chatui.ingest.approvals.

The long poll is an async view on purpose. Under daphne every sync view runs on one
thread; a sync view sleeping there for 30 s would hold up every other request — the
very Approve it waits for among them. This one touches the database only in short
calls: one look when it comes, then it waits on the channel-layer group of its one
call's decision (chatui.live.approval_clock.decisions_of: set when a decision or an
expiry commits, on any process) and looks again only when woken there, or when the
request's own deadline passes (where no clock runs, the look records the expiry). It
used to wait on the conversation's group and look again at every frame of it and
every second besides: 300 waiting polls took ingest from 982 to 248 events/s. A user
may have CHATUI_MAX_LONG_POLLS_PER_USER waiting at once in a process (429 past it).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from chatui.ingest import approvals
from chatui.ingest.values import EventError
from chatui.live.approval_clock import decisions_of
from chatui.models import Message, Role
from chatui.read import selectors

from .api import api_view, authenticate, error, read_json
from .credentials import edge_token

#: A long poll waits at most this long (the edge's request deadline covers only the
#: arrival of a request, never the wait for its answer).
MAX_WAIT_SECONDS = 30
#: A look at the request's deadline comes this much after it (the expiry is then due).
DEADLINE_SLACK_SECONDS = 0.05

#: Waiting long polls per user pk, in this process (CHATUI_MAX_LONG_POLLS_PER_USER).
waiting_polls: Counter = Counter()


# -- the form on the page ------------------------------------------------------------------


@login_required
@require_POST
def decide_from_page(request: HttpRequest, conversation_id, message_pk: int) -> HttpResponse:
    """Approve / Deny: a plain form POST (CSRF; works without JavaScript). chatui.js
    sends it in the background instead; the page then changes by its live frame."""
    conversation = selectors.conversation_for_viewer(request.user, conversation_id)
    if conversation is None or not approvals.can_decide(request.user, conversation):
        raise Http404("conversation not found")
    message = Message.objects.filter(
        conversation=conversation, pk=message_pk, role=Role.TOOL
    ).first()
    if message is None:
        raise Http404("tool call not found")
    try:
        approvals.decide(
            conversation,
            message.tool_call_id,
            request.POST.get("decision", ""),
            request.user,
            _note_from(request, message),
        )
    except EventError as problem:
        if problem.status == 404:
            raise Http404(problem.message) from None
        if request.htmx:
            return HttpResponse(problem.message, status=problem.status, content_type="text/plain")
        flash.error(request, problem.message)
        return redirect(conversation)
    if request.htmx:
        return HttpResponse(status=204)
    return redirect(conversation)


def _note_from(request: HttpRequest, message: Message) -> str:
    """Every pending entry's note field belongs to the page's one approval form, so
    each is named after its entry."""
    return request.POST.get(f"note-{message.pk}", request.POST.get("note", ""))


# -- the API ----------------------------------------------------------------------------------


@api_view("POST")
def decide_from_api(request: HttpRequest, conversation_id, tool_call_id: str) -> JsonResponse:
    """`POST /api/v1/conversations/{id}/approvals/{tool_call_id}` {decision, note}."""
    conversation = selectors.conversation_for_viewer(request.user, conversation_id)
    if conversation is None or not approvals.can_decide(request.user, conversation):
        return error("conversation not found", 404)
    body = read_json(request)
    if not isinstance(body, dict):
        raise EventError("expected a JSON object {decision, note}")
    decision = approvals.decide(
        conversation, tool_call_id, body.get("decision"), request.user, body.get("note", "")
    )
    return JsonResponse(decision.as_dict())


def _parse_wait(raw: str) -> int | None:
    if raw == "":
        return 0
    if not raw.isascii() or not raw.isdigit() or int(raw) > MAX_WAIT_SECONDS:
        return None
    return int(raw)


def _poll(user: Any, conversation_id: Any, tool_call_id: str) -> tuple[Any, datetime | None]:
    """One look: a JsonResponse to answer with, or None while still pending; and the
    request's deadline."""
    conversation = selectors.conversation_for_writer(user, conversation_id)
    if conversation is None:
        conversation = selectors.conversation_for_viewer(user, conversation_id)
        if conversation is None or not approvals.can_decide(user, conversation):
            return error("conversation not found", 404), None
    asked = approvals.awaiting(conversation, tool_call_id)
    if asked is None:
        return error(f"no approval was requested for tool call '{tool_call_id[:200]}'", 404), None
    approvals.expire_overdue(conversation)
    decision = approvals.decision_for(conversation, tool_call_id)
    return (JsonResponse(decision.as_dict()) if decision else None), approvals.deadline_of(asked)


async def _authenticated_user(request: HttpRequest) -> Any:
    token = edge_token(request) or await sync_to_async(authenticate)(request)
    return token.user if token is not None else None


async def wait_for_decision(request: HttpRequest, conversation_id, tool_call_id: str):
    """`GET …/approvals/{tool_call_id}?wait=30`: 200 with the decision, 204 still pending."""
    if request.method != "GET":
        response = error(f"method {request.method[:20]} is not allowed; use GET, POST", 405)
        response["Allow"] = "GET, POST"
        return response
    user = await _authenticated_user(request)
    if user is None:
        response = error("missing or invalid bearer token", 401)
        response["WWW-Authenticate"] = 'Bearer realm="chatui"'
        return response
    wait = _parse_wait(request.GET.get("wait", ""))
    if wait is None:
        return error(
            f"'wait' must be a whole number of seconds from 0 to {MAX_WAIT_SECONDS}", field="wait"
        )
    poll = sync_to_async(_poll)
    if wait == 0:
        answer, _ = await poll(user, conversation_id, tool_call_id)
        return answer or HttpResponse(status=204)
    limit = settings.CHATUI_MAX_LONG_POLLS_PER_USER
    if waiting_polls[user.pk] >= limit:
        return error(
            f"this user already has {limit} approval long polls waiting, the most one may "
            "(CHATUI_MAX_LONG_POLLS_PER_USER); wait for one to end, or look with wait=0",
            429,
        )
    waiting_polls[user.pk] += 1
    try:
        return await _wait(poll, user, conversation_id, tool_call_id, wait)
    finally:
        waiting_polls[user.pk] -= 1
        if waiting_polls[user.pk] <= 0:
            del waiting_polls[user.pk]


async def _wait(poll: Any, user: Any, conversation_id: Any, tool_call_id: str, wait: int):
    """Look, then look again only when the call is decided or its deadline passes."""
    until = time.monotonic() + wait
    async with decisions_of(conversation_id, tool_call_id) as decided:
        # Listening before the first look: a decision committed in between still wakes it.
        answer, expires_at = await poll(user, conversation_id, tool_call_id)
        while answer is None:
            timeout = until - time.monotonic()
            if expires_at is not None:
                # Look once at the deadline: where no clock records the expiry, the look does.
                due = expires_at.timestamp() - time.time() + DEADLINE_SLACK_SECONDS
                timeout, expires_at = min(timeout, max(due, 0.0)), None
            try:
                await asyncio.wait_for(decided.wait(), max(timeout, 0.0))
            except TimeoutError:
                if time.monotonic() >= until:
                    return HttpResponse(status=204)
            decided.clear()
            answer, _ = await poll(user, conversation_id, tool_call_id)
    return answer


@csrf_exempt
async def approval_endpoint(request: HttpRequest, conversation_id, tool_call_id: str):
    """One URL, two methods: POST decides (a short sync call, on Django's sync thread
    like every sync view), GET waits without holding that thread."""
    if request.method == "POST":
        return await sync_to_async(decide_from_api)(request, conversation_id, tool_call_id)
    return await wait_for_decision(request, conversation_id, tool_call_id)


# -- serving the long poll beside Django's middleware ----------------------------------------
