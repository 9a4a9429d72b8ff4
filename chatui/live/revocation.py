"""Closing WebSockets whose access was taken away (docs/rendering.md#sec4).

A socket was authorised once, when it connected. Every consumer also joins a
group for its session and one for its user, so that:

- logging out closes every socket of that session (and no other session's);
- losing a group or a permission, being deactivated or deleted, or a password
  change makes each of that user's sockets re-read who its session belongs to
  now and re-check `access.can_view` (the consumer closes it with 4403);
- changes that send no signal (a queryset `.update()`, a session expiring) are
  caught by the consumer's periodic re-check (`CHATUI_WS_RECHECK_SECONDS`).

Signals fire in sync code, inside the transaction that made the change: the
group messages go out on commit, so a re-check reads the committed state.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from importlib import import_module

from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
    user_logged_out,
)
from django.contrib.auth.models import AbstractBaseUser, Group
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete
from django.dispatch import receiver
from django.utils.crypto import constant_time_compare

from .broadcast import send_to_group

logger = logging.getLogger(__name__)

User = get_user_model()

#: Handled by `TranscriptConsumer.session_ended`: close at once, no database read.
SESSION_ENDED = "session.ended"
#: Handled by `TranscriptConsumer.access_recheck`: re-read the session, re-check can_view.
ACCESS_RECHECK = "access.recheck"

# Only losing a relation can take access away; gaining one never closes a socket.
# pre_clear rather than post_clear: after a clear the relation no longer says who was in it
# (the message itself still goes out on commit, after the clear).
LOSSES = frozenset({"post_remove", "pre_clear"})


def session_group(session_key: str) -> str:
    # Hashed: group names travel to the channel layer (Redis keys in cluster mode),
    # and a session key is a credential.
    return f"chatui.session.{hashlib.sha256(session_key.encode()).hexdigest()[:40]}"


def user_group(user_pk) -> str:
    return f"chatui.user.{user_pk}"


def session_user(session_key: str | None) -> AbstractBaseUser | None:
    """Who the session belongs to now, read fresh from the session store and the
    database (no cached permissions); None when logged out, expired, deactivated, or
    invalidated by a password change. Unlike `django.contrib.auth.get_user` it never
    writes: it must not flush or cycle a session a browser is still using."""
    if not session_key:
        return None
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    try:
        user_id = User._meta.pk.to_python(session[SESSION_KEY])
        backend_path = session[BACKEND_SESSION_KEY]
    except KeyError:
        return None
    if backend_path not in settings.AUTHENTICATION_BACKENDS:
        return None
    user = load_backend(backend_path).get_user(user_id)  # None when inactive
    if user is None:
        return None
    stored_hash = session.get(HASH_SESSION_KEY) or ""
    valid_hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    if not any(constant_time_compare(stored_hash, valid) for valid in valid_hashes):
        return None
    return user


# -- sending ------------------------------------------------------------------------


def recheck_users(user_pks: Iterable) -> None:
    """After the current transaction commits, make these users' sockets re-check."""
    groups = sorted({user_group(pk) for pk in user_pks})
    if groups:
        send_on_commit(groups, {"type": ACCESS_RECHECK})


def send_on_commit(groups: list[str], message: dict) -> None:
    # robust: the change is committed whatever happens to the channel layer; a lost
    # message is caught by the periodic re-check.
    transaction.on_commit(lambda: _send(groups, message), robust=True)


def _send(groups: list[str], message: dict) -> None:
    # The viewers' layer: one message per process per group (chatui.live.fanout).
    for group in groups:
        send_to_group(group, message)


# -- receivers ----------------------------------------------------------------------


@receiver(user_logged_out, dispatch_uid="chatui.live.revocation.logged_out")
def close_sockets_of_session(sender, request, user, **kwargs) -> None:
    # Sent before the session is flushed, so its key is still there.
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        send_on_commit([session_group(session_key)], {"type": SESSION_ENDED})


def _users_on_either_side(instance, reverse: bool, action: str, pk_set) -> list:
    """Users whose relation changed, for a User-to-X m2m: `user.<field>` (forward) or
    `x.user_set` (reverse, where pk_set holds user pks, or None on a clear)."""
    if not reverse:
        return [instance.pk]
    if action == "pre_clear":
        return list(instance.user_set.values_list("pk", flat=True))
    return list(pk_set or ())


@receiver(m2m_changed, sender=User.groups.through, dispatch_uid="chatui.live.revocation.groups")
@receiver(
    m2m_changed,
    sender=User.user_permissions.through,
    dispatch_uid="chatui.live.revocation.user_permissions",
)
def user_lost_group_or_permission(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    """`user.groups` / `group.user_set`, `user.user_permissions` / `permission.user_set`."""
    if action in LOSSES:
        recheck_users(_users_on_either_side(instance, reverse, action, pk_set))


@receiver(
    m2m_changed, sender=Group.permissions.through, dispatch_uid="chatui.live.revocation.group_perms"
)
def group_lost_permission(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    """`group.permissions` (forward) or `permission.group_set` (reverse): every member
    of the groups concerned re-checks."""
    if action not in LOSSES:
        return
    if not reverse:
        groups = [instance.pk]
    elif action == "pre_clear":
        groups = list(instance.group_set.values_list("pk", flat=True))
    else:
        groups = list(pk_set or ())
    recheck_users(User.objects.filter(groups__in=groups).values_list("pk", flat=True).distinct())


@receiver(pre_delete, sender=Group, dispatch_uid="chatui.live.revocation.group_deleted")
def group_deleted(sender, instance, **kwargs) -> None:
    # Deleting a group removes its memberships without an m2m_changed signal.
    recheck_users(instance.user_set.values_list("pk", flat=True))


@receiver(post_save, sender=User, dispatch_uid="chatui.live.revocation.user_saved")
def user_changed(sender, instance, created, update_fields, **kwargs) -> None:
    """is_active, is_superuser or the password may have changed (a new password
    invalidates the user's other sessions). A login only stamps last_login."""
    if created or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return
    recheck_users([instance.pk])


@receiver(post_delete, sender=User, dispatch_uid="chatui.live.revocation.user_deleted")
def user_deleted(sender, instance, **kwargs) -> None:
    recheck_users([instance.pk])
