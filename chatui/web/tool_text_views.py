"""The texts a tool entry leaves out of the page (issue 28; docs/rendering.md#G16).

A page carries at most `CHATUI_TOOL_TEXT_INLINE_CHARS` characters of an entry's full
result text, Copy-args text and Details JSON (chatui.read.presenters `_bounded`); the rest
is fetched from here when the reader opens or copies it:
`/c/<id>/tools/<message pk>/output|details|args`, with `?at=<seq>` on a past moment's
page (time travel, replay) and `?invisible=1` from the admin's audit page.

Who may read it and how it is shown is the page's own rule: the owner or a holder of
`chatui.view_conversation` (others get 404, anonymous readers the login page), secrets
masked (T3) exactly as the page masks them, the text escaped by the template. With
htmx's `HX-Request` header the answer is the one `<pre>` the page puts in place
(chatui/tool_text.js); without it, a page of its own, so the link works without
JavaScript.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from chatui.models import Conversation, Message, Role
from chatui.read import pages, presenters, replay
from chatui.read.display import MASKED
from chatui.read.reveal import SHOW_INVISIBLE

from .replay_views import busy_answer, seq_or_error  # the same 400s and 503 as the page

#: What each part is called on its own page.
PART_NAMES = {"output": "full output", "details": "details", "args": "arguments"}


@login_required
@require_GET
def tool_text(request: HttpRequest, conversation_id, message_pk: str, part: str) -> HttpResponse:
    """One text of one tool entry, whole (the URL allows only `presenters.TEXT_PARTS`)."""
    conversation = pages.viewable_or_404(request.user, conversation_id)
    at = None
    if "at" in request.GET:
        at = seq_or_error(conversation, request.GET["at"])
        if isinstance(at, JsonResponse):
            return at
    try:
        message = _tool_message(conversation, int(message_pk), at)
    except replay.Busy as busy:
        return busy_answer(busy)
    # The admin's audit page marks invisible characters (chatui.read.reveal); a view of the
    # text only, masked all the same.
    display = SHOW_INVISIBLE if request.GET.get("invisible") else MASKED
    text = presenters.full_tool_text(message, part, display=display)
    if text is None:
        raise Http404("this tool entry has no such text")
    context = {"part": part, "text": text}
    if request.htmx:
        return render(request, "chatui/_tool_text.html#" + part, context)
    entry = presenters.present_tool_entry(message, display=display)
    back = conversation.get_absolute_url() + (f"?at={at}" if at is not None else "")
    context.update(
        conversation=conversation, title=entry.title, part_name=PART_NAMES[part], back=back
    )
    return render(request, "chatui/tool_text.html", context)


def _tool_message(conversation: Conversation, pk: int, at: int | None) -> Message:
    """The tool message `pk` of the conversation, as it stood after event `at` if given.

    A message changes only through the projection, which stamps the event's seq on it
    (`updated_seq`): a row not changed since `at` is what that moment showed, and only
    a later change needs the moment projected (chatui.read.replay; the page of that moment
    was projected the same way, so the entry is in its window)."""
    live = Message.objects.filter(conversation=conversation, pk=pk, role=Role.TOOL).first()
    if at is None or (live is not None and live.updated_seq <= at):
        if live is None:
            raise Http404("no such tool entry")
        return live
    moment = replay.moment(conversation, at)
    for message in moment.messages:
        if message.pk == pk and message.role == Role.TOOL:
            return message
    raise Http404("no such tool entry in the window of that moment")
