"""Who may read and who may write a conversation (SEC4, SEC5).

One rule each, used by every surface: the page, the sockets, the API, search, approvals
and ingest's own check under its lock. Owners read and write their own conversations;
`chatui.view_conversation` (auditors) reads everyone's; `chatui.ingest_any` (service
accounts) writes to anyone's.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from .models import Conversation

VIEW_ANY = "chatui.view_conversation"
INGEST_ANY = "chatui.ingest_any"


def can_view(user: AbstractBaseUser | AnonymousUser, conversation: Conversation) -> bool:
    if not user.is_authenticated:
        return False
    return conversation.owner_id == user.pk or user.has_perm(VIEW_ANY)


def may_write(user: AbstractBaseUser, conversation: Conversation) -> bool:
    return conversation.owner_id == user.pk or user.has_perm(INGEST_ANY)
