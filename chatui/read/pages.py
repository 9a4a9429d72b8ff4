"""Page context shared by the views and the live frames.

What the transcript partials need (the latest window, presented) and the composer
policy: whether the owner may send now. Both the full page (views) and the frames
that re-render parts of it read these, so a page and a frame never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.http import Http404

from chatui.agents import accepts_input
from chatui.models import Conversation, Message

from . import presenters, selectors
from .run_strip import RunStripView, present_run_strip


def viewable_or_404(user, conversation_id) -> Conversation:
    """The conversation if `user` may read it (owner, or the view permission), else a
    404 that says nothing about whether it exists: the one access check of the pages."""
    conversation = selectors.conversation_for_viewer(user, conversation_id)
    if conversation is None:
        raise Http404("conversation not found")
    return conversation


def transcript_context(
    conversation: Conversation,
    messages: Sequence[Message] | None = None,
    *,
    has_earlier: bool = False,
) -> dict:
    """What the transcript partials need: the latest window unless `messages` is given."""
    latest = messages is None
    if messages is None:
        messages, has_earlier = selectors.transcript_window(conversation)
    return {
        "conversation": conversation,
        # As given: a window that opens inside a giant tool batch carries its head. W1:
        # the latest window's last batch is where a going run is.
        "items": presenters.present_transcript(
            messages, run_going=latest and run_going(conversation)
        ),
        "has_earlier": has_earlier,
        "first_position": selectors.first_position(messages),
        "last_seq": conversation.last_seq,
    }


def run_going(conversation: Conversation) -> bool:
    """A run goes in `conversation` (its status, kept by the projection)."""
    return conversation.status == "running"


def run_strip(
    conversation: Conversation, tail: selectors.Tail | None = None, *, run_known: bool = False
) -> RunStripView | None:
    """W2: the strip of the going run (None when none goes); `tail`, a live frame's
    latest messages, spares the read when it holds the run. The going run is looked up
    unless `run_known`: a live frame whose messages changed, and not the conversation,
    belongs to the run of its newest message (a run just started has none yet, and
    starting it changes the conversation)."""
    if not run_going(conversation):
        return None
    run_id = None if run_known else selectors.going_run_id(conversation.pk)
    messages, status_counts = selectors.going_run_messages(conversation.pk, tail, run_id)
    return present_run_strip(messages, going=True, status_counts=status_counts)


def composer_open(conversation: Conversation) -> bool:
    """May the owner send now? A run that has ended in the log frees the composer even
    while its task winds down here; a running one only if its agent takes interjections."""
    return conversation.status != "running" or accepts_input(conversation.pk)
