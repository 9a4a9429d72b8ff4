"""Share links (docs/sharing.md#links): a hashed 128-bit token, an expiry, revocation,
"hide tool inputs and outputs"; an anonymous read-only page with the page's partials —
no secret, no composer, no socket — that 404s once revoked or expired; the API."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from chatui.ingest import sharing
from chatui.ingest.notes import add_note
from chatui.ingest.service import ingest
from chatui.models import Conversation, ShareLink

from .conftest import SECRET, api_for, client_for

pytestmark = pytest.mark.django_db


def shares_url(conversation: Conversation) -> str:
    return f"/api/v1/conversations/{conversation.pk}/shares"


def token_of(url: str) -> str:
    found = re.search(r"/s/([^/]+)/$", url)
    assert found, url
    return found.group(1)


def test_shares_api_creates_a_link_storing_only_the_tokens_hash(shared, api):
    answer = api.post(shares_url(shared), {"expires_in_days": 3})
    assert answer.status_code == 201, answer.content
    body = answer.json()
    token = token_of(body["url"])
    link = ShareLink.objects.get(pk=body["id"])
    assert link.token_hash == hashlib.sha256(token.encode()).hexdigest()
    # 128 random bits, and the token itself is nowhere in the row.
    assert len(token) >= 22
    assert all(token not in str(value) for value in vars(link).values())
    expected = timezone.now() + timedelta(days=3)
    assert abs((link.expires_at - expected).total_seconds()) < 60
    listed = api.get(shares_url(shared)).json()["shares"]
    assert [row["id"] for row in listed] == [link.pk]
    assert token not in str(listed)


def test_shares_default_expiry_is_seven_days(shared, api):
    link = ShareLink.objects.get(pk=api.post(shares_url(shared), {}).json()["id"])
    expected = timezone.now() + timedelta(days=7)
    assert abs((link.expires_at - expected).total_seconds()) < 60


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"expires_in_days": 0}, "expires_in_days"),
        ({"expires_in_days": 366}, "expires_in_days"),
        ({"expires_in_days": "7"}, "expires_in_days"),
        ({"hide_tool_io": "yes"}, "hide_tool_io"),
        ({"token": "mine"}, "token"),
    ],
)
def test_shares_bad_input_is_a_400_naming_the_field(shared, api, body, field):
    answer = api.post(shares_url(shared), body)
    assert answer.status_code == 400 and answer.json()["field"] == field
    assert not ShareLink.objects.exists()


def test_shares_a_stranger_gets_404_and_cannot_revoke(shared, api, other_user):
    stranger = api_for(other_user)
    assert stranger.post(shares_url(shared), {}).status_code == 404
    link_id = api.post(shares_url(shared), {}).json()["id"]
    answer = stranger.client.delete(f"/api/v1/shares/{link_id}", headers=stranger.headers)
    assert answer.status_code == 404
    assert ShareLink.objects.get(pk=link_id).revoked_at is None


def test_shares_anonymous_page_shows_the_transcript_without_secret_composer_or_socket(shared, api):
    token = token_of(api.post(shares_url(shared), {}).json()["url"])
    answer = Client().get(f"/s/{token}/")
    assert answer.status_code == 200
    html = answer.content.decode()
    assert 'id="transcript"' in html and "Deploy it" in html and "run_cmd" in html
    assert SECRET not in html and "••••9876" in html  # masked (T3)
    assert "result-only-text" in html  # tool output is shown unless hidden
    assert "ws-connect" not in html and "/ws/" not in html
    assert 'id="composer"' not in html and "approval-form" not in html
    assert 'id="notes"' not in html and 'id="shares"' not in html and 'id="rail"' not in html
    assert answer["Referrer-Policy"] == "no-referrer" and answer["Cache-Control"] == "no-store"
    assert ShareLink.objects.get().open_count == 1


def test_shares_hide_tool_io_shows_calls_and_outcomes_only(shared, api):
    # A call with arguments and no result text: its entry, cached as the full page shows
    # it, has the same content as the hidden one.
    ingest(
        shared,
        [
            {
                "type": "agent.tool.started",
                "tool_call_id": "c2",
                "tool_name": "read_file",
                "args": {"path": "/etc/args-two-text"},
            },
            {"type": "agent.tool.completed", "tool_call_id": "c2"},
            {"type": "agent.tool.started", "tool_call_id": "c3", "tool_name": "fetch"},
            {"type": "agent.tool.completed", "tool_call_id": "c3", "error": "error-only-text"},
        ],
    )
    token = token_of(api.post(shares_url(shared), {"hide_tool_io": True}).json()["url"])
    full = client_for(shared.owner).get(shared.get_absolute_url()).content.decode()
    assert "args-two-text" in full  # now in the presenters' cache of finished entries
    html = Client().get(f"/s/{token}/").content.decode()
    assert "run_cmd" in html and "read_file" in html and 'data-status="success"' in html
    assert 'data-status="error"' in html
    for text in ("result-only-text", "args-only-text", "args-two-text", "error-only-text", "9876"):
        assert text not in html, text


def test_shares_a_revoked_link_is_404(shared, api):
    body = api.post(shares_url(shared), {}).json()
    token = token_of(body["url"])
    assert Client().get(f"/s/{token}/").status_code == 200
    answer = api.client.delete(f"/api/v1/shares/{body['id']}", headers=api.headers)
    assert answer.status_code == 204
    assert Client().get(f"/s/{token}/").status_code == 404


def test_shares_an_expired_link_is_404(shared, user):
    link, token = sharing.create_link(shared, user, expires_in_days=1)
    assert Client().get(f"/s/{token}/").status_code == 200
    ShareLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert Client().get(f"/s/{token}/").status_code == 404
    assert Client().get("/s/not-a-token/").status_code == 404


def test_shares_the_link_opens_no_other_page(shared, user):
    _, token = sharing.create_link(shared, user)
    anonymous = Client()
    assert anonymous.get(f"/s/{token}/").status_code == 200
    for url in (shared.get_absolute_url(), f"/c/{shared.pk}/transcript", "/"):
        assert anonymous.get(url).status_code == 302  # to the login page


def test_shares_owner_creates_and_revokes_on_the_page(shared, user, other_user):
    owner = client_for(user)
    created = owner.post(f"/c/{shared.pk}/shares", {"expires_in_days": "2", "hide_tool_io": "on"})
    assert created.status_code == 200
    token = token_of(re.search(r'value="([^"]+/s/[^"]+/)"', created.content.decode()).group(1))
    link = ShareLink.objects.get()
    assert link.hide_tool_io and link.created_by == user
    page = owner.get(shared.get_absolute_url()).content.decode()
    assert f'data-share-link="{link.pk}"' in page and token not in page
    # Someone else cannot revoke it from their page.
    client_for(other_user).post(f"/c/{shared.pk}/shares/{link.pk}/revoke")
    assert ShareLink.objects.get().revoked_at is None
    assert owner.post(f"/c/{shared.pk}/shares/{link.pk}/revoke").status_code == 302
    assert Client().get(f"/s/{token}/").status_code == 404


def test_shares_an_auditor_may_share_and_the_admin_lists_every_link(shared, auditor, user):
    sharing.create_link(shared, user)
    assert api_for(auditor).post(shares_url(shared), {}).status_code == 201
    admin = client_for(auditor)
    html = admin.get("/admin/chatui/sharelink/").content.decode()
    assert html.count('class="field-open_count"') == 2


def test_shares_page_escapes_hostile_text(user, auditor):
    hostile = Conversation.objects.create(owner=user, title="<script>alert('t')</script>")
    ingest(hostile, [{"type": "user.message", "content": "<img src=x onerror=alert(1)>"}])
    _, token = sharing.create_link(hostile, user)
    html = Client().get(f"/s/{token}/").content.decode()
    assert "<script>alert('t')" not in html and "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert add_note  # notes are never on a shared page (test above)
