"""Auditors' notes (docs/sharing.md#notes, docs/events.md#notes): `audit.note` events
through ingest, posted from the admin, the page and the API; refused to runtimes (400),
to strangers (404) and to non-auditors (403); shown escaped with one partial; filtered
in the admin; carried by the exports."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from chatui.ingest.notes import add_note
from chatui.ingest.service import reproject
from chatui.ingest.values import EventError
from chatui.models import Conversation, Event, Note
from chatui.read.exporters import export_events, export_messages, export_otlp

from .conftest import HOSTILE, api_for, client_for

pytestmark = pytest.mark.django_db


def notes_url(conversation: Conversation) -> str:
    return f"/api/v1/conversations/{conversation.pk}/notes"


def test_notes_api_posts_an_audit_note_event_through_ingest(shared, auditor):
    answer = api_for(auditor).post(
        notes_url(shared),
        {"target": {"tool_call_id": "c1"}, "text": "Wrong host.", "label": "wrong_result"},
    )
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["target"] == {"tool_call_id": "c1"} and body["author"] == "audra"
    event = Event.objects.get(conversation=shared, type="audit.note")
    assert event.seq == body["seq"] == shared.__class__.objects.get(pk=shared.pk).last_seq
    assert event.payload == {
        "target": {"tool_call_id": "c1"},
        "text": "Wrong host.",
        "label": "wrong_result",
        "author": "audra",
    }
    assert Note.objects.get(conversation=shared).label == "wrong_result"


def test_notes_a_correction_refers_to_an_earlier_note_and_edits_nothing(shared, auditor):
    first = add_note(shared, auditor, {"target": {"run_id": "r1"}, "text": "Looks fine."})
    second = add_note(
        shared,
        auditor,
        {
            "target": {"run_id": "r1"},
            "text": "Not fine.",
            "label": "unsafe",
            "refers_to": first.seq,
        },
    )
    assert second.refers_to == first.seq
    assert Note.objects.get(pk=first.pk).text == "Looks fine."
    with pytest.raises(EventError) as refused:
        add_note(shared, auditor, {"target": {"run_id": "r1"}, "text": "x", "refers_to": 999})
    assert refused.value.field == "refers_to"


def test_notes_a_runtime_posting_audit_note_gets_400_naming_the_type(shared, api):
    answer = api.post_events(
        shared, {"type": "audit.note", "target": {"run_id": "r1"}, "text": "I am fine, trust me"}
    )
    assert answer.status_code == 400
    assert answer.json()["field"] == "type" and "'audit.note'" in answer.json()["error"]
    assert not Event.objects.filter(conversation=shared, type="audit.note").exists()


def test_notes_someone_who_cannot_see_the_conversation_gets_404(shared, other_user):
    answer = api_for(other_user).post(
        notes_url(shared), {"target": {"run_id": "r1"}, "text": "hello"}
    )
    assert answer.status_code == 404
    page = client_for(other_user).post(
        f"/c/{shared.pk}/notes", {"target": "run_id:r1", "text": "hello"}
    )
    assert page.status_code == 404
    assert not Note.objects.exists()


def test_notes_the_owner_without_chatui_annotate_gets_403(shared, user, api):
    answer = api.post(notes_url(shared), {"target": {"run_id": "r1"}, "text": "my own"})
    assert answer.status_code == 403 and "chatui.annotate" in answer.json()["error"]
    page = client_for(user).post(f"/c/{shared.pk}/notes", {"target": "run_id:r1", "text": "x"})
    assert page.status_code == 403
    assert not Note.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"target": {"tool_call_id": "nope"}, "text": "x"}, "target.tool_call_id"),
        ({"target": {"run_id": "r1", "message_id": "u1"}, "text": "x"}, "target"),
        ({"target": {"run_id": "r1"}, "text": ""}, "text"),
        ({"target": {"run_id": "r1"}, "text": "x", "label": "great"}, "label"),
        ({"target": {"run_id": "r1"}, "text": "x", "author": "someone-else"}, "author"),
    ],
)
def test_notes_bad_input_is_a_400_naming_the_field_and_writes_nothing(shared, auditor, body, field):
    last_seq = shared.last_seq
    answer = api_for(auditor).post(notes_url(shared), body)
    assert answer.status_code == 400, answer.content
    assert answer.json()["field"] == field
    assert Conversation.objects.get(pk=shared.pk).last_seq == last_seq


def test_notes_posted_from_the_page_by_an_auditor(shared, auditor):
    client = client_for(auditor)
    page = client.get(shared.get_absolute_url()).content.decode()
    assert "data-note-form" in page and 'value="tool_call_id:c1"' in page
    answer = client.post(
        f"/c/{shared.pk}/notes", {"target": "tool_call_id:c1", "text": "Checked.", "label": "ok"}
    )
    assert answer.status_code == 302
    note = Note.objects.get(conversation=shared)
    assert (note.target_kind, note.target_id, note.label) == ("tool_call_id", "c1", "ok")


def test_notes_posted_from_the_admin_audit_page(shared, auditor):
    client = client_for(auditor)
    page = client.get(f"/admin/chatui/conversation/{shared.pk}/change/").content.decode()
    # The form element stands outside the admin's change form (forms do not nest).
    assert page.index('id="note-form"') < page.index('id="conversation_form"')
    answer = client.post(
        f"/admin/chatui/conversation/{shared.pk}/notes/",
        {"target": "run_id:r1", "text": "Run reviewed.", "label": "needs_review"},
    )
    assert answer.status_code == 302
    assert Note.objects.get(conversation=shared).label == "needs_review"


def test_notes_hostile_text_is_escaped_on_the_page_and_in_the_admin(shared, auditor, user):
    add_note(
        shared, auditor, {"target": {"tool_call_id": "c1"}, "text": HOSTILE, "label": "unsafe"}
    )
    for client, url in (
        (client_for(auditor), f"/admin/chatui/conversation/{shared.pk}/change/"),
        (client_for(user), shared.get_absolute_url()),  # the owner, read-only
    ):
        html = client.get(url).content.decode()
        section = html[html.index('id="notes"') :]
        assert "<script>alert(&#x27;xss-note&#x27;)</script>" not in section
        assert "<script>alert(" not in section and "<img src=x" not in section
        assert "&lt;script&gt;alert(&#x27;xss-note&#x27;)&lt;/script&gt;" in section
        assert 'data-note-label="unsafe"' in section


def test_notes_shown_to_the_owner_unless_the_setting_is_off(shared, auditor, user, settings):
    add_note(shared, auditor, {"target": {"run_id": "r1"}, "text": "visible-note-text"})
    owner = client_for(user)
    assert "visible-note-text" in owner.get(shared.get_absolute_url()).content.decode()
    settings.CHATUI_NOTES_VISIBLE_TO_OWNER = False
    page = owner.get(shared.get_absolute_url()).content.decode()
    assert "visible-note-text" not in page and 'id="notes"' not in page


def test_notes_admin_filters_has_notes_and_by_label(shared, auditor, user):
    quiet = Conversation.objects.create(owner=user, title="Quiet one")
    add_note(shared, auditor, {"target": {"run_id": "r1"}, "text": "bad", "label": "unsafe"})
    client = client_for(auditor)

    def titles(query: str) -> tuple[bool, bool]:
        html = client.get("/admin/chatui/conversation/?" + query).content.decode()
        return "Deploy" in html, "Quiet one" in html

    assert titles("has_notes=yes") == (True, False)
    assert titles("has_notes=no") == (False, True)
    assert titles("note_label=unsafe") == (True, False)
    assert titles("note_label=ok") == (False, False)
    assert quiet.pk


def test_notes_are_in_every_export(shared, auditor):
    note = add_note(
        shared, auditor, {"target": {"tool_call_id": "c1"}, "text": "Leaked.", "label": "unsafe"}
    )
    assert export_messages(shared)["notes"] == [
        {
            "seq": note.seq,
            "target": {"tool_call_id": "c1"},
            "text": "Leaked.",
            "label": "unsafe",
            "refers_to": None,
            "author": "audra",
            "at": note.at.isoformat(),
        }
    ]
    assert [e["type"] for e in export_events(shared)][-1] == "audit.note"
    spans = export_otlp(shared)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    tool_span = next(span for span in spans if span["name"].startswith("execute_tool"))
    evaluation = [e for e in tool_span.get("events", []) if e["name"] == "gen_ai.evaluation.result"]
    assert len(evaluation) == 1
    attributes = {a["key"]: a["value"] for a in evaluation[0]["attributes"]}
    assert attributes["gen_ai.evaluation.score.label"] == {"stringValue": "unsafe"}
    assert json.dumps(attributes).count("Leaked.") == 1


def test_notes_survive_reprojection_once_each(shared, auditor):
    add_note(shared, auditor, {"target": {"run_id": "r1"}, "text": "one"})
    reproject(shared)
    assert Note.objects.filter(conversation=shared).count() == 1


def test_notes_list_by_api_for_the_owner(shared, auditor, api):
    add_note(shared, auditor, {"target": {"message_id": "u1"}, "text": "Polite."})
    answer = api.get(notes_url(shared))
    assert answer.status_code == 200
    assert [n["text"] for n in answer.json()["notes"]] == ["Polite."]


def test_notes_unauthenticated_page_post_redirects_to_login(shared):
    answer = Client().post(f"/c/{shared.pk}/notes", {"target": "run_id:r1", "text": "x"})
    assert answer.status_code == 302 and "login" in answer["Location"]
    assert not Note.objects.exists()


def test_notes_time_travel_and_replay_past_a_note_still_render(shared, auditor, user):
    """Moments are projected in scratch tables (chatui.read.replay): a note among the
    events replayed projects there as in the live tables."""
    note = add_note(shared, auditor, {"target": {"run_id": "r1"}, "text": "checked"})
    owner = client_for(user)
    for seq in (note.seq, note.seq - 1):
        answer = owner.get(shared.get_absolute_url(), {"at": seq})
        assert answer.status_code == 200
        assert "Deploy it" in answer.content.decode()
    assert owner.get(f"/c/{shared.pk}/replay").status_code == 200
    assert Note.objects.filter(conversation=shared).count() == 1


def test_notes_show_beside_their_tool_call_in_the_admin_escaped(shared, auditor):
    add_note(
        shared, auditor, {"target": {"tool_call_id": "c1"}, "text": HOSTILE, "label": "unsafe"}
    )
    html = client_for(auditor).get(f"/admin/chatui/conversation/{shared.pk}/change/")
    html = html.content.decode()
    row = html[html.index("data-audit-tool-call=") :]
    row = row[: row.index("</tr>")]
    assert "data-target-notes" in row and 'data-note-label="unsafe"' in row
    assert "<script>" not in row and "&lt;script&gt;" in row
