"""Read-side queries. Views, the API, consumers and the admin read through these."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from .models import Conversation, Event, Message

VIEW_ANY = "chatui.view_conversation"


def can_view(user: AbstractBaseUser | AnonymousUser, conversation: Conversation) -> bool:
    if not user.is_authenticated:
        return False
    return conversation.owner_id == user.pk or user.has_perm(VIEW_ANY)


def conversations_for(user: AbstractBaseUser) -> QuerySet[Conversation]:
    return Conversation.objects.filter(owner=user).order_by("-updated_at")


def conversation_for_writer(user: AbstractBaseUser, conversation_id) -> Conversation | None:
    """The conversation if `user` may post to it: its owner, or `chatui.ingest_any`."""
    conversation = Conversation.objects.filter(pk=conversation_id).select_related("owner").first()
    if conversation is None:
        return None
    if conversation.owner_id == user.pk or user.has_perm("chatui.ingest_any"):
        return conversation
    return None


def conversation_for_viewer(user: AbstractBaseUser, conversation_id) -> Conversation | None:
    conversation = Conversation.objects.filter(pk=conversation_id).select_related("owner").first()
    if conversation is None or not can_view(user, conversation):
        return None
    return conversation


def messages_of(conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.filter(conversation=conversation).order_by("position")


def events_after(conversation: Conversation, after: int, limit: int = 1000) -> QuerySet[Event]:
    return Event.objects.filter(conversation=conversation, seq__gt=after).order_by("seq")[:limit]
