"""Share links (docs/sharing.md#links): the anonymous read-only view `/s/<token>/`,
the owner's create and revoke on the conversation page, and the API's
`POST …/conversations/{id}/shares`, `GET` of the same, `DELETE /api/v1/shares/{id}`."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from chatui.ingest import sharing
from chatui.ingest.values import EventError
from chatui.models import ShareLink
from chatui.read import pages, presenters, selectors
from chatui.read.display import Display

from .api import api_view, error, read_json

#: Messages a shared page shows: the latest (as the admin's audit page does).
TRANSCRIPT_LIMIT = 1000
#: Secrets masked (T3) as everywhere; tool inputs and outputs hidden when the link says so.
HIDDEN_IO = Display(hide_tool_io=True)


def link_to_dict(link: ShareLink) -> dict[str, Any]:
    return {
        "id": link.pk,
        "conversation": str(link.conversation_id),
        "created_at": link.created_at.isoformat(),
        "expires_at": link.expires_at.isoformat(),
        "revoked_at": link.revoked_at.isoformat() if link.revoked_at else None,
        "hide_tool_io": link.hide_tool_io,
        "open_count": link.open_count,
    }


@require_GET
def shared_page(request: HttpRequest, token: str) -> HttpResponse:
    """The transcript with the page's partials, read-only: no composer, no socket, no
    approval form, no notes; 404 for an unknown, expired or revoked link."""
    link = sharing.opened_link(token)
    if link is None:
        raise Http404("no such link")
    conversation = link.conversation
    window, has_earlier = selectors.transcript_window(conversation, limit=TRANSCRIPT_LIMIT)
    messages = list(window)
    # G21: a link's page serves the conversation's attachments under its own address
    shown = Display(attachment_base=request.path.removesuffix("/") + "/attachments/")
    display = HIDDEN_IO if link.hide_tool_io else shown
    if link.hide_tool_io:
        messages = sharing.without_tool_io(messages)
    context = {
        "conversation": conversation,
        "items": presenters.present_transcript(messages, display=display),
        "has_earlier": has_earlier,
        "shown": len(messages),
        "last_seq": conversation.last_seq,
        "link": link,
    }
    response = render(request, "chatui/shared.html", context)
    # The token is in the address: it goes to no other site, and no cache keeps the page.
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store"
    response["X-Robots-Tag"] = "noindex, nofollow"
    return response


@login_required
@require_POST
def create_from_page(request: HttpRequest, conversation_id) -> HttpResponse:
    conversation = pages.viewable_or_404(request.user, conversation_id)
    if not sharing.may_share(request.user, conversation):
        return HttpResponse("only the owner or an auditor may share", status=403)
    days = request.POST.get("expires_in_days", "").strip()
    try:
        if days and not (days.isascii() and days.isdigit()):
            raise EventError("'expires_in_days' must be a whole number of days")
        link, raw = sharing.create_link(
            conversation,
            request.user,
            expires_in_days=int(days) if days else None,
            hide_tool_io=request.POST.get("hide_tool_io") == "on",
        )
    except EventError as problem:
        return HttpResponse(problem.message, status=400, content_type="text/plain")
    url = request.build_absolute_uri(sharing.share_url(raw))
    # Shown once, on this page: the token is stored only hashed.
    response = render(
        request,
        "chatui/share_created.html",
        {"conversation": conversation, "link": link, "url": url},
    )
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def revoke_from_page(request: HttpRequest, conversation_id, link_pk: int) -> HttpResponse:
    conversation = pages.viewable_or_404(request.user, conversation_id)
    link = get_object_or_404(
        ShareLink.objects.filter(conversation=conversation, created_by=request.user), pk=link_pk
    )
    sharing.revoke(link)
    return redirect(conversation.get_absolute_url() + "#shares")


@api_view("GET", "POST")
def shares_endpoint(request: HttpRequest, conversation_id) -> JsonResponse:
    conversation = selectors.conversation_for_viewer(request.user, conversation_id)
    if conversation is None:
        return error("conversation not found", 404)
    if request.method == "GET":
        links = sharing.links_of(request.user, conversation)
        return JsonResponse({"shares": [link_to_dict(link) for link in links]})
    if not sharing.may_share(request.user, conversation):
        return error("only the conversation's owner or an auditor may share it", 403)
    body = read_json(request) if request.body else {}
    if not isinstance(body, dict):
        raise EventError("expected a JSON object {expires_in_days?, hide_tool_io?}")
    unknown = sorted(set(body) - {"expires_in_days", "hide_tool_io"})
    if unknown:
        raise EventError(f"unknown field '{unknown[0][:80]}'", field=unknown[0][:80])
    link, raw = sharing.create_link(
        conversation,
        request.user,
        expires_in_days=body.get("expires_in_days"),
        hide_tool_io=body.get("hide_tool_io", False),
    )
    data = link_to_dict(link)
    data["url"] = request.build_absolute_uri(sharing.share_url(raw))
    return JsonResponse(data, status=201)


@api_view("DELETE")
def share_detail(request: HttpRequest, link_pk: int) -> HttpResponse:
    """Revoke (204): the link's creator or its conversation's owner; 404 for anyone else."""
    link = ShareLink.objects.filter(pk=link_pk).select_related("conversation").first()
    if link is None or request.user.pk not in (link.created_by_id, link.conversation.owner_id):
        return error("share link not found", 404)
    sharing.revoke(link)
    return HttpResponse(status=204)
