"""Share links (docs/sharing.md#links): a read-only view of one conversation for anyone
holding the link, `/s/<token>/`. The token is 128 random bits, shown once; only its
sha256 is stored (as API tokens are). A link expires (default 7 days) and can be
revoked; an expired or revoked link is a 404, as an unknown one is."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import F, QuerySet
from django.urls import reverse
from django.utils import timezone

from chatui.access import can_view
from chatui.ingest.values import EventError
from chatui.models import Conversation, Message, Role, ShareLink, hash_token

#: The longest a link may live: a link is a bearer credential.
MAX_DAYS = 365
#: What a tool entry keeps when a link hides tool inputs and outputs: the call's name,
#: status, timing and attempts — calls and outcomes, no arguments, results or output.
KEPT_TOOL_METADATA = frozenset(
    {
        "tool_call_id",
        "tool_name",
        "tool_status",
        "tool_duration_ms",
        "attempt",
        "max_attempts",
        "parent_tool_call_id",
        "parent_message_id",
        "no_result_recorded",
        "status_type",
        "outcome",
    }
)


def may_share(user: AbstractBaseUser, conversation: Conversation) -> bool:
    """The owner, or an auditor (who can see it and annotate)."""
    return conversation.owner_id == user.pk or (
        can_view(user, conversation) and user.has_perm("chatui.annotate")
    )


def create_link(
    conversation: Conversation,
    user: AbstractBaseUser,
    *,
    expires_in_days: Any = None,
    hide_tool_io: Any = False,
) -> tuple[ShareLink, str]:
    """A new link and its raw token (shown once). EventError naming a bad field."""
    if expires_in_days is None:
        expires_in_days = settings.CHATUI_SHARE_DEFAULT_DAYS
    if (
        isinstance(expires_in_days, bool)
        or not isinstance(expires_in_days, int | float)
        or not 0 < expires_in_days <= MAX_DAYS
    ):
        raise EventError(
            f"field 'expires_in_days' must be a number of days above 0, at most {MAX_DAYS}",
            field="expires_in_days",
        )
    if not isinstance(hide_tool_io, bool):
        raise EventError("field 'hide_tool_io' must be true or false", field="hide_tool_io")
    expires_at = timezone.now() + timedelta(days=expires_in_days)
    return ShareLink.issue(conversation, user, expires_at=expires_at, hide_tool_io=hide_tool_io)


def share_url(raw: str) -> str:
    return reverse("chatui:shared", args=[raw])


def links_of(user: AbstractBaseUser, conversation: Conversation | None = None) -> QuerySet:
    """The links `user` created (of one conversation, if given), newest first."""
    links = ShareLink.objects.filter(created_by=user).select_related("conversation")
    return links.filter(conversation=conversation) if conversation is not None else links


def revoke(link: ShareLink) -> None:
    if link.revoked_at is None:
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])


def opened_link(raw: str) -> ShareLink | None:
    """The active link with this token, counted as opened once more; None (a 404) for
    an unknown, expired or revoked one."""
    link = active_link(raw)
    if link is None:
        return None
    ShareLink.objects.filter(pk=link.pk).update(
        open_count=F("open_count") + 1, last_opened_at=timezone.now()
    )
    return link


def active_link(raw: str) -> ShareLink | None:
    """The active link with this token, not counted (what its page loads: G21's
    attachments); None for an unknown, expired or revoked one."""
    if not raw or len(raw) > 100:
        return None
    return (
        ShareLink.objects.filter(token_hash=hash_token(raw), revoked_at__isnull=True)
        .filter(expires_at__gt=timezone.now())
        .select_related("conversation")
        .first()
    )


def without_tool_io(messages: list[Message]) -> list[Message]:
    """Unsaved copies of tool messages keeping only KEPT_TOOL_METADATA and no content
    (the result text): what a link that hides tool inputs and outputs shows."""
    shown = []
    for message in messages:
        if message.role == Role.TOOL:
            message = copy.copy(message)
            message.content = ""
            message.metadata = {
                key: value
                for key, value in (message.metadata or {}).items()
                if key in KEPT_TOOL_METADATA
            }
        shown.append(message)
    return shown
