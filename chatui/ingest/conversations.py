"""Write-side services other than event ingest."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from chatui.models import Conversation


def create_conversation(*, owner: AbstractBaseUser, title: str = "") -> Conversation:
    return Conversation.objects.create(owner=owner, title=title.strip()[:200])
