"""G21 attachments (docs/rendering.md#g21): an MCP result's binary parts stored once at
ingest, content-addressed, served only to the conversation's readers as the type their
bytes are, never as data: URIs in the page; the log still verifies (docs/events.md#mcp-results)."""

from __future__ import annotations

import hashlib
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from chatui.ingest import sharing
from chatui.ingest.erasure import erase_content
from chatui.ingest.service import ingest
from chatui.models import Attachment, AttachmentUse, Conversation, Event
from chatui.read.verify import verify
from tests.support.rich import HTML_AS_PNG, SVG, b64, mcp_result, tiny_png


def _mcp_call(call_id: str, result: dict) -> list[dict]:
    return [
        {"type": "user.message", "content": "chart it"},
        {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": "chart", "args": {}},
        {"type": "agent.tool.completed", "tool_call_id": call_id, "result": result},
    ]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def owner_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_g21_binary_parts_are_stored_once_and_the_log_keeps_references(conversation, user):
    ingest(conversation, _mcp_call("a", mcp_result()))
    other = Conversation.objects.create(owner=user, title="again")
    ingest(other, _mcp_call("b", mcp_result()))
    # The same bytes in two conversations (and twice in none): one row each.
    assert Attachment.objects.filter(pk=_sha(tiny_png())).count() == 1
    assert Attachment.objects.count() == 5  # png, svg, html, mp3, blob
    assert AttachmentUse.objects.filter(attachment_id=_sha(tiny_png())).count() == 2
    completed = Event.objects.get(conversation=conversation, type="agent.tool.completed")
    stored = completed.payload["result"]["content"][1]
    assert "data" not in stored and stored["attachment"]["sha256"] == _sha(tiny_png())
    assert b64(tiny_png()) not in str(completed.payload)
    assert verify(conversation).ok  # the chain hashes the payload as stored


def test_g21_a_retry_of_the_same_event_is_still_a_duplicate(conversation):
    events = _mcp_call("a", mcp_result())
    for event, n in zip(events, range(3), strict=True):
        event["event_id"] = f"e{n}"
    ingest(conversation, events)
    again = ingest(conversation, events)  # body_hash is of the event as sent
    assert again.duplicates == 3 and again.accepted == 0


def test_g21_attachment_served_to_the_owner_with_its_sniffed_type(conversation, owner_client):
    ingest(conversation, _mcp_call("a", mcp_result()))
    base = f"/c/{conversation.pk}/attachments/"
    png = owner_client.get(base + _sha(tiny_png()))
    assert png.status_code == 200 and png["Content-Type"] == "image/png"
    assert png.content == tiny_png()
    assert png["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in png["Content-Security-Policy"]
    # SVG declared image/png: never inline, a download of octet-stream
    svg = owner_client.get(base + _sha(SVG))
    assert svg["Content-Type"] == "application/octet-stream"
    assert (
        svg["Content-Disposition"].startswith("attachment;")
        and ".svg" in svg["Content-Disposition"]
    )
    # HTML declared image/png: served as what it is to a browser, bytes to download
    html = owner_client.get(base + _sha(HTML_AS_PNG))
    assert html["Content-Type"] == "application/octet-stream"
    assert html["Content-Disposition"].startswith("attachment;")
    again = owner_client.get(base + _sha(tiny_png()), HTTP_IF_NONE_MATCH=png["ETag"])
    assert again.status_code == 304


def test_g21_attachment_is_404_to_other_readers(conversation, other_user, owner_client, user):
    ingest(conversation, _mcp_call("a", mcp_result()))
    digest = _sha(tiny_png())
    mallory = Client()
    mallory.force_login(other_user)
    assert mallory.get(f"/c/{conversation.pk}/attachments/{digest}").status_code == 404
    # Their own conversation does not reference these bytes: no oracle by digest either.
    theirs = Conversation.objects.create(owner=other_user, title="mine")
    assert mallory.get(f"/c/{theirs.pk}/attachments/{digest}").status_code == 404
    # Nor does the owner's other conversation.
    empty = Conversation.objects.create(owner=user, title="empty")
    assert owner_client.get(f"/c/{empty.pk}/attachments/{digest}").status_code == 404
    anonymous = Client().get(f"/c/{conversation.pk}/attachments/{digest}")
    assert anonymous.status_code == 302  # to the login page, as every page


def test_g21_auditor_reads_attachments(conversation):
    ingest(conversation, _mcp_call("a", mcp_result()))
    root = Client()
    root.force_login(get_user_model().objects.create_superuser("root", password="root-pass-1"))
    got = root.get(f"/c/{conversation.pk}/attachments/{_sha(tiny_png())}")
    assert got.status_code == 200


def test_g21_page_shows_parts_without_data_uris_or_script(conversation, owner_client):
    ingest(conversation, _mcp_call("a", mcp_result()))
    page = owner_client.get(f"/c/{conversation.pk}/").content.decode()
    transcript = page[page.index('id="transcript"') :]
    images = re.findall(r"<img [^>]*data-attachment[^>]*>", transcript)
    assert len(images) == 1  # the PNG only: the SVG and the HTML are downloads
    assert f'src="/c/{conversation.pk}/attachments/{_sha(tiny_png())}"' in images[0]
    assert "data:" not in transcript
    assert "<script>alert" not in transcript and 'onload="alert' not in transcript
    assert transcript.count("data-attachment") == 5  # img, audio, 3 downloads
    assert 'href="javascript:' not in transcript
    assert 'href="https://example.com/report"' in transcript
    assert "data-mcp-malformed" in transcript


def test_g21_share_link_serves_its_attachments(conversation, user):
    ingest(conversation, _mcp_call("a", mcp_result()))
    _, raw = sharing.create_link(conversation, user)
    anonymous = Client()
    page = anonymous.get(f"/s/{raw}/").content.decode()
    src = f"/s/{raw}/attachments/{_sha(tiny_png())}"
    assert f'src="{src}"' in page
    assert anonymous.get(src).status_code == 200
    _, hidden = sharing.create_link(conversation, user, hide_tool_io=True)
    assert anonymous.get(f"/s/{hidden}/attachments/{_sha(tiny_png())}").status_code == 404
    assert anonymous.get(f"/s/nope/attachments/{_sha(tiny_png())}").status_code == 404


def test_g21_oversized_part_is_not_stored(conversation, settings):
    settings.CHATUI_MAX_ATTACHMENT_BYTES = 100
    big = tiny_png() + bytes(500)
    ingest(conversation, _mcp_call("a", {"content": [{"type": "image", "data": b64(big)}]}))
    assert not Attachment.objects.filter(pk=_sha(big)).exists()
    stored = Event.objects.get(type="agent.tool.completed").payload["result"]["content"][0]
    assert stored["attachment"]["size"] == len(big) and "omitted" in stored["attachment"]


def test_g21_api_events_answer_4xx_never_5xx_for_malformed_parts(api, conversation):
    for result in (
        {"content": [{"type": "image", "data": 12}]},
        {"content": [{"type": "resource", "resource": "x"}], "isError": "yes"},
        {"content": [{"type": "image", "attachment": {"sha256": "../../etc"}}]},
        {"content": [None, [], {"type": None}], "structuredContent": [1, {"a": [2]}]},
    ):
        answer = api.post_events(conversation, _mcp_call("x", result)[1:])
        assert answer.status_code in (200, 201, 202), answer.content
    client = Client()
    client.force_login(conversation.owner)
    assert client.get(f"/c/{conversation.pk}/").status_code == 200


def test_g21_same_parts_on_every_surface(conversation):
    """The page, fragments, the admin, the socket replay and `?at=` show the same parts."""
    from tests.support.render import render_everything

    ingest(conversation, _mcp_call("a", mcp_result()))
    root = Client()
    root.force_login(get_user_model().objects.create_superuser("root", password="root-pass-1"))
    shown = render_everything(root, conversation)
    src = f'src="/c/{conversation.pk}/attachments/{_sha(tiny_png())}"'
    for surface in ("page", "transcript", "earlier", "admin", "replay 0"):
        assert src in shown[surface], surface
        assert shown[surface].count('data-mcp-part="') == 12, surface
        assert "<script>alert" not in shown[surface], surface
    conversation.refresh_from_db()
    at = root.get(f"/c/{conversation.pk}/?at={conversation.last_seq}").content.decode()
    assert src in at and at.count('data-mcp-part="') == 12
    # The exports carry the references, never the base64.
    assert b64(tiny_png()) not in shown["events"] and _sha(tiny_png()) in shown["events"]


def test_v5_erasing_an_mcp_result_deletes_its_bytes_and_keeps_the_proof(
    conversation, user, owner_client
):
    """Erasure (docs/auditing.md#erasing-content) takes an erased result's images and
    files with it: no longer served, and deleted where no other conversation holds them."""
    ingest(conversation, _mcp_call("a", mcp_result()))
    other = Conversation.objects.create(owner=user, title="keeps the png")
    ingest(other, _mcp_call("b", {"content": [{"type": "image", "data": b64(tiny_png()),
                                                "mimeType": "image/png"}]}))  # fmt: skip
    user.user_permissions.add(Permission.objects.get(codename="erase_content"))
    user = get_user_model().objects.get(pk=user.pk)  # permissions read afresh
    completed = Event.objects.get(conversation=conversation, type="agent.tool.completed")
    erase_content(conversation, user, [completed.seq], "a customer's screenshot")

    base = f"/c/{conversation.pk}/attachments/"
    assert owner_client.get(base + _sha(SVG)).status_code == 404
    assert owner_client.get(base + _sha(tiny_png())).status_code == 404
    assert not Attachment.objects.filter(pk=_sha(SVG)).exists()  # nobody else held it
    # The other conversation's copy of the same bytes stays, and is served there.
    assert owner_client.get(f"/c/{other.pk}/attachments/{_sha(tiny_png())}").status_code == 200
    assert not AttachmentUse.objects.filter(conversation=conversation).exists()
    assert verify(conversation).ok


def test_g21_deleting_a_conversation_deletes_the_bytes_no_other_conversation_holds(
    conversation, user
):
    ingest(conversation, _mcp_call("a", mcp_result()))
    other = Conversation.objects.create(owner=user, title="holds the png too")
    ingest(other, _mcp_call("b", {"content": [{"type": "image", "data": b64(tiny_png()),
                                               "mimeType": "image/png"}]}))  # fmt: skip
    assert Attachment.objects.count() == 5

    conversation.delete()

    # The png stays: the other conversation holds it and still serves it.
    assert list(Attachment.objects.values_list("sha256", flat=True)) == [_sha(tiny_png())]
    assert AttachmentUse.objects.filter(conversation=other).count() == 1
    other.delete()
    assert not Attachment.objects.exists()


def test_g21_deleting_the_owner_deletes_their_conversations_attachments(conversation, user):
    ingest(conversation, _mcp_call("a", mcp_result()))
    user.delete()  # the cascade deletes the conversation, and the signal still runs
    assert not Conversation.objects.exists()
    assert not Attachment.objects.exists()
