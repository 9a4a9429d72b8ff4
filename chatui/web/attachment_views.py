"""G21: an MCP result's attachment, served to its conversation's readers
(docs/rendering.md#g21).

`/c/<id>/attachments/<sha256>` for the owner or a holder of `chatui.view_conversation`,
`/s/<token>/attachments/<sha256>` for a share link's page (one that shows tool output);
404 for anyone else, and for bytes this conversation's log does not reference — the
digest of someone else's image opens nothing. The bytes are served as the type chatui
sniffed from them (chatui.ingest.attachments), never the type the runtime declared: a
raster image or audio inline, anything else (SVG, PDF, unknown bytes) as
`application/octet-stream` to download. Every answer says `nosniff` and carries a CSP
that lets the bytes run nothing, should a browser be opened on them directly.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.views.decorators.http import require_GET

from chatui.ingest import sharing
from chatui.ingest.attachments import INLINE_AUDIO_TYPES, INLINE_IMAGE_TYPES, OCTET_STREAM
from chatui.models import Attachment, AttachmentUse, Conversation
from chatui.read import pages

#: A file name's extension for a download, by the sniffed type.
EXTENSIONS = {"image/svg+xml": "svg", "application/pdf": "pdf"}
#: Nothing in an attachment may run or load anything, even opened on its own.
ATTACHMENT_CSP = "default-src 'none'; sandbox"


@login_required
@require_GET
def attachment(request: HttpRequest, conversation_id, sha256: str) -> HttpResponse:
    conversation = pages.viewable_or_404(request.user, conversation_id)
    return serve(request, conversation, sha256)


@require_GET
def shared_attachment(request: HttpRequest, token: str, sha256: str) -> HttpResponse:
    link = sharing.active_link(token)
    if link is None or link.hide_tool_io:
        raise Http404("no such attachment")
    response = serve(request, link.conversation, sha256)
    response["Referrer-Policy"] = "no-referrer"
    return response


def serve(request: HttpRequest, conversation: Conversation, sha256: str) -> HttpResponse:
    """The attachment `sha256` if `conversation`'s log references it, else 404."""
    if not AttachmentUse.objects.filter(conversation=conversation, attachment_id=sha256).exists():
        raise Http404("no such attachment")
    etag = f'"{sha256}"'  # content-addressed: the bytes behind a digest never change
    if request.headers.get("If-None-Match") == etag:
        response: HttpResponse = HttpResponseNotModified()
    else:
        row = Attachment.objects.filter(pk=sha256).first()
        if row is None:
            raise Http404("no such attachment")
        inline = row.media_type in INLINE_IMAGE_TYPES or row.media_type in INLINE_AUDIO_TYPES
        response = HttpResponse(
            bytes(row.data), content_type=row.media_type if inline else OCTET_STREAM
        )
        if inline:
            response["Content-Disposition"] = "inline"
        else:
            name = f"attachment-{sha256[:12]}.{EXTENSIONS.get(row.media_type, 'bin')}"
            response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["ETag"] = etag
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = ATTACHMENT_CSP
    response["Cross-Origin-Resource-Policy"] = "same-origin"
    # Readers' access may change: a private cache only, checked again after a day.
    response["Cache-Control"] = "private, max-age=86400"
    return response
