"""SEC4 while a socket is open: logout and lost access close it with 4403 (chatui.live.revocation).

Every test checks both halves: the socket that lost access is closed and gets no
further frame, and a socket that still has access keeps receiving them.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.sessions.models import Session

from chatui.ingest.service import ingest
from chatui.models import Conversation
from tests.support.sockets import (  # noqa: F401 — fresh_channel_layer is an autouse fixture
    MARKER,
    closed_with,
    connect,
    cookie_of,
    fresh_channel_layer,
    logged_in_browser,
)
from tests.support.websocket import RawWebSocket, WebSocketClosed


def in_process(test):
    """An async test against the in-process ASGI application and the test database."""
    return pytest.mark.django_db(transaction=True)(pytest.mark.asyncio(test))


User = get_user_model()


@pytest.fixture
def owner(db):
    return User.objects.create_user("owner", password="owner-pass-1")


@pytest.fixture
def conversation(owner):
    return Conversation.objects.create(owner=owner, title="t")


@pytest.fixture
def view_permission(db) -> Permission:
    return Permission.objects.get(content_type__app_label="chatui", codename="view_conversation")


@pytest.fixture
def auditors(db, view_permission) -> Group:
    # The migration's group; a transactional test database is flushed between tests.
    group, _ = Group.objects.get_or_create(name="auditor")
    group.permissions.add(view_permission)
    return group


@pytest.fixture
def auditor(auditors):
    user = User.objects.create_user("auditor", password="auditor-pass-1")
    user.groups.add(auditors)
    return user


async def post(conversation, content: str) -> None:
    await sync_to_async(ingest)(conversation, {"type": "user.message", "content": content})


async def assert_receives(communicator, content: str) -> None:
    frame = await communicator.receive_from(timeout=3)
    assert MARKER.match(frame) and f">{content}<" in frame


async def assert_closed_and_silent(communicator, conversation, watcher) -> None:
    """Closed with 4403; a later frame reaches `watcher` and not `communicator`."""
    assert await closed_with(communicator) == 4403
    await post(conversation, "after")
    await assert_receives(watcher, "after")
    assert await communicator.receive_nothing(timeout=0.2)


# -- logout ---------------------------------------------------------------------------


@in_process
async def test_sec4_logout_closes_that_sessions_socket_and_not_another_sessions(
    owner, conversation
):
    laptop = await sync_to_async(logged_in_browser)(owner)
    phone = await sync_to_async(logged_in_browser)(owner)
    on_laptop, laptop_ok, _ = await connect(conversation, cookie=cookie_of(laptop))
    on_phone, phone_ok, _ = await connect(conversation, cookie=cookie_of(phone))
    assert laptop_ok and phone_ok
    await post(conversation, "before")
    for socket in (on_laptop, on_phone):
        await assert_receives(socket, "before")

    response = await sync_to_async(laptop.post)("/accounts/logout/")
    assert response.status_code == 302
    await assert_closed_and_silent(on_laptop, conversation, on_phone)

    # Reconnecting with the logged-out session is refused as well.
    again, _, _ = await connect(conversation, cookie=cookie_of(laptop))
    assert await closed_with(again) == 4403
    for socket in (on_laptop, on_phone, again):
        await socket.disconnect()


# -- lost group or permission -----------------------------------------------------------


def remove_from_group(auditor, auditors, permission) -> None:
    auditor.groups.remove(auditors)


def remove_from_group_reverse(auditor, auditors, permission) -> None:
    auditors.user_set.remove(auditor)


def clear_users_groups(auditor, auditors, permission) -> None:
    auditor.groups.clear()


def clear_groups_members(auditor, auditors, permission) -> None:
    auditors.user_set.clear()


def remove_permission_from_group(auditor, auditors, permission) -> None:
    auditors.permissions.remove(permission)


def clear_groups_permissions(auditor, auditors, permission) -> None:
    auditors.permissions.set([])


def take_permission_from_every_group(auditor, auditors, permission) -> None:
    permission.group_set.clear()


def delete_group(auditor, auditors, permission) -> None:
    auditors.delete()


def deactivate(auditor, auditors, permission) -> None:
    auditor.is_active = False
    auditor.save()


def change_password(auditor, auditors, permission) -> None:
    # A new password invalidates the user's sessions (the session auth hash).
    auditor.set_password("a-new-password-1")
    auditor.save()


def delete_user(auditor, auditors, permission) -> None:
    auditor.delete()


@pytest.mark.parametrize(
    "revoke",
    [
        remove_from_group,
        remove_from_group_reverse,
        clear_users_groups,
        clear_groups_members,
        remove_permission_from_group,
        clear_groups_permissions,
        take_permission_from_every_group,
        delete_group,
        deactivate,
        change_password,
        delete_user,
    ],
)
@in_process
async def test_sec4_auditor_who_loses_access_is_closed_while_the_owner_stays(
    owner, conversation, auditor, auditors, view_permission, revoke: Callable
):
    on_owner, owner_ok, _ = await connect(conversation, owner)
    on_auditor, auditor_ok, _ = await connect(conversation, auditor)
    assert owner_ok and auditor_ok
    await post(conversation, "before")
    for socket in (on_owner, on_auditor):
        await assert_receives(socket, "before")

    await sync_to_async(revoke)(auditor, auditors, view_permission)
    await assert_closed_and_silent(on_auditor, conversation, on_owner)
    for socket in (on_owner, on_auditor):
        await socket.disconnect()


def remove_user_permission(user, permission) -> None:
    user.user_permissions.remove(permission)


def remove_user_permission_reverse(user, permission) -> None:
    permission.user_set.remove(user)


def clear_permission_users(user, permission) -> None:
    permission.user_set.clear()


@pytest.mark.parametrize(
    "revoke", [remove_user_permission, remove_user_permission_reverse, clear_permission_users]
)
@in_process
async def test_sec4_user_who_loses_view_permission_is_closed(
    owner, conversation, view_permission, revoke: Callable
):
    viewer = await sync_to_async(User.objects.create_user)("viewer", password="viewer-pass-1")
    await sync_to_async(viewer.user_permissions.add)(view_permission)
    on_owner, _, _ = await connect(conversation, owner)
    on_viewer, viewer_ok, _ = await connect(conversation, viewer)
    assert viewer_ok

    await sync_to_async(revoke)(viewer, view_permission)
    await assert_closed_and_silent(on_viewer, conversation, on_owner)
    for socket in (on_owner, on_viewer):
        await socket.disconnect()


@in_process
async def test_sec4_a_recheck_that_still_allows_keeps_the_socket_open(
    owner, conversation, auditor, auditors, view_permission
):
    """Leaving one group re-checks; the permission held directly still allows."""
    await sync_to_async(auditor.user_permissions.add)(view_permission)
    on_auditor, _, _ = await connect(conversation, auditor)
    await sync_to_async(auditor.groups.remove)(auditors)
    # The re-check is queued ahead of this frame: the frame arriving proves it passed.
    await post(conversation, "still allowed")
    await assert_receives(on_auditor, "still allowed")
    await on_auditor.disconnect()


# -- the periodic backstop --------------------------------------------------------------


def deactivate_without_signal(auditor) -> None:
    User.objects.filter(pk=auditor.pk).update(is_active=False)


def end_session_without_signal(auditor) -> None:
    """As an expired session cleared by `clearsessions`: no logout signal."""
    for session in Session.objects.all():
        if session.get_decoded().get(SESSION_KEY) == str(auditor.pk):
            session.delete()


@pytest.mark.parametrize("revoke", [deactivate_without_signal, end_session_without_signal])
@in_process
async def test_sec4_periodic_recheck_closes_what_no_signal_announced(
    owner, conversation, auditor, settings, revoke: Callable
):
    settings.CHATUI_WS_RECHECK_SECONDS = 0.05
    on_owner, _, _ = await connect(conversation, owner)
    on_auditor, _, _ = await connect(conversation, auditor)
    await sync_to_async(revoke)(auditor)
    await assert_closed_and_silent(on_auditor, conversation, on_owner)
    for socket in (on_owner, on_auditor):
        await socket.disconnect()


# -- through the real server ---------------------------------------------------------------


def log_out(server, cookie: str) -> None:
    """Press the page's "Log out" button (a CSRF-protected POST form)."""
    name, value = cookie.split("=", 1)
    with httpx.Client(base_url=server.url, cookies={name: value}, timeout=30) as browser:
        page = browser.get("/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token, "no logout form on the page"
        done = browser.post("/accounts/logout/", data={"csrfmiddlewaretoken": token.group(1)})
        assert done.status_code == 302


def test_sec4_logout_on_the_real_server_closes_that_sessions_socket(chatui_server):
    """The signal fires in daphne's sync thread, the close goes through its channel layer."""
    conversation_id = chatui_server.new_conversation("logout")
    laptop, phone = chatui_server.session_cookie(), chatui_server.session_cookie()

    async def scenario() -> None:
        sockets = [
            await RawWebSocket.connect(
                chatui_server.port,
                f"/ws/conversations/{conversation_id}/",
                cookie=cookie,
                origin=chatui_server.url,
            )
            for cookie in (laptop, phone)
        ]
        await asyncio.to_thread(log_out, chatui_server, laptop)
        with pytest.raises(WebSocketClosed) as closed:
            await asyncio.wait_for(sockets[0].recv(), 30)
        assert closed.value.code == 4403
        await asyncio.to_thread(
            chatui_server.post_events, conversation_id, {"type": "user.message", "content": "on"}
        )
        assert ">on<" in await asyncio.wait_for(sockets[1].recv(), 30)
        for socket in sockets:
            await socket.close()

    asyncio.run(scenario())


@in_process
async def test_s21_a_recheck_does_not_queue_behind_channels_database_thread(
    owner, conversation, auditor, settings
):
    """After a Redis outage every socket of a process re-checks its access before it
    catches up (docs/SCALING.md#whole-replays). The re-check reads on the handshake
    threads: with Channels' one database thread taken, a socket that lost access is
    still closed."""
    settings.CHATUI_WS_RECHECK_SECONDS = 0.3
    on_auditor, _, _ = await connect(conversation, auditor)
    release = threading.Event()
    busy = asyncio.ensure_future(sync_to_async(release.wait, thread_sensitive=True)())
    try:
        await sync_to_async(deactivate_without_signal, thread_sensitive=False)(auditor)
        output = await on_auditor.receive_output(timeout=5)
        assert output == {"type": "websocket.close", "code": 4403}
        assert not busy.done()  # closed while the thread was still taken
    finally:
        release.set()
        await busy
    await on_auditor.disconnect()
