"""Bearer tokens found valid are trusted for a few seconds without a lookup
(chatui.web.tokens, docs/PERFORMANCE.md#p2), and taking access away still ends it (SEC5)."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatui.models import ApiToken, Conversation
from chatui.web.tokens import tokens
from tests.support.api_client import ApiClient

EVENT = {"type": "user.message", "content": "hi"}


@pytest.fixture(autouse=True)
def empty_cache():
    tokens.clear()
    yield
    tokens.clear()


def token_lookups(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if 'FROM "chatui_apitoken"' in q["sql"]]


def test_p2_a_valid_token_is_looked_up_once_within_its_lifetime(api, conversation):
    with CaptureQueriesContext(connection) as queries:
        assert api.post_events(conversation, EVENT).status_code == 200
        assert api.post_events(conversation, EVENT).status_code == 200
        assert api.get("/api/v1/conversations").status_code == 200
    assert len(token_lookups(queries)) == 1


def test_a_wrong_token_is_looked_up_every_time(db, conversation):
    wrong = ApiClient("chatui_not-a-token")
    with CaptureQueriesContext(connection) as queries:
        assert wrong.post_events(conversation, EVENT).status_code == 401
        assert wrong.post_events(conversation, EVENT).status_code == 401
    assert len(token_lookups(queries)) == 2
    assert len(tokens) == 0


def test_a_zero_lifetime_looks_the_token_up_on_every_request(settings, api, conversation):
    settings.CHATUI_TOKEN_CACHE_SECONDS = 0
    with CaptureQueriesContext(connection) as queries:
        api.post_events(conversation, EVENT)
        api.post_events(conversation, EVENT)
    assert len(token_lookups(queries)) == 2


def test_sec5_a_deleted_token_is_refused_at_once(user, api, conversation):
    assert api.post_events(conversation, EVENT).status_code == 200
    ApiToken.objects.get(user=user).delete()
    assert api.post_events(conversation, EVENT).status_code == 401


def test_sec5_a_deactivated_users_token_is_refused_at_once(user, api, conversation):
    assert api.post_events(conversation, EVENT).status_code == 200
    user.is_active = False
    user.save()
    assert api.post_events(conversation, EVENT).status_code == 401


def test_sec5_a_deleted_users_token_is_refused_at_once(db):
    doomed = get_user_model().objects.create_user("doomed")
    _, raw = ApiToken.issue(doomed)
    client = ApiClient(raw)
    assert client.get("/api/v1/conversations").status_code == 200
    doomed.delete()
    assert client.get("/api/v1/conversations").status_code == 401


def test_sec5_losing_ingest_any_is_seen_at_once(user, other_user):
    theirs = Conversation.objects.create(owner=other_user)
    permission = Permission.objects.get(codename="ingest_any")
    user.user_permissions.add(permission)
    _, raw = ApiToken.issue(user)
    client = ApiClient(raw)
    assert client.post_events(theirs, EVENT).status_code == 200
    user.user_permissions.remove(permission)
    assert client.post_events(theirs, EVENT).status_code == 404


def test_sec5_a_group_losing_ingest_any_is_seen_at_once(user, other_user):
    theirs = Conversation.objects.create(owner=other_user)
    writers = Group.objects.create(name="writers")
    writers.permissions.add(Permission.objects.get(codename="ingest_any"))
    user.groups.add(writers)
    _, raw = ApiToken.issue(user)
    client = ApiClient(raw)
    assert client.post_events(theirs, EVENT).status_code == 200
    writers.permissions.clear()
    assert client.post_events(theirs, EVENT).status_code == 404


def test_sec5_a_change_no_signal_announces_is_seen_within_the_cache_lifetime(
    settings, user, api, conversation
):
    """A queryset `.update()` (or another process's change) sends no signal here: the
    cached token is trusted until its lifetime ends, then looked up again."""
    settings.CHATUI_TOKEN_CACHE_SECONDS = 0.2
    assert api.post_events(conversation, EVENT).status_code == 200
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    time.sleep(0.25)
    assert api.post_events(conversation, EVENT).status_code == 401
