"""SEC5 with one read of the conversation per event (docs/PERFORMANCE.md#p2): the events POST leaves
the ownership check to `ingest`, which makes it on the row it locks, and refuses
exactly as the view's own read did — 404, nothing written."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatui.models import ApiToken, Conversation, Event, Message
from chatui.read import selectors
from tests.support.api_client import ApiClient

EVENT = {"type": "user.message", "content": "hello"}
NOT_FOUND = {"error": "conversation not found"}


def conversation_reads(captured: CaptureQueriesContext) -> int:
    return sum(
        query["sql"].startswith("SELECT") and 'FROM "chatui_conversation"' in query["sql"]
        for query in captured.captured_queries
    )


def nothing_written(conversation: Conversation) -> bool:
    return not Event.objects.filter(conversation=conversation).exists() and not (
        Message.objects.filter(conversation=conversation).exists()
    )


def test_p2_an_owners_event_reads_its_conversation_once(api, conversation):
    assert api.post_events(conversation, EVENT).status_code == 200
    with CaptureQueriesContext(connection) as captured:
        response = api.post_events(conversation, {**EVENT, "content": "again"})
    assert response.status_code == 200, response.content
    assert conversation_reads(captured) == 1
    assert Event.objects.filter(conversation=conversation).count() == 2


def test_sec5_ingest_refuses_a_conversation_believed_the_posters_but_not(api, user, other_user):
    """What this process remembers of owners is only a shortcut: the row decides."""
    theirs = Conversation.objects.create(owner=other_user)
    selectors._owners.remember(theirs.pk, user.pk)  # as if wrongly remembered
    response = api.post_events(theirs, EVENT)
    assert (response.status_code, response.json()) == (404, NOT_FOUND)
    assert nothing_written(theirs)


def test_sec5_a_bad_body_to_a_refused_conversation_is_still_404(api, user, other_user):
    theirs = Conversation.objects.create(owner=other_user)
    selectors._owners.remember(theirs.pk, user.pk)
    response = api.post_events(theirs, {"type": "no.such.type"})
    assert (response.status_code, response.json()) == (404, NOT_FOUND)
    assert nothing_written(theirs)


def test_sec5_a_deleted_conversation_is_404_after_its_owner_posted_to_it(api, conversation):
    assert api.post_events(conversation, EVENT).status_code == 200
    pk = conversation.pk
    conversation.delete()
    response = api.post_events(Conversation(pk=pk), EVENT)
    assert (response.status_code, response.json()) == (404, NOT_FOUND)
    assert not Event.objects.filter(conversation_id=pk).exists()


@pytest.mark.parametrize(
    "raw",
    [b'{"type": "user.message", "content": ', b"", b"\xff\xfe not UTF-8", b"[" * 500],
    ids=["not JSON", "empty", "not UTF-8", "too deep"],
)
def test_sec5_a_body_refused_before_ingest_is_404_for_a_conversation_deleted_elsewhere(
    api, conversation, raw
):
    """Deleted by another process, so this one still remembers its owner: the body's
    error must not come first, as it does not when the view reads the row."""
    assert api.post_events(conversation, EVENT).status_code == 200
    pk = conversation.pk
    conversation.delete()
    selectors._owners.remember(pk, conversation.owner_id)  # another process's delete: kept
    response = api.post_events(Conversation(pk=pk), raw=raw)
    assert (response.status_code, response.json()) == (404, NOT_FOUND)
    assert not Event.objects.filter(conversation_id=pk).exists()


def test_sec5_a_refused_body_to_ones_own_conversation_is_still_400(api, conversation):
    assert api.post_events(conversation, EVENT).status_code == 200  # its owner remembered
    response = api.post_events(conversation, raw=b"{not json")
    assert response.status_code == 400
    assert "JSON" in response.json()["error"]
    assert Event.objects.filter(conversation=conversation).count() == 1


def test_sec5_ingest_any_still_posts_to_anothers_conversation(user, other_user):
    theirs = Conversation.objects.create(owner=other_user)
    user.user_permissions.add(Permission.objects.get(codename="ingest_any"))
    _token, raw = ApiToken.issue(user)
    client = ApiClient(raw)
    for content in ("one", "two"):
        assert client.post_events(theirs, {**EVENT, "content": content}).status_code == 200
    assert Event.objects.filter(conversation=theirs).count() == 2


def test_a_conversation_given_unread_loads_what_is_read_of_it(api, user, conversation):
    assert api.post_events(conversation, EVENT).status_code == 200
    given = selectors.conversation_for_writer(user, conversation.pk, checked_by_ingest=True)
    assert given.get_deferred_fields() >= {"title", "last_seq"}  # not read: ingest checks it
    assert (given.title, given.last_seq) == (conversation.title, 1)  # read when asked for
